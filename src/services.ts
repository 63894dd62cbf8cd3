import type { AccountsRepo } from './accounts/repo.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import type { Store } from './store/db.js';
import type { ProjectsRepo } from './catalog/projects.js';
import type { ActivityTracker } from './ingest/activity.js';

/** What route modules and background jobs depend on; built once by the server. */
export interface Services {
  config: Config;
  clock: Clock;
  log: Logger;
  store: Store;
  accounts: AccountsRepo;
  projects: ProjectsRepo;
  /** last_activity_at / last_used_at, written at most once a minute each. */
  activity: ActivityTracker;
}
