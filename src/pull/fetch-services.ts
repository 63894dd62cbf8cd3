import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { RecordSink } from '../ingest/record-sink-types.js';
import type { Logger } from '../log.js';
import type { OutboundClient } from '../outbound/types.js';
import type { Scheduler } from '../schedule/types.js';
import type { Store } from '../store/db.js';
import { CheckService } from './check-service.js';
import { Limiter } from './limiter.js';
import { fetchLimits } from './fetch-once.js';
import { PullService } from './pull-service.js';
import { SecretBox } from './secret-box.js';

/** Runs of pulls and checks in flight at once, node-wide (the rest wait their turn, in order). */
export const FETCH_CONCURRENCY = 64;

/**
 * Pulls and checks for the services bag: one secret box (the header key), one limiter shared by
 * both, each with a durable scheduler job per active record (registered by `start`).
 */
export function createFetchServices(deps: {
  store: Store;
  clock: Clock;
  log: Logger;
  config: Config;
  outbound: OutboundClient;
  sink: RecordSink;
  scheduler: Scheduler;
  /** A source by id (catalog), for its deletion state. */
  source: (sourceId: string) => { deleted_at: string | null } | undefined;
  /** The team's status and deletion mark (accounts), for the checks' good standing. */
  team: (teamId: string) => { status: string; deleted_at: string | null } | undefined;
}) {
  const shared = {
    store: deps.store,
    clock: deps.clock,
    log: deps.log,
    outbound: deps.outbound,
    sink: deps.sink,
    scheduler: deps.scheduler,
    box: SecretBox.open(deps.config.dataDir, deps.config.secretKey),
    limiter: new Limiter(FETCH_CONCURRENCY),
    spreadMs: deps.config.fetchSpreadMs,
    limits: fetchLimits(deps.config),
    source: deps.source,
    teamInGoodStanding: (teamId: string) => {
      const team = deps.team(teamId);
      return team !== undefined && team.status === 'active' && team.deleted_at === null;
    },
  };
  return { pulls: new PullService(shared), checks: new CheckService(shared) };
}
