import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../clock.js';
import type { CommitParticipant } from '../commit/batch-commit.js';
import type { ViewCatalog } from './view-catalog.js';
import { stageReopenForBatch } from './backfill-reopen.js';
import { removeViewFiles, type ScriptRoute, type ViewOutcome, type ViewTask } from './view-stage.js';
import type { ViewFileManifest, ViewTransformRecord, ViewVersionRecord } from './view-records.js';

/**
 * Views on the commit seam (docs/architecture.md, "The commit"): each view's outcome of a batch is
 * committed with the batch — a file manifest for its output, or the error state of its transform
 * and view — in the spool's transaction. A view's failure never fails the batch.
 */
export function viewCommitParticipant(
  views: ViewCatalog,
  clock: Clock,
): CommitParticipant<{ gone: ViewOutcome[]; changed: string[]; reopened: string[]; wrote: string[] }> {
  return {
    name: 'views',
    stage({ collection, lease, result }) {
      const now = new Date(clock.now()).toISOString();
      const gone: ViewOutcome[] = [];
      const changed: string[] = [];
      const wrote: string[] = [];
      const reopened = stageReopenForBatch(views, collection.id, result.views, now);
      for (const o of result.views) {
        const view = views.store.byId(o.viewId);
        const transform = view ? views.store.transforms.get(view.id, o.transformId) : undefined;
        // Deleted (or its transform replaced) while the batch ran: its output goes with it.
        if (!view || view.deleted_at !== null || views.destroying.has(view.id) || !transform) {
          gone.push(o);
          continue;
        }
        if (o.status === 'ok') {
          if (o.file) {
            const m: ViewFileManifest = {
              id: o.file.path,
              view_id: view.id,
              first_seq: lease.firstSeq,
              last_seq: lease.lastSeq,
              rows: o.file.rows,
              bytes: o.file.bytes,
              min_ts: o.file.minTs,
              max_ts: o.file.maxTs,
              created_at: now,
              origin: 'batch',
            };
            void views.store.files.put(view.id, m);
            wrote.push(view.id);
          }
          const failures = { ...(transform.coercion_failures ?? {}) };
          for (const [k, n] of Object.entries(o.counts.failed)) failures[k] = (failures[k] ?? 0) + n;
          void views.store.transforms.put(view.id, {
            ...transform,
            coercion_failures: failures,
            rows_written: (transform.rows_written ?? 0) + o.rows,
            live_from_seq: Math.min(transform.live_from_seq ?? Infinity, lease.firstSeq),
            updated_at: now,
          });
          if (o.inferredSchema && view.output_schema.length === 0 && o.inferredSchema.length > 0) {
            views.stagePatch(view.id, () => ({ output_schema: o.inferredSchema! }));
            changed.push(view.id);
          }
          continue;
        }
        const message = `transform ${transform.id} failed on the batch of spool entries ${lease.firstSeq}–${lease.lastSeq}: ${o.message}`;
        void views.store.transforms.put(view.id, {
          ...transform,
          status: 'error',
          error_message: message,
          updated_at: now,
        });
        views.stagePatch(view.id, () => ({ status: 'error', error_message: message }));
        changed.push(view.id);
      }
      return { gone, changed, reopened, wrote };
    },
    applyCommitted({ collection }, staged) {
      if (staged.gone.length > 0)
        removeViewFiles((id) => views.viewDir({ project_id: collection.project_id, id }), staged.gone);
      for (const id of staged.changed) views.store.reindex(id);
      // The backfiller hears of it and takes the new file.
      if (staged.reopened.length > 0) views.notify(staged.reopened);
      views.filesCommitted(staged.wrote);
    },
    abandon({ collection, result }) {
      if (result) removeViewFiles((id) => views.viewDir({ project_id: collection.project_id, id }), result.views);
    },
  };
}

/**
 * The views a batch of `collectionId` feeds, parents first: each view's transform that serves
 * records now (manual: the adopting transform; auto: the first with a script, active or queued for a new one). Views in
 * error, join views (processed on their own), and views whose parent is not fed are left out.
 */
export function viewTasksFor(views: ViewCatalog, collectionId: string): ViewTask[] {
  const tasks: ViewTask[] = [];
  const fed = new Set<string>();
  for (const v of views.liveViewsOf(collectionId)) {
    if (v.view_mode === 'join' || v.status === 'error') continue;
    if (v.parent_view_id !== null && !fed.has(v.parent_view_id)) continue;
    // A queued transform with a script keeps serving it until generation replaces it (docs/views.md, Transforms).
    const ts = views.store
      .transformsOf(v.id)
      .filter((t) => t.transform_script !== null && (t.status === 'active' || t.status === 'queued'));
    const t = ts.find((x) => x.id === v.adopting_transform_id) ?? ts[0];
    if (!t || t.transform_script === null || t.script_hash === null) continue;
    fed.add(v.id);
    const routes = scriptRoutes(views.store.versionsOf(v.id), ts, t.id);
    tasks.push({
      viewId: v.id,
      parentViewId: v.parent_view_id,
      transformId: t.id,
      scriptHash: t.script_hash,
      script: t.transform_script,
      outputSchema: v.output_schema,
      dir: views.viewDir(v),
      ...(routes.length > 0 ? { routes } : {}),
    });
  }
  return tasks;
}

/**
 * Schema versions whose view version record names a transform other than the view's serving one
 * (a person assigned the shape to it): their records run that transform's script, while it has one
 * and serves.
 */
function scriptRoutes(
  records: readonly ViewVersionRecord[],
  serving: readonly ViewTransformRecord[],
  defaultId: string,
): ScriptRoute[] {
  const routes = new Map<string, ScriptRoute>();
  for (const r of records) {
    if (r.transform_id === defaultId) continue;
    const t = serving.find((x) => x.id === r.transform_id);
    if (!t || t.transform_script === null || t.script_hash === null) continue;
    let route = routes.get(t.id);
    if (!route)
      routes.set(
        t.id,
        (route = { transformId: t.id, scriptHash: t.script_hash, script: t.transform_script, versionIds: [] }),
      );
    route.versionIds.push(r.schema_version_id);
  }
  return [...routes.values()];
}

/** Remove view files no committed manifest names, and directories of views that no longer exist (start-up). */
export function sweepViewOrphans(views: ViewCatalog, dataDir: string, list: (dir: string) => string[]): number {
  let removed = 0;
  const root = join(dataDir, 'views');
  for (const project of list(root)) {
    for (const viewId of list(join(root, project))) {
      const dir = join(root, project, viewId);
      const view = views.store.byId(viewId);
      if (!view) {
        rmSync(dir, { recursive: true, force: true });
        removed++;
        continue;
      }
      const known = new Set(views.store.filesOf(viewId).map((m) => m.id));
      for (const f of list(dir)) {
        if (known.has(f)) continue;
        rmSync(join(dir, f), { force: true });
        removed++;
      }
    }
  }
  return removed;
}
