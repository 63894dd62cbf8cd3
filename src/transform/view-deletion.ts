import { renameSync, rmSync } from 'node:fs';
import { iso, type Clock } from '../clock.js';
import { ApiError, notFound } from '../errors.js';
import type { Logger } from '../log.js';
import type { CollectionRecord } from '../catalog/records.js';
import { DELETION_RETENTION_MS, nextUpdatedAt } from '../catalog/timestamps.js';
import type { ViewRecord } from './view-records.js';
import { topologicalOrder, withDependants } from './view-rules.js';
import type { ViewStore } from './view-store.js';

const DELETING_SUFFIX = '.deleting-';

/**
 * Something above views that depends on them (metrics; later drains), registered with
 * `addDependants` so this module needs nothing from above it. Both calls run inside the write
 * transaction that deletes or destroys views.
 */
export interface ViewDependants {
  /** Live dependants that keep `view` from being deleted; each one is named in the 409. */
  blocking(view: ViewRecord): Array<{ id: string; description: string }>;
  /** Stage the destruction of everything depending on `views`; answers what to do after the commit. */
  stageDestroy(views: readonly ViewRecord[]): () => void;
}

/** What the deletion lifecycle uses of the view catalog. */
export interface ViewDeletionDeps {
  store: ViewStore;
  clock: Clock;
  log: Logger;
  /** The directory of a view's output files. */
  viewDir(view: ViewRecord): string;
  /** Tell listeners (after commit) that these views changed. */
  notify(viewIds: Iterable<string>): void;
  /** Live views reading `view` directly. */
  liveDependants(view: ViewRecord): ViewRecord[];
}

/**
 * The end of a view's life: scheduled deletion (hidden, restorable for 7 days), destruction now
 * (force delete, or its collection destroyed) and the purge of views whose 7 days have passed. A
 * view goes with every view reading it, children first, in one transaction, then its files;
 * while that runs it is in `destroying` and the API and the pipeline treat it as gone.
 */
export class ViewDeletion {
  /** Views being destroyed right now: the API and the pipeline treat them as gone. */
  readonly destroying = new Set<string>();
  private readonly dependants: ViewDependants[] = [];

  constructor(private readonly deps: ViewDeletionDeps) {}

  /** Register what depends on views: it blocks their deletion while live and is destroyed with them. */
  addDependants(d: ViewDependants): void {
    this.dependants.push(d);
  }

  /** Schedule a view for deletion (hidden, restorable for 7 days). Live dependants: 409. */
  async scheduleDelete(view: ViewRecord): Promise<ViewRecord> {
    const { store, clock } = this.deps;
    const next = await store.store.transaction(() => {
      const cur = store.get(view.project_id, view.id);
      if (!cur) throw notFound(`View ${view.id}`);
      if (cur.deleted_at) return cur;
      this.assertNoLiveDependants(cur);
      const out: ViewRecord = {
        ...cur,
        deleted_at: iso(clock.now()),
        updated_at: nextUpdatedAt(clock, cur.updated_at),
      };
      store.stageView(out);
      return out;
    });
    this.deps.notify([next.id]);
    return next;
  }

  /**
   * Destroy a view now (force delete) with the views scheduled for deletion that read it; a live
   * dependant answers 409, naming it.
   */
  async destroy(view: ViewRecord): Promise<void> {
    await this.destroyTree(view.project_id, (all) => {
      const cur = all.find((v) => v.id === view.id);
      if (!cur) throw notFound(`View ${view.id}`);
      this.assertNoLiveDependants(cur);
      return [cur];
    });
  }

  /** Destroy every view fed by a collection that is being destroyed, with all views reading them. */
  async destroyReading(collection: Pick<CollectionRecord, 'id' | 'project_id'>): Promise<void> {
    await this.destroyTree(collection.project_id, (all) =>
      all.filter((v) => v.root_collection_id === collection.id || v.collection_id === collection.id),
    );
  }

  /** Permanently remove views scheduled for deletion at least 7 days before `now`; answers their ids. */
  async purgeExpired(now: number): Promise<string[]> {
    const purged: string[] = [];
    for (const { value } of this.deps.store.views.all()) {
      if (value.deleted_at === null || now - Date.parse(value.deleted_at) < DELETION_RETENTION_MS) continue;
      // Dependants of a scheduled view are scheduled too (a live view's inputs are live), so they go along.
      const gone = await this.destroyTree(value.project_id, (all) => all.filter((v) => v.id === value.id));
      if (gone.length > 0) purged.push(value.id); // else it went with a view purged before it
    }
    return purged;
  }

  /**
   * Destroy the views `pick` chooses (from the project's views, read in the write transaction, so
   * no view can start reading them in between) with every view reading them, in one transaction;
   * then their directories. Answers the views destroyed.
   */
  private async destroyTree(projectId: string, pick: (all: ViewRecord[]) => ViewRecord[]): Promise<ViewRecord[]> {
    const { store } = this.deps;
    const { doomed, after } = await store.store.transaction(() => {
      const all = store.list(projectId);
      const seeds = pick(all);
      // Children first, so no moment has a view whose input is gone.
      const out = topologicalOrder(withDependants(seeds, all)).reverse();
      const after = out.length ? this.dependants.map((d) => d.stageDestroy(out)) : [];
      for (const v of out) store.stageRemoval(v);
      return { doomed: out, after };
    });
    for (const v of doomed) this.destroying.add(v.id);
    try {
      for (const done of after) done();
      for (const v of doomed) this.removeDir(v);
      this.deps.notify(doomed.map((v) => v.id));
    } finally {
      for (const v of doomed) this.destroying.delete(v.id);
    }
    return doomed;
  }

  private removeDir(view: ViewRecord): void {
    // Moved aside first: a worker finishing a batch may still write into the directory.
    const dir = this.deps.viewDir(view);
    const aside = `${dir}${DELETING_SUFFIX}${Date.now()}`;
    try {
      renameSync(dir, aside);
    } catch {
      return; // no files yet
    }
    try {
      rmSync(aside, { recursive: true, force: true, maxRetries: 5 });
    } catch (err) {
      this.deps.log.warn({ err, view_id: view.id }, 'files of a destroyed view could not all be removed');
    }
  }

  private assertNoLiveDependants(view: ViewRecord): void {
    const deps = [
      ...this.deps.liveDependants(view).map((d) => ({
        id: d.id,
        description: `${d.view_mode === 'join' ? 'join view' : 'derived view'} ${d.id} ("${d.name}")`,
      })),
      ...this.dependants.flatMap((d) => d.blocking(view)),
    ];
    if (deps.length === 0) return;
    const names = deps.map((d) => d.description).join(', ');
    throw new ApiError(
      'conflict',
      `View ${view.id} is used by ${names}; delete ${deps.length === 1 ? 'it' : 'them'} first`,
      {
        details: deps.map((d) => ({ field: 'params.view_id', message: `is used by ${d.description}` })),
      },
    );
  }
}
