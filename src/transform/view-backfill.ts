import { BackgroundPass } from './rerun-job.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { SchemaService } from '../schema/schema-service.js';
import type { ViewCatalog } from './view-catalog.js';
import type { ViewRecord, ViewTransformRecord } from './view-records.js';
import { TransformProcess } from './sandbox-process.js';
import { removeViewFiles, transformViewsStage, type ViewTask } from './view-stage.js';
import { collectionFiles, parentViewFiles, type BackfillFile, type BackfillSource } from './backfill-source.js';
import { stageReopenReaders } from './backfill-reopen.js';
import { derivedFileName } from './view-file.js';

/**
 * Backfill (docs/views.md, "Backfill"): a transform's view gets the records it did not get live —
 * for a collection view the collection files whose batches came before its `live_from_seq`, for a
 * view of a view its parent's files it was not fed (backfill-source.ts) — through the same
 * transform stage, one file at a time, in the background. Each file's output is committed with the
 * file's id in the transform's done list (one LMDB transaction), so a restart resumes where it
 * stopped and no file is transformed twice; output written but not committed is an orphan the
 * start-up sweep removes. Live batches never wait for it: they run the transform from the moment
 * it is active.
 */
export class ViewBackfiller extends BackgroundPass {
  private scripts: TransformProcess | null = null;

  constructor(private readonly d: { views: ViewCatalog; schema: SchemaService; clock: Clock; log: Logger }) {
    super(d.log, 'view backfill');
  }

  /** Runs a pass whenever a view changes, and now. */
  start(): void {
    this.onStop(this.d.views.onChange(() => this.kick()));
    this.kick();
  }

  override async stop(): Promise<void> {
    await super.stop();
    await this.scripts?.close();
  }

  protected async runPass(): Promise<void> {
    // Parents first: a parent's backfill output is due to its derived views' backfills in the same pass.
    for (const view of this.d.views.liveViews()) {
      if (this.stopped) return;
      if (view.view_mode === 'join') continue;
      for (const t of this.d.views.store.transformsOf(view.id)) {
        if (
          t.status !== 'active' ||
          t.transform_script === null ||
          (t.backfill_status !== 'pending' && t.backfill_status !== 'running')
        )
          continue;
        const source = this.sourceOf(view);
        if (source) await this.backfill(view, t, source);
      }
    }
  }

  private sourceOf(view: ViewRecord): BackfillSource | null {
    if (view.parent_view_id === null) return collectionFiles(this.d.schema, view);
    const parent = this.d.views.store.byId(view.parent_view_id);
    // A parent gone takes its derived views with it (view-catalog.ts destroyTree).
    return parent ? parentViewFiles(this.d.views, this.d.schema, parent) : null;
  }

  private async backfill(view: ViewRecord, start: ViewTransformRecord, source: BackfillSource): Promise<void> {
    const { views, clock } = this.d;
    let t = start;
    const now = () => new Date(clock.now()).toISOString();
    if (t.backfill_status === 'pending')
      t =
        (await this.patch(view, t.id, () => ({
          backfill_status: 'running',
          backfill_started_at: now(),
          backfill_error: null,
        }))) ?? t;
    for (;;) {
      if (this.stopped) return;
      const cur = views.store.transforms.get(view.id, t.id);
      if (!cur || cur.status !== 'active' || cur.backfill_status !== 'running' || cur.script_hash !== t.script_hash)
        return;
      const done = new Set(cur.backfill_done_files ?? []);
      const due = source.due(cur);
      const next = due.find((m) => !done.has(m.id));
      if (!next) {
        if (await this.complete(view, cur, source)) return;
        continue;
      }
      await this.file(view, cur, source, next, due.length);
    }
  }

  /** Transform one input file and commit its output with its place in the done list. */
  private async file(
    view: ViewRecord,
    t: ViewTransformRecord,
    source: BackfillSource,
    m: BackfillFile,
    total: number,
  ): Promise<void> {
    const { views, clock } = this.d;
    const input = await source.read(m);
    const task: ViewTask = {
      viewId: view.id,
      parentViewId: null,
      transformId: t.id,
      scriptHash: t.script_hash!,
      script: t.transform_script!,
      outputSchema: views.store.byId(view.id)?.output_schema ?? view.output_schema,
      dir: views.viewDir(view),
    };
    this.scripts ??= new TransformProcess();
    const scripts = this.scripts;
    const [o] = await transformViewsStage({
      base: input,
      views: [task],
      firstSeq: m.first_seq,
      fileName: derivedFileName('f', m),
      run: (batch, v) => scripts.run({ ...batch, ...v }),
    });
    const now = new Date(clock.now()).toISOString();
    let committed = false;
    let reopened: string[] = [];
    await views.store.store.transaction(() => {
      const cur = views.store.transforms.get(view.id, t.id);
      const live = views.store.byId(view.id);
      if (
        !cur ||
        !live ||
        live.deleted_at !== null ||
        cur.script_hash !== t.script_hash ||
        cur.backfill_status !== 'running'
      )
        return;
      if (o!.status === 'failed') {
        const message = `backfill of ${source.what} ${m.id} failed: ${o!.message}`;
        void views.store.transforms.put(view.id, {
          ...cur,
          status: 'error',
          error_message: message,
          backfill_status: 'failed',
          backfill_error: message,
          updated_at: now,
        });
        views.stagePatch(view.id, () => ({ status: 'error', error_message: message }));
        committed = true;
        return;
      }
      if (o!.file) {
        void views.store.files.put(view.id, {
          id: o!.file.path,
          view_id: view.id,
          first_seq: m.first_seq,
          last_seq: m.last_seq,
          rows: o!.file.rows,
          bytes: o!.file.bytes,
          min_ts: o!.file.minTs,
          max_ts: o!.file.maxTs,
          created_at: now,
          origin: 'backfill',
        });
        reopened = stageReopenReaders(views, view.id, now);
      }
      const doneFiles = [...(cur.backfill_done_files ?? []), m.id];
      void views.store.transforms.put(view.id, {
        ...cur,
        backfill_done_files: doneFiles,
        backfill_files_done: doneFiles.length,
        backfill_file_count: total,
        updated_at: now,
      });
      if (o!.inferredSchema && live.output_schema.length === 0 && o!.inferredSchema.length > 0)
        views.stagePatch(view.id, () => ({ output_schema: o!.inferredSchema! }));
      views.stagePatch(view.id, () => ({
        backfill_file_count: total,
        backfill_files_done: doneFiles.length,
        backfill_started_at: live.backfill_started_at ?? cur.backfill_started_at,
      }));
      committed = true;
    });
    if (!committed) removeViewFiles(() => task.dir, [o!]);
    views.store.reindex(view.id);
    for (const id of reopened) views.store.reindex(id);
    // Derived views reopened after this pass passed them (a later pass takes them).
    if (reopened.length > 0) this.kick();
    if (committed && o!.status === 'ok' && o!.file) views.filesCommitted([view.id]);
  }

  /**
   * Mark the backfill completed if, inside the transaction, every due file is done: a batch may
   * have committed a file the backfill must take since the loop looked (backfill-reopen.ts reopens
   * a completed backfill for such a file; this closes the window before completion). Returns
   * whether it completed (false: look again).
   */
  private async complete(view: ViewRecord, seen: ViewTransformRecord, source: BackfillSource): Promise<boolean> {
    const { views, clock } = this.d;
    const at = new Date(clock.now()).toISOString();
    let completed = false;
    const done = await views.store.store.transaction(() => {
      const cur = views.store.transforms.get(view.id, seen.id);
      if (!cur || cur.status !== 'active' || cur.backfill_status !== 'running' || cur.script_hash !== seen.script_hash)
        return true;
      const finished = new Set(cur.backfill_done_files ?? []);
      const due = source.due(cur);
      if (due.some((m) => !finished.has(m.id))) return false;
      void views.store.transforms.put(view.id, {
        ...cur,
        backfill_status: 'completed',
        backfill_completed_at: at,
        backfill_file_count: due.length,
        backfill_files_done: due.length,
        updated_at: at,
      });
      if (cur.backfill_started_at)
        views.stagePatch(view.id, (v) => ({ backfill_started_at: v.backfill_started_at ?? cur.backfill_started_at }));
      completed = true;
      return true;
    });
    // A completed backfill is announced (notify reindexes): the view's history is all written, which a
    // metric backfill waits for (the files it wrote were announced to file listeners only).
    if (completed) views.notify([view.id]);
    else views.store.reindex(view.id);
    return done;
  }

  private async patch(
    view: ViewRecord,
    transformId: string,
    fn: (t: ViewTransformRecord) => Partial<ViewTransformRecord>,
  ): Promise<ViewTransformRecord | undefined> {
    const { views, clock } = this.d;
    const out = await views.store.store.transaction(() => {
      const cur = views.store.transforms.get(view.id, transformId);
      if (!cur) return undefined;
      const next = { ...cur, ...fn(cur), updated_at: new Date(clock.now()).toISOString() };
      void views.store.transforms.put(view.id, next);
      if (next.backfill_started_at)
        views.stagePatch(view.id, (v) => ({ backfill_started_at: v.backfill_started_at ?? next.backfill_started_at }));
      return next;
    });
    views.store.reindex(view.id);
    return out;
  }
}
