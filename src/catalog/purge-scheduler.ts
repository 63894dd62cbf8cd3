import { destroyCollection, destroyProject, destroySource, destroyTeam, type PurgeDeps } from './purge.js';
import type { AccountsRepo } from '../accounts/repo.js';
import type { Logger } from '../log.js';
import type { ProjectsRepo } from './projects.js';
import type { SourcesRepo } from './sources.js';
import type { CollectionsRepo } from './collections.js';
import type { JobHandle, Scheduler } from '../schedule/types.js';
import { DELETION_RETENTION_MS, TEAM_DELETION_RETENTION_MS } from './timestamps.js';

/** What one purge pass removed permanently (top-level items; their children went with them). */
export interface PurgeResult {
  teams: string[];
  projects: string[];
  sources: string[];
  collections: string[];
  views: string[];
  metrics: string[];
}

function expired(deletedAt: string | null, now: number, retentionMs = DELETION_RETENTION_MS): boolean {
  return deletedAt !== null && now - Date.parse(deletedAt) >= retentionMs;
}

/**
 * What the purge reads and destroys (the services bag satisfies it). Views and metrics purge their
 * own scheduled deletions: only that call is needed of them here.
 */
export interface PurgeJobDeps extends PurgeDeps {
  accounts: PurgeDeps['accounts'] & Pick<AccountsRepo, 'teams'>;
  projects: PurgeDeps['projects'] & Pick<ProjectsRepo, 'table'>;
  sources: PurgeDeps['sources'] & Pick<SourcesRepo, 'table'>;
  collections: PurgeDeps['collections'] & Pick<CollectionsRepo, 'table'>;
  views: { purgeExpired(now: number): Promise<string[]> };
  metrics: { purgeExpired(now: number): Promise<string[]> };
  scheduler: Pick<Scheduler, 'register'>;
  log: Logger;
}

/**
 * Permanently remove every team scheduled for deletion at least 30 days before `now`, and every
 * project, source, collection, view and metric scheduled at least 7 days before (spec: scheduled deletion),
 * with everything beneath. Bigger things first, so what lies beneath goes with them instead of one by one.
 */
export async function purgeExpired(s: PurgeJobDeps, now: number = s.clock.now()): Promise<PurgeResult> {
  const result: PurgeResult = { teams: [], projects: [], sources: [], collections: [], views: [], metrics: [] };
  const teams = [...s.accounts.teams.all()]
    .map((r) => r.value)
    .filter((t) => expired(t.deleted_at, now, TEAM_DELETION_RETENTION_MS));
  for (const team of teams) {
    await destroyTeam(s, team);
    result.teams.push(team.id);
  }
  const projects = [...s.projects.table.all()].map((r) => r.value).filter((p) => expired(p.deleted_at, now));
  for (const project of projects) {
    await destroyProject(s, project);
    result.projects.push(project.id);
  }
  const sources = [...s.sources.table.all()].map((r) => r.value).filter((src) => expired(src.deleted_at, now));
  for (const source of sources) {
    await destroySource(s, source);
    result.sources.push(source.id);
  }
  const collections = [...s.collections.table.all()].map((r) => r.value).filter((c) => expired(c.deleted_at, now));
  for (const collection of collections) {
    await destroyCollection(s, collection);
    result.collections.push(collection.id);
  }
  result.views.push(...(await s.views.purgeExpired(now)));
  result.metrics.push(...(await s.metrics.purgeExpired(now)));
  return result;
}

/** The purge job's name on the scheduler. */
export const PURGE_JOB = 'purge';

/**
 * Register `purgeExpired` on the node's scheduler every `intervalMs` (default one minute). The scheduler
 * never overlaps a run with itself, and its `stop` waits for a pass in progress, so the schema store and
 * spool it cleans are still open when the pass ends.
 */
export function registerPurgeJob(s: PurgeJobDeps, intervalMs = 60_000): JobHandle {
  return s.scheduler.register({
    name: PURGE_JOB,
    schedule: { everyMs: intervalMs },
    run: async () => {
      try {
        const r = await purgeExpired(s);
        const n =
          r.teams.length +
          r.projects.length +
          r.sources.length +
          r.collections.length +
          r.views.length +
          r.metrics.length;
        if (n > 0) s.log.info({ purged: r }, 'purged scheduled deletions');
      } catch (err) {
        s.log.error({ err }, 'purge failed; retrying next interval');
      }
    },
  });
}
