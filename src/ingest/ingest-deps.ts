import type { AccountsRepo } from '../accounts/repo.js';
import type { CollectionsRepo } from '../catalog/collections.js';
import type { IngestKeysRepo } from '../catalog/ingest-keys.js';
import type { ProjectsRepo } from '../catalog/projects.js';
import type { SourcesRepo } from '../catalog/sources.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Scheduler } from '../schedule/types.js';
import type { Spool } from '../spool/spool.js';
import type { Store } from '../store/db.js';
import type { PipelineTelemetry } from '../telemetry/pipeline-telemetry.js';
import type { ActivityTracker } from './activity.js';

/** What the ingest front reads and writes (the services bag satisfies it; nothing above ingest). */
export interface IngestDeps {
  config: Config;
  clock: Clock;
  log: Logger;
  store: Store;
  accounts: AccountsRepo;
  projects: ProjectsRepo;
  sources: SourcesRepo;
  ingestKeys: IngestKeysRepo;
  collections: CollectionsRepo;
  activity: ActivityTracker;
  spool: Spool;
  telemetry: PipelineTelemetry;
  scheduler: Scheduler;
}
