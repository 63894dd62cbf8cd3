import { join } from 'node:path';
import { iso, type Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { JobDef } from '../schedule/types.js';
import { BackgroundPass } from '../transform/rerun-job.js';
import type { ViewCatalog } from '../transform/view-catalog.js';
import type { ViewFileManifest, ViewRecord } from '../transform/view-records.js';
import { loadHasher } from './hll.js';
import type { MetricCatalog } from './metric-catalog.js';
import type { MetricRecord } from './metric-records.js';
import { metricTaskOf } from './metric-task.js';
import { buildPartials, fieldsOfTask } from './partials.js';
import type { PendingPartials } from './pending-partials.js';
import type { RollupStore } from './rollup-store.js';
import { foldPartials, SeriesBudget } from './series-limit.js';
import { stageSeenSeries } from './series-registry.js';
import { readViewFileColumns } from './view-file-columns.js';

/**
 * Count one view file into a metric revision: build its partials (only events in `bounds`, see
 * MetricTask), register its series, merge them with the mark `markId` (nothing when it is there).
 * The backfill and the late-data re-backfill count files through this. Answers the partial rows
 * merged (0: none, or the file was counted already).
 */
export async function countViewFile(
  d: { metrics: MetricCatalog; views: ViewCatalog; db: RollupStore; clock: Clock },
  m: MetricRecord,
  path: string,
  markId: string,
  bounds: { eventBefore?: number } = {},
): Promise<number> {
  const view = d.views.store.byId(m.view_id);
  if (!view) return 0;
  const task = { ...metricTaskOf(m, view.output_schema), ...bounds };
  const wanted = fieldsOfTask(task);
  const fields = view.output_schema.filter((x) => wanted.has(x.name));
  const { ts, columns } = await readViewFileColumns(d.db, path, fields);
  const built = buildPartials(task, ts, columns);
  // Registered first: a crash after the merge must not leave a counted series unregistered
  // (registering one that ends up uncounted is harmless). New series past a limit fold into
  // `__other__`; a file counted again after a crash folds what is still unregistered then, and its
  // mark makes sure only one of the two countings is merged.
  const folded = await d.metrics.store.store.transaction(() => {
    const cur = d.metrics.store.byId(m.id);
    if (!cur || cur.definition_revision !== m.definition_revision) return new Set<number>();
    return stageSeenSeries(
      d.metrics.store,
      cur,
      built.series,
      d.clock.now(),
      new SeriesBudget(d.metrics.store, d.metrics.seriesLimits),
    ).folded;
  });
  const partials = foldPartials(built, folded);
  return (await d.db.mergeBackfillFile(m.id, m.definition_revision, markId, partials)) ? partials.partials.length : 0;
}

/** Whether a view and the views it reads have written all the history they will backfill. */
function viewHistoryComplete(views: ViewCatalog, view: ViewRecord): boolean {
  for (
    let v: ViewRecord | undefined = view;
    v;
    v = v.parent_view_id === null ? undefined : views.store.byId(v.parent_view_id)
  ) {
    if (v.join_status === 'backfilling') return false;
    if (
      views.store
        .transformsOf(v.id)
        .some((t) => t.status === 'active' && (t.backfill_status === 'pending' || t.backfill_status === 'running'))
    )
      return false;
  }
  return true;
}

/** How often views are looked at for files their own backfill added (they do not announce them). */
const RESCAN_MS = 2_000;

/**
 * Metric backfill (docs/metrics.md, "Backfill"): the view files a metric revision did not count live
 * — every file the view's own backfill wrote, and batch files committed before the revision's first
 * live batch (`PendingPartials.liveFrom`) — go through the same partials builder as live batches,
 * one file per DuckDB transaction with a (metric, revision, file) mark, in the metric's
 * `backfill_strategy` order. A restart resumes at the first unmarked file; no file counts twice.
 * Live batches never wait: they commit to LMDB on their own, and DuckDB merges interleave with files.
 *
 * Status: `initializing` → `backfilling` (started_at, totals) → `active` (completed_at); `error`
 * with a reason when a file cannot be read or built. A rebuild (new revision) starts over.
 */
export class MetricBackfiller extends BackgroundPass {
  /** metric id → [revision, oldest min_ts of its files not yet backfilled (Infinity: none)]. */
  private readonly remaining = new Map<string, [number, number]>();

  /** `merged`: a file's partials are in DuckDB (the compactor folds them into the tiers). */
  constructor(
    private readonly d: {
      metrics: MetricCatalog;
      views: ViewCatalog;
      db: RollupStore;
      pending: PendingPartials;
      clock: Clock;
      log: Logger;
      merged: () => void;
    },
  ) {
    super(d.log, 'metric backfill');
  }

  /** Runs a pass whenever a metric or view changes, and now; the periodic rescan is `rescanJob`. */
  start(): void {
    this.onStop(
      this.d.metrics.onChange(() => this.kick()),
      this.d.views.onChange(() => this.kick()),
    );
    this.kick();
  }

  /**
   * The rescan every RESCAN_MS as a scheduler job (the server registers it): a run asks for a pass
   * and resolves once none is running, so `scheduler.runDue()` returns with the files found counted —
   * or at once when the scheduler stops (a long backfill must not hold the shutdown; the pass itself
   * ends at its next file when the backfiller stops). After `stop` a run does nothing.
   */
  rescanJob(): JobDef {
    return {
      name: 'metric-backfill-rescan',
      schedule: { everyMs: RESCAN_MS },
      run: ({ signal }) => {
        this.kick();
        if (signal.aborted) return;
        return new Promise<void>((resolve) => {
          const done = () => {
            signal.removeEventListener('abort', done);
            resolve();
          };
          signal.addEventListener('abort', done);
          void this.idle().then(done, done);
        });
      },
    };
  }

  /**
   * Oldest event time (epoch ms) the backfill of the metric's current revision has not counted yet:
   * Infinity when it has counted everything, null before it planned the run.
   */
  pendingFrom(metric: Pick<MetricRecord, 'id' | 'definition_revision'>): number | null {
    const r = this.remaining.get(metric.id);
    return r && r[0] === metric.definition_revision ? r[1] : null;
  }

  protected async runPass(): Promise<void> {
    for (const { value: m } of this.d.metrics.store.metrics.all()) {
      if (this.stopped) return;
      if (m.status !== 'initializing' && m.status !== 'backfilling' && m.status !== 'active') continue;
      try {
        await this.backfill(m);
      } catch (err) {
        const message = `backfill failed: ${(err as Error)?.message ?? String(err)}`;
        this.d.log.error({ err, metric_id: m.id }, 'metric backfill failed');
        await this.patch(m, () => ({ status: 'error', error_message: message }), true);
      }
    }
  }

  /** The files this revision must backfill, and those done. */
  private async plan(m: MetricRecord): Promise<{ due: ViewFileManifest[]; done: Set<string> }> {
    const files = this.d.views.store.filesOf(m.view_id);
    // Read after listing: a file listed was committed, so a batch that counted it live had set this.
    const liveFrom = this.d.pending.liveFrom(m.id, m.definition_revision) ?? Infinity;
    const due = files.filter((f) => f.origin === 'backfill' || f.first_seq < liveFrom);
    return { due, done: await this.d.db.backfilledFiles(m.id, m.definition_revision) };
  }

  private async backfill(start: MetricRecord): Promise<void> {
    const view = this.d.views.store.byId(start.view_id);
    if (!view) return;
    const revision = start.definition_revision;
    let { due, done } = await this.plan(start);
    let todo = due.filter((f) => !done.has(f.id));
    this.note(start, todo);
    if (todo.length === 0 && start.status === 'active') return;
    const now = () => iso(this.d.clock.now());
    let m: MetricRecord | undefined = start;
    if (start.status === 'initializing') {
      m = await this.patch(start, () => ({
        status: 'backfilling',
        backfill_started_at: now(),
        backfill_completed_at: null,
        ...progress(due.length, due.length - todo.length),
        error_message: null,
      }));
    }
    await loadHasher();
    while (m && todo.length > 0 && !this.stopped) {
      const order =
        m.backfill_strategy === 'oldest_first'
          ? (a: ViewFileManifest, b: ViewFileManifest) => a.min_ts - b.min_ts
          : (a: ViewFileManifest, b: ViewFileManifest) => b.max_ts - a.max_ts;
      const file = todo.sort(order)[0]!;
      const merged = await countViewFile(this.d, m, join(this.d.views.viewDir(view), file.id), file.id);
      this.d.merged();
      ({ due, done } = await this.plan(m));
      todo = due.filter((f) => !done.has(f.id));
      this.note(m, todo);
      m = await this.patch(
        m,
        (cur) => ({ ...progress(due.length, due.length - todo.length), ...compactBehind(cur, merged) }),
        false,
      );
      if (m && (m.definition_revision !== revision || m.status === 'cancelled')) return;
    }
    // The view's own history still arriving (its backfill, a join catching up) is more of the
    // metric's: it stays backfilling until that is in too (the rescan takes the new files).
    if (m && todo.length === 0 && viewHistoryComplete(this.d.views, view))
      await this.patch(m, (cur) => ({
        status: 'active',
        ...progress(due.length, due.length),
        backfill_completed_at: cur.status === 'active' ? cur.backfill_completed_at : now(),
      }));
  }

  private note(m: MetricRecord, left: readonly ViewFileManifest[]): void {
    this.remaining.set(m.id, [m.definition_revision, left.reduce((min, f) => Math.min(min, f.min_ts), Infinity)]);
  }

  /**
   * Patch the metric if it is still at this revision and not cancelled meanwhile (a backfill under
   * way stops at its next file, and never moves a cancelled metric on); answers it as it is now
   * (undefined: gone).
   */
  private async patch(
    m: MetricRecord,
    fn: (cur: MetricRecord) => Partial<MetricRecord>,
    notify = true,
  ): Promise<MetricRecord | undefined> {
    const mine = (cur: MetricRecord) => cur.definition_revision === m.definition_revision && cur.status !== 'cancelled';
    const cur = this.d.metrics.store.byId(m.id);
    if (!cur || !mine(cur)) return cur;
    return this.d.metrics.patchMetric(m.id, (now) => (mine(now) ? fn(now) : {}), { notify });
  }
}

/**
 * The compaction progress once `rows` more partials wait: the total grows at once, so
 * `compact_percent` never reads 100 while a merged file's partials are not folded yet (the next
 * compaction pass sets both from what it folded and what still waits).
 */
function compactBehind(cur: MetricRecord, rows: number): Partial<MetricRecord> {
  if (rows === 0) return {};
  const total = Math.max(cur.compact_total_count, cur.compact_completed_count) + rows;
  return { compact_total_count: total, compact_percent: Math.floor((cur.compact_completed_count / total) * 100) };
}

function progress(
  total: number,
  completed: number,
): Pick<MetricRecord, 'backfill_total_count' | 'backfill_completed_count' | 'backfill_percent'> {
  return {
    backfill_total_count: total,
    backfill_completed_count: completed,
    backfill_percent: total === 0 ? 100 : Math.floor((100 * completed) / total),
  };
}
