import { iso } from '../clock.js';
import type { CollectionRecord, ProjectRecord, SourceRecord } from './records.js';
import type { TeamRecord } from '../accounts/records.js';
import type { Clock } from '../clock.js';
import type { AccountsRepo } from '../accounts/repo.js';
import type { CollectionsRepo } from './collections.js';
import type { IngestKeysRepo } from './ingest-keys.js';
import type { ProjectsRepo } from './projects.js';
import type { SourcesRepo } from './sources.js';

/**
 * Removes what a collection owns outside its control-plane record (spool entries, Parquet files,
 * schema versions …). The modules that own that data register one on `Services.collectionDestroyers`;
 * every destroyer runs before the record goes, so a crash in between leaves the record to retry from.
 */
export type CollectionDestroyer = (collection: CollectionRecord) => Promise<void>;

/** What the cascade touches (the services bag satisfies it): the catalog below it, and nothing above. */
export interface PurgeDeps {
  clock: Clock;
  accounts: Pick<AccountsRepo, 'destroyTeamAccounts'>;
  projects: Pick<ProjectsRepo, 'update' | 'destroy' | 'list'>;
  sources: Pick<SourcesRepo, 'update' | 'destroy' | 'list'>;
  ingestKeys: Pick<IngestKeysRepo, 'list' | 'destroy'>;
  collections: Pick<CollectionsRepo, 'destroying' | 'update' | 'destroy' | 'list'>;
  collectionDestroyers: readonly CollectionDestroyer[];
  /** last_activity_at bookkeeping (ingest/activity.ts): forgotten with the record. */
  activity: { forget(id: string): Promise<unknown> };
  /** A project's pages and their components (catalog/pages.ts) go with it. */
  pages: { destroyProjectPages(projectId: string): Promise<void> };
}

/**
 * The one cascade behind force delete and the 7-day purge. Each level is first marked scheduled (so
 * ingest stops creating children under it), then its children go, then its own record last: a crash
 * midway leaves a scheduled parent that the purge finishes later.
 */

/**
 * Destroy a collection and everything it holds, now. Marked scheduled first (ingest refuses it from
 * then on, and a crash midway leaves it hidden for the purge to finish, never live with half its
 * data); the destroyers then run in their order — the spool's first, which also fences off a batch
 * in flight (its commit aborts), then the files and schema.
 */
export async function destroyCollection(s: PurgeDeps, collection: CollectionRecord): Promise<void> {
  s.collections.destroying.add(collection.id);
  try {
    if (!collection.deleted_at)
      await s.collections.update(collection.source_id, collection.id, () => ({ deleted_at: iso(s.clock.now()) }));
    for (const destroyer of s.collectionDestroyers) await destroyer(collection);
    await s.collections.destroy(collection);
    await s.activity.forget(collection.id);
  } finally {
    s.collections.destroying.delete(collection.id);
  }
}

/** Destroy a source with its collections and ingest keys, now. */
export async function destroySource(s: PurgeDeps, source: SourceRecord): Promise<void> {
  if (!source.deleted_at)
    await s.sources.update(source.project_id, source.id, () => ({ deleted_at: iso(s.clock.now()) }));
  for (const key of s.ingestKeys.list(source.id)) {
    await s.ingestKeys.destroy(key);
    await s.activity.forget(key.id);
  }
  for (const collection of s.collections.list(source.id)) await destroyCollection(s, collection);
  await s.sources.destroy(source.project_id, source.id);
  await s.activity.forget(source.id);
}

/** Destroy a project and everything beneath it at once (force delete, or the 7-day purge). */
export async function destroyProject(s: PurgeDeps, project: ProjectRecord): Promise<void> {
  if (!project.deleted_at)
    await s.projects.update(project.team_id, project.id, () => ({ deleted_at: iso(s.clock.now()) }));
  for (const source of s.sources.list(project.id)) await destroySource(s, source);
  await s.pages.destroyProjectPages(project.id);
  await s.activity.forget(project.id);
  await s.projects.destroy(project.team_id, project.id);
}

/**
 * Destroy a team scheduled for deletion with everything beneath it: every project (and so every
 * source, collection, ingest key and record), then its API keys, roles and memberships, the team
 * record last. Users are kept. Only the purge calls this, once the team retention has passed.
 */
export async function destroyTeam(s: PurgeDeps, team: TeamRecord): Promise<void> {
  for (const project of s.projects.list(team.id)) await destroyProject(s, project);
  await s.accounts.destroyTeamAccounts(team.id);
}
