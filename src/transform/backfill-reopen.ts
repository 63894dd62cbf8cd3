import type { ViewCatalog } from './view-catalog.js';
import type { ViewRecord, ViewTransformRecord } from './view-records.js';
import type { ViewOutcome } from './view-stage.js';

/**
 * Reopening a completed backfill (docs/views.md, "Backfill"): a file committed after a view's
 * backfill completed may still be the backfill's — one no live batch brought to the view. The
 * transform goes back to `running` with its done list kept, so only the new files run. Both
 * functions stage inside the committing transaction and answer the views reopened (notify them
 * after the commit: the backfiller hears of it).
 */

/**
 * A batch committed without some view (it ran on a worker before the view existed): its
 * collection files are the backfill's of collection views the batch did not run, and its parent
 * view files are the backfill's of views of views it did not run — while no live batch has run
 * them (`live_from_seq` unset).
 */
export function stageReopenForBatch(
  views: ViewCatalog,
  collectionId: string,
  ran: readonly ViewOutcome[],
  now: string,
): string[] {
  const inBatch = new Set(ran.map((o) => o.viewId));
  const wroteFile = new Set(ran.filter((o) => o.status === 'ok' && o.file !== null).map((o) => o.viewId));
  const reopened: string[] = [];
  for (const v of views.liveViewsOf(collectionId)) {
    if (inBatch.has(v.id) || v.view_mode === 'join') continue;
    if (v.parent_view_id !== null && !wroteFile.has(v.parent_view_id)) continue;
    if (stageReopen(views, v, now, (t) => (t.live_from_seq ?? null) === null)) reopened.push(v.id);
  }
  return reopened;
}

/**
 * `viewId` committed a file outside a live batch (its backfill, a join's output): no live batch
 * brings it to the views of that view, so it is their backfill's.
 */
export function stageReopenReaders(views: ViewCatalog, viewId: string, now: string): string[] {
  const reopened: string[] = [];
  for (const id of views.store.idsByRoot(views.store.byId(viewId)?.root_collection_id ?? '')) {
    const v = views.store.byId(id);
    if (!v || v.parent_view_id !== viewId || v.deleted_at !== null || views.destroying.has(v.id)) continue;
    if (stageReopen(views, v, now, () => true)) reopened.push(v.id);
  }
  return reopened;
}

function stageReopen(
  views: ViewCatalog,
  v: ViewRecord,
  now: string,
  when: (t: ViewTransformRecord) => boolean,
): boolean {
  let any = false;
  for (const t of views.store.transformsOf(v.id)) {
    if (t.status !== 'active' || t.transform_script === null || t.backfill_status !== 'completed' || !when(t)) continue;
    void views.store.transforms.put(v.id, {
      ...t,
      backfill_status: 'running',
      backfill_completed_at: null,
      updated_at: now,
    });
    any = true;
  }
  return any;
}
