import { join } from 'node:path';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { SchemaService } from '../schema/schema-service.js';
import { stageReopenReaders } from './backfill-reopen.js';
import { clauseOrder, joinRows, passThroughRun, passThroughSchema, type JoinSide } from './join-records.js';
import { JoinLookups, committedOrder, type LookupCursor } from './join-lookups.js';
import { JoinState } from './join-state.js';
import { BASE_SCOPE } from './join-store.js';
import { BackgroundPass } from './rerun-job.js';
import { TransformProcess } from './sandbox-process.js';
import type { ViewCatalog } from './view-catalog.js';
import { derivedFileName } from './view-file.js';
import { readViewFile, viewRowsInput } from './view-file-rows.js';
import type { ViewFileManifest, ViewRecord, ViewTransformRecord } from './view-records.js';
import { inputsOf } from './view-rules.js';
import { removeViewFiles, transformViewsStage, type RunScript, type ViewTask } from './view-stage.js';

/**
 * Join views (docs/views.md, "Join views"): in the background, each join view follows its base
 * view's committed files in commit order. Before each base file, the lookup indexes catch up with
 * what the lookup views committed (join-lookups.ts); the file's rows are then enriched with each
 * clause's latest lookup row as indexed at that moment, run through the join view's script (or
 * flattened, without one) by the same transform stage as batches and backfills, and the output
 * file is committed with the base file's done mark and the progress in one LMDB transaction — so a
 * restart resumes at the next file and no file is joined twice. Records are never revisited: a
 * lookup value arriving later enriches later base files only. Live batches never wait for it.
 */
export class JoinProcessor extends BackgroundPass {
  private readonly lookups: JoinLookups;
  private readonly state: JoinState;
  private scripts: TransformProcess | null = null;
  /** Views read by live join views (refreshed every pass): their new files wake the processor. */
  private inputs = new Set<string>();
  /** view id → moves on each time the view commits files (unchanged inputs are not listed again). */
  private readonly generations = new Map<string, number>();
  /** join view id → what its follows learnt (dropped when it starts over); only this processor writes done marks. */
  private readonly follows = new Map<string, FollowState>();

  constructor(private readonly d: { views: ViewCatalog; schema: SchemaService; clock: Clock; log: Logger }) {
    super(d.log, 'join views');
    this.lookups = new JoinLookups(d);
    this.state = new JoinState(d);
  }

  /** Runs a pass whenever a view changes or an input of a join commits files, and now. */
  start(): void {
    this.onStop(
      this.d.views.onChange(() => this.kick()),
      this.d.views.onFiles((ids) => {
        for (const id of ids) this.generations.set(id, (this.generations.get(id) ?? 0) + 1);
        if (ids.some((id) => this.inputs.has(id))) this.kick();
      }),
    );
    this.kick();
  }

  override async stop(): Promise<void> {
    await super.stop();
    await this.scripts?.close();
  }

  protected async runPass(): Promise<void> {
    const live = this.d.views.liveViews();
    // Inputs first: a join over a join view sees what the inner one joined in this pass.
    const joins = live.filter((v) => v.view_mode === 'join');
    this.inputs = new Set(joins.flatMap(inputsOf));
    for (const id of this.follows.keys()) if (!joins.some((v) => v.id === id)) this.follows.delete(id);
    for (const v of joins) {
      if (this.stopped) return;
      await this.follow(v.id);
    }
  }

  /** Join every base file not joined yet, then settle the status; stops at an error. */
  private async follow(id: string): Promise<void> {
    const generation = (viewId: string) => this.generations.get(viewId) ?? 0;
    for (;;) {
      const view = this.liveJoin(id);
      const t = view && servingTransform(this.d.views.store.transformsOf(id));
      if (!view || !t || this.stopped) return;
      if (t.transform_script !== null && t.backfill_status === 'pending') {
        await this.state.restart(view, t);
        this.follows.delete(id);
        continue;
      }
      if (t.status === 'error') return; // stopped until its transform changes
      const base = this.d.views.store.byId(view.join_base_view_id ?? '');
      if (!base) return; // a base gone takes its join views with it (view-catalog.ts destroyTree)
      let st = this.follows.get(id);
      if (!st)
        this.follows.set(
          id,
          (st = {
            cursor: { seen: new Map(), done: new Map() },
            baseDone: this.d.views.store.joins.doneFiles(id, BASE_SCOPE),
            baseSeen: -1,
            transformAt: '',
          }),
        );
      const { cursor, baseDone: done } = st;
      // Nothing committed since the last look and nothing changed: an idle pass costs no listing.
      const settled = view.join_status === 'live' && view.status === 'active' && st.transformAt === t.updated_at;
      if (
        settled &&
        st.baseSeen === generation(base.id) &&
        view.joins.every((c) => cursor.seen.get(c.alias) === generation(c.lookup_view_id))
      )
        return;
      const baseGen = generation(base.id);
      const files = committedOrder(this.d.views.store.filesOf(base.id));
      const cutoff = view.join_backfill_cutoff_at;
      const beforeCutoff = files.filter((f) => cutoff === null || f.created_at < cutoff).length;
      const todo = files.filter((f) => !done.has(f.id));
      if (view.join_status === 'error') {
        await this.state.resume(
          view,
          t,
          files.every((f) => done.has(f.id) || (cutoff !== null && f.created_at >= cutoff)),
        );
        continue;
      }
      if (todo.length === 0) {
        const indexed = await this.lookups.catchUp(view, cursor, generation);
        if (!indexed.ok) return this.state.fail(view, t, indexed.message, indexed.alias);
        await this.state.settle(this.liveJoin(id) ?? view, t, beforeCutoff);
        st.baseSeen = baseGen;
        st.transformAt = this.d.views.store.transforms.get(id, t.id)?.updated_at ?? '';
        return;
      }
      for (const f of todo) {
        const cur = this.liveJoin(id);
        const ct = cur && this.d.views.store.transforms.get(id, t.id);
        if (
          !cur ||
          !ct ||
          this.stopped ||
          ct.status === 'error' ||
          ct.backfill_status === 'pending' ||
          ct.script_hash !== t.script_hash ||
          cur.join_status === 'error'
        )
          break;
        const indexed = await this.lookups.catchUp(cur, cursor, generation);
        if (!indexed.ok) return this.state.fail(cur, ct, indexed.message, indexed.alias);
        const joined = await this.joinFile(cur, ct, base, f, beforeCutoff).catch((err: unknown) => ({
          failed: `joining base file ${f.id} failed: ${(err as Error)?.message ?? String(err)}`,
        }));
        if (joined === true) done.add(f.id);
        else if (joined !== false) return this.state.fail(cur, ct, joined.failed, null);
      }
    }
  }

  /** Join one base file and commit its output; answers whether it committed, or why joining failed. */
  private async joinFile(
    view: ViewRecord,
    t: ViewTransformRecord,
    base: ViewRecord,
    f: ViewFileManifest,
    beforeCutoff: number,
  ): Promise<{ failed: string } | boolean> {
    const { views } = this.d;
    const rows = await readViewFile(await this.d.schema.fileReader(), join(views.viewDir(base), f.id), f.rows);
    const sides = this.sides(view, base);
    const joined = joinRows(rows, base.output_schema, sides, (alias, key) =>
      views.store.joins.lookup(view.id, alias, key),
    );
    const script = t.transform_script;
    const schema =
      view.output_schema.length > 0 || script !== null
        ? view.output_schema
        : passThroughSchema(base.output_schema, sides);
    const task: ViewTask = {
      viewId: view.id,
      parentViewId: null,
      transformId: t.id,
      scriptHash: t.script_hash ?? 'pass-through',
      script: script ?? '',
      outputSchema: schema,
      dir: views.viewDir(view),
    };
    const run: RunScript =
      script === null
        ? passThroughRun(base.output_schema, sides)
        : (batch, v) => (this.scripts ??= new TransformProcess()).run({ ...batch, ...v });
    const [o] = await transformViewsStage({
      base: viewRowsInput(joined.rows, [], joined.records),
      views: [task],
      firstSeq: f.first_seq,
      fileName: derivedFileName('j', f),
      run,
    });
    if (o!.status === 'failed') return { failed: `joining base file ${f.id} failed: ${o!.message}` };
    const out = o!;
    const now = new Date(this.d.clock.now()).toISOString();
    const isBackfill = view.join_backfill_cutoff_at === null || f.created_at < view.join_backfill_cutoff_at;
    let committed = false;
    let reopened: string[] = [];
    await views.store.store.transaction(() => {
      const cur = views.store.byId(view.id);
      const ct = views.store.transforms.get(view.id, t.id);
      if (
        !cur ||
        cur.deleted_at !== null ||
        views.destroying.has(view.id) ||
        !ct ||
        ct.script_hash !== t.script_hash ||
        ct.backfill_status === 'pending' ||
        ct.status === 'error'
      )
        return;
      if (cur.join_status === 'error' || views.store.joins.isDone(view.id, BASE_SCOPE, f.id)) return;
      if (out.file) {
        void views.store.files.put(view.id, {
          id: out.file.path,
          view_id: view.id,
          first_seq: f.first_seq,
          last_seq: f.last_seq,
          rows: out.file.rows,
          bytes: out.file.bytes,
          min_ts: out.file.minTs,
          max_ts: out.file.maxTs,
          created_at: now,
          origin: 'join',
        });
        reopened = stageReopenReaders(views, view.id, now);
      }
      views.store.joins.stageDone(view.id, BASE_SCOPE, f.id);
      const failures = { ...(ct.coercion_failures ?? {}) };
      for (const [k, n] of Object.entries(out.counts.failed)) failures[k] = (failures[k] ?? 0) + n;
      const filesDone = (cur.join_base_files_done ?? 0) + (isBackfill ? 1 : 0);
      void views.store.transforms.put(view.id, {
        ...ct,
        coercion_failures: failures,
        ...(ct.backfill_status === 'running'
          ? { backfill_file_count: beforeCutoff, backfill_files_done: filesDone }
          : {}),
        updated_at: now,
      });
      const outputSchema = out.inferredSchema ?? (script === null ? schema : null);
      views.stagePatch(view.id, (v) => ({
        status: 'active',
        join_base_file_count: beforeCutoff,
        join_base_files_done: filesDone,
        ...(v.output_schema.length === 0 && outputSchema && outputSchema.length > 0
          ? { output_schema: outputSchema }
          : {}),
        join_updated_at: now,
      }));
      committed = true;
    });
    if (!committed) removeViewFiles(() => task.dir, [out]);
    views.store.reindex(view.id);
    if (reopened.length > 0) views.notify(reopened);
    if (committed && out.file) views.filesCommitted([view.id]);
    return committed;
  }

  /** The clauses in the order they run, with the key's type on the base side and the lookup's fields. */
  private sides(view: ViewRecord, base: ViewRecord): JoinSide[] {
    return clauseOrder(view.joins).map((clause) => ({
      clause,
      baseField: base.output_schema.find((f) => f.name === clause.base_field) ?? {
        name: clause.base_field,
        type: 'string',
      },
      lookupFields: this.d.views.store.byId(clause.lookup_view_id)?.output_schema ?? [],
    }));
  }

  private liveJoin(id: string): ViewRecord | undefined {
    const v = this.d.views.store.byId(id);
    return v && v.deleted_at === null && !this.d.views.destroying.has(id) && v.view_mode === 'join' ? v : undefined;
  }
}

/** What the processor keeps about one join view between passes. */
interface FollowState {
  cursor: LookupCursor;
  /** Base files joined (loaded from LMDB when the follow state is made). */
  baseDone: Set<string>;
  /** The base view's file generation when nothing was left to join. */
  baseSeen: number;
  /** The transform's `updated_at` then: a change to it (a script, a rebackfill) is looked at. */
  transformAt: string;
}

/**
 * The transform a join view runs: the one with a script that serves (active, or queued keeping
 * its script), else the first not disabled — without a script the join is flattened as is.
 */
function servingTransform(ts: readonly ViewTransformRecord[]): ViewTransformRecord | undefined {
  const usable = ts.filter((t) => t.status !== 'disabled');
  return (
    usable.find((t) => t.transform_script !== null && (t.status === 'active' || t.status === 'queued')) ?? usable[0]
  );
}
