import { RerunJob } from './rerun-job.js';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { SchemaService } from '../schema/schema-service.js';
import type { FileManifest } from '../schema/schema-store.js';
import type { ViewCatalog } from './view-catalog.js';
import type { ViewRecord, ViewTransformRecord } from './view-records.js';
import { TransformProcess } from './sandbox-process.js';
import { removeViewFiles, transformViewsStage, type ViewInput, type ViewTask } from './view-stage.js';

/**
 * Backfill (docs/views.md, "Backfill"): a transform's view gets the records that were in the
 * collection before the transform ran live — the collection files whose batches came before its
 * `live_from_seq` — through the same transform stage, one file at a time, in the background.
 * Each file's output is committed with the file's id in the transform's done list (one LMDB
 * transaction), so a restart resumes where it stopped and no file is transformed twice; output
 * written but not committed is an orphan the start-up sweep removes. Live batches never wait for
 * it: they run the transform from the moment it is active.
 */
export class ViewBackfiller {
  private readonly job: RerunJob;
  private stopped = false;
  private scripts: TransformProcess | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly d: { views: ViewCatalog; schema: SchemaService; clock: Clock; log: Logger }) {
    this.job = new RerunJob(() => this.runPending(), d.log, 'view backfill');
  }

  start(): void {
    this.unsubscribe = this.d.views.onChange(() => this.kick());
    this.kick();
  }

  /** Look for work now (a view changed, or at start). */
  kick(): void {
    this.job.request();
  }

  /** Resolves once no backfill is running (tests). */
  idle(): Promise<void> {
    return this.job.idle();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    await this.job.stop();
    await this.scripts?.close();
  }

  private async runPending(): Promise<void> {
    for (const { value: view } of this.d.views.store.views.all()) {
      if (this.stopped) return;
      if (view.deleted_at !== null || view.view_mode === 'join' || this.d.views.destroying.has(view.id)) continue;
      for (const t of this.d.views.store.transformsOf(view.id)) {
        if (t.status !== 'active' || t.transform_script === null || (t.backfill_status !== 'pending' && t.backfill_status !== 'running')) continue;
        await this.backfill(view, t);
      }
    }
  }

  private async backfill(view: ViewRecord, start: ViewTransformRecord): Promise<void> {
    const { views, clock } = this.d;
    if (view.parent_view_id !== null) {
      await this.patch(view, start.id, () => ({ backfill_status: 'failed', backfill_error: 'backfill of a view of a view is not supported yet: it receives its parent\'s records from the moment it is created' }));
      return;
    }
    let t = start;
    const now = () => new Date(clock.now()).toISOString();
    if (t.backfill_status === 'pending') t = (await this.patch(view, t.id, () => ({ backfill_status: 'running', backfill_started_at: now(), backfill_error: null }))) ?? t;
    const dir = this.d.schema.filesDir({ project_id: view.project_id, id: view.root_collection_id });
    for (;;) {
      if (this.stopped) return;
      const cur = views.store.transforms.get(view.id, t.id);
      if (!cur || cur.status !== 'active' || cur.backfill_status !== 'running' || cur.script_hash !== t.script_hash) return;
      const cutoff = cur.live_from_seq ?? Infinity;
      const done = new Set(cur.backfill_done_files ?? []);
      const due = this.d.schema.manifests(view.root_collection_id).filter((m) => m.first_seq < cutoff);
      const next = due.find((m) => !done.has(m.id));
      if (!next) {
        if (await this.complete(view, cur)) return;
        continue;
      }
      await this.file(view, cur, next, join(dir, next.id), due.length);
    }
  }

  /** Transform one collection file and commit its output with its place in the done list. */
  private async file(view: ViewRecord, t: ViewTransformRecord, m: FileManifest, path: string, total: number): Promise<void> {
    const { views, clock } = this.d;
    const reader = await this.d.schema.fileReader();
    const rows = await reader.docs({ paths: [path], limit: m.rows + 1, sort: 'asc' });
    const input: ViewInput = {
      texts: rows.map((r) => r.doc),
      ts: Float64Array.from(rows, (r) => r.tsMs),
      // The receive time is not kept in collection files: ctx.received_at reads the event time.
      received: Float64Array.from(rows, (r) => r.tsMs),
      seq: Float64Array.from(rows, (r) => r.seq),
      versions: rows.map((r) => r.versionId),
    };
    const task: ViewTask = { viewId: view.id, parentViewId: null, transformId: t.id, scriptHash: t.script_hash!, script: t.transform_script!, outputSchema: view.output_schema, dir: views.viewDir(view) };
    this.scripts ??= new TransformProcess();
    const scripts = this.scripts;
    const name = `f${m.first_seq}-${createHash('sha256').update(m.id).digest('hex').slice(0, 12)}.parquet`;
    const [o] = await transformViewsStage({ base: input, views: [task], firstSeq: m.first_seq, fileName: name, run: (batch, v) => scripts.run({ ...batch, ...v }) });
    const now = new Date(clock.now()).toISOString();
    let committed = false;
    await views.store.store.transaction(() => {
      const cur = views.store.transforms.get(view.id, t.id);
      const live = views.store.byId(view.id);
      if (!cur || !live || live.deleted_at !== null || cur.script_hash !== t.script_hash || cur.backfill_status !== 'running') return;
      if (o!.status === 'failed') {
        const message = `backfill of collection file ${m.id} failed: ${o!.message}`;
        void views.store.transforms.put(view.id, { ...cur, status: 'error', error_message: message, backfill_status: 'failed', backfill_error: message, updated_at: now });
        views.stagePatch(view.id, () => ({ status: 'error', error_message: message }));
        committed = true;
        return;
      }
      if (o!.file) void views.store.files.put(view.id, { id: o!.file.path, view_id: view.id, first_seq: m.first_seq, last_seq: m.last_seq, rows: o!.file.rows, bytes: o!.file.bytes, min_ts: o!.file.minTs, max_ts: o!.file.maxTs, created_at: now, origin: 'backfill' });
      const doneFiles = [...(cur.backfill_done_files ?? []), m.id];
      void views.store.transforms.put(view.id, { ...cur, backfill_done_files: doneFiles, backfill_files_done: doneFiles.length, backfill_file_count: total, updated_at: now });
      if (o!.inferredSchema && live.output_schema.length === 0 && o!.inferredSchema.length > 0) views.stagePatch(view.id, () => ({ output_schema: o!.inferredSchema! }));
      views.stagePatch(view.id, () => ({ backfill_file_count: total, backfill_files_done: doneFiles.length, backfill_started_at: live.backfill_started_at ?? cur.backfill_started_at }));
      committed = true;
    });
    if (!committed) removeViewFiles(() => task.dir, [o!]);
    views.store.reindex(view.id);
  }

  /**
   * Mark the backfill completed if, inside the transaction, every due file is done: a batch may
   * have committed a file the backfill must take since the loop looked (view-commit.ts reopens a
   * completed backfill for such a file; this closes the window before completion). Returns
   * whether it completed (false: look again).
   */
  private async complete(view: ViewRecord, seen: ViewTransformRecord): Promise<boolean> {
    const { views, clock } = this.d;
    const at = new Date(clock.now()).toISOString();
    const done = await views.store.store.transaction(() => {
      const cur = views.store.transforms.get(view.id, seen.id);
      if (!cur || cur.status !== 'active' || cur.backfill_status !== 'running' || cur.script_hash !== seen.script_hash) return true;
      const cutoff = cur.live_from_seq ?? Infinity;
      const finished = new Set(cur.backfill_done_files ?? []);
      const due = this.d.schema.manifests(view.root_collection_id).filter((m) => m.first_seq < cutoff);
      if (due.some((m) => !finished.has(m.id))) return false;
      void views.store.transforms.put(view.id, { ...cur, backfill_status: 'completed', backfill_completed_at: at, backfill_file_count: due.length, backfill_files_done: due.length, updated_at: at });
      if (cur.backfill_started_at) views.stagePatch(view.id, (v) => ({ backfill_started_at: v.backfill_started_at ?? cur.backfill_started_at }));
      return true;
    });
    views.store.reindex(view.id);
    return done;
  }

  private async patch(view: ViewRecord, transformId: string, fn: (t: ViewTransformRecord) => Partial<ViewTransformRecord>): Promise<ViewTransformRecord | undefined> {
    const { views, clock } = this.d;
    const out = await views.store.store.transaction(() => {
      const cur = views.store.transforms.get(view.id, transformId);
      if (!cur) return undefined;
      const next = { ...cur, ...fn(cur), updated_at: new Date(clock.now()).toISOString() };
      void views.store.transforms.put(view.id, next);
      if (next.backfill_started_at) views.stagePatch(view.id, (v) => ({ backfill_started_at: v.backfill_started_at ?? next.backfill_started_at }));
      return next;
    });
    views.store.reindex(view.id);
    return out;
  }
}
