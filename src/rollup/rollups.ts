import { availableParallelism } from 'node:os';
import type { Clock } from '../clock.js';
import type { Spool } from '../spool/spool.js';
import type { Logger } from '../log.js';
import type { CommitParticipant } from '../commit/batch-commit.js';
import type { Store } from '../store/db.js';
import type { JobHandle, Scheduler } from '../schedule/types.js';
import type { ViewCatalog } from '../transform/view-catalog.js';
import { CompactThreads, type CompactThread } from './compact-thread.js';
import { compactPartials } from './compactor.js';
import { MetricBackfiller } from './metric-backfill.js';
import type { MetricCatalog } from './metric-catalog.js';
import { PendingPartials } from './pending-partials.js';
import { rollupCommitParticipant } from './rollup-commit.js';
import { rollupReader } from './rollup-reader.js';
import { RollupStore, type DuckDbSettings } from './rollup-store.js';
import type { StoredColumns } from './rollup-types.js';
import type { RollupReader } from './rollup-reader-contract.js';
import { SealedCells } from './aggregation/sealed-cells.js';

export interface RollupDeps {
  store: Store;
  dataDir: string;
  metrics: MetricCatalog;
  views: ViewCatalog;
  spool: Spool;
  clock: Clock;
  log: Logger;
  /** Runs the compaction as its job `rollup-compaction` (kicked after merges). */
  scheduler: Scheduler;
  /** Tests only (config.rollupMergeDelayMs): hold each merge this long after its commit. */
  mergeDelayMs?: number;
  /** Tests only (config.rollupCompactRows): partial rows a compaction pass folds at most (0: the default). */
  compactRows?: number;
  /** DuckDB's memory limit and threads (config.duckdb*; absent: the defaults). */
  duckdb?: DuckDbSettings;
}

/**
 * Quiet time before the compaction job is kicked after a merge, so a pass folds many batches at once.
 * A plain delay before a kick (like view generation's debounce), not a schedule: on a hand-moved
 * clock the compaction still follows merges by itself.
 */
const COMPACT_DELAY_MS = 250;
/**
 * Threads that merge a compaction pass's states, each a part of its series: two, so an import's
 * backlog is folded on both cores of a small machine once its drain leaves them idle.
 */
const COMPACT_THREADS = Math.min(2, availableParallelism());
/** Wait before a failed pass is kicked again: after a backfill's last merge no other kick would come. */
const RETRY_MS = 1_000;
/** Committed batches merged into DuckDB in one transaction at most. */
const MERGE_BATCHES = 256;

/**
 * The rollups of every metric (docs/metrics.md, "Rollups"): the commit participant that stages
 * partials in LMDB, the writer that merges committed ones into DuckDB exactly once, the compactor,
 * the backfiller, and the reader the aggregation endpoint uses.
 */
export class Rollups implements RollupReader {
  readonly pending: PendingPartials;
  readonly reader: RollupReader;
  readonly backfill: MetricBackfiller;
  /** Sealed buckets' answered cells kept between aggregations; told of every write and metric change. */
  readonly sealed = new SealedCells();
  private readonly queue = new Set<number>();
  /** Keys found pending at start: a crash may have merged them already (their marks are looked up). */
  private readonly replays = new Set<number>();
  private draining: Promise<void> | null = null;
  /** LMDB deletes of merged entries, off the merge path (a replay of one still pending adds nothing). */
  private removing: Promise<unknown> = Promise.resolve();
  /** The scheduler's `rollup-compaction` job: one run folds the backlog pass after pass. */
  private readonly compaction: JobHandle;
  private compactTimer: ReturnType<typeof setTimeout> | null = null;
  /** Kicked and not started yet (idle() waits for it). */
  private compactKicked = false;
  /** The compaction run in flight. */
  private compacting: Promise<void> | null = null;
  /** Where a pass's states are merged: off the main thread, on COMPACT_THREADS threads. */
  private readonly compactThread = new CompactThreads(COMPACT_THREADS);
  /** idle() callers waiting for the compaction to have nothing kicked or running. */
  private compactWaiters: Array<() => void> = [];
  private stopped = false;
  private unsubscribe: (() => void) | null = null;
  /** Revision each metric's stored rows are known to be of (older ones get dropped). */
  private readonly revisions = new Map<string, number>();

  private constructor(
    private readonly d: RollupDeps,
    readonly db: RollupStore,
  ) {
    this.pending = new PendingPartials(d.store);
    db.listener = {
      added: (id, _from, minutes) => this.sealed.writtenMinutes(id, minutes),
      dropped: (id) => this.sealed.changed(id),
    };
    this.reader = rollupReader(db, (id) => this.completeThrough(id));
    this.backfill = new MetricBackfiller({
      metrics: d.metrics,
      views: d.views,
      db,
      pending: this.pending,
      clock: d.clock,
      log: d.log,
      merged: () => this.requestCompaction(),
    });
    this.compaction = d.scheduler.register({
      name: 'rollup-compaction',
      schedule: { kick: true },
      run: ({ signal }) => this.compactRun(signal),
    });
  }

  static async open(d: RollupDeps): Promise<Rollups> {
    return new Rollups(d, await RollupStore.open(d.dataDir, d.duckdb));
  }

  read(q: Parameters<RollupReader['read']>[0]): ReturnType<RollupReader['read']> {
    return this.reader.read(q);
  }

  readColumns(q: Parameters<RollupReader['read']>[0]): Promise<StoredColumns> {
    return this.reader.readColumns!(q);
  }

  seriesWithData(q: Parameters<RollupReader['seriesWithData']>[0]): ReturnType<RollupReader['seriesWithData']> {
    return this.reader.seriesWithData(q);
  }

  /** The commit participant (after views). */
  participant(): CommitParticipant {
    return rollupCommitParticipant({
      metrics: this.d.metrics,
      pending: this.pending,
      clock: this.d.clock,
      merge: (key) => this.merge(key),
    }) as CommitParticipant;
  }

  /** Replay what a crash left pending, drop rows no metric needs, start the backfiller. */
  async start(): Promise<void> {
    for (const key of this.pending.keys()) {
      this.replays.add(key);
      this.merge(key);
    }
    for (const { metricId, revision } of await this.db.storedRevisions()) {
      const m = this.d.metrics.byId(metricId);
      if (!m || m.definition_revision !== revision) await this.dropOld(metricId);
      else this.revisions.set(metricId, revision);
    }
    this.unsubscribe = this.d.metrics.onChange((id) => {
      // Any change (update, rebuild, status, delete, restore): the metric's cached buckets are dropped.
      this.sealed.changed(id);
      const m = this.d.metrics.byId(id);
      if (m && this.revisions.get(id) === m.definition_revision) return;
      if (m) this.revisions.set(id, m.definition_revision);
      else this.revisions.delete(id);
      void this.dropOld(id).catch((err: unknown) =>
        this.d.log.error({ err, metric_id: id }, 'dropping old rollup rows failed; retried at the next start'),
      );
    });
    this.backfill.start();
    this.requestCompaction();
  }

  /** A batch's pending partials are durable in LMDB: merge them into DuckDB (in commit order). */
  merge(key: number): void {
    this.queue.add(key);
    this.draining ??= this.drain();
  }

  /**
   * Merges until the queue is empty. `draining` is cleared in the same tick as the last look at the
   * queue: cleared in a `.finally` callback (a microtask later), a batch queued in between would wait
   * for the next batch to be merged.
   */
  private async drain(): Promise<void> {
    try {
      await this.drainQueue();
    } finally {
      this.draining = null;
    }
  }

  private async drainQueue(): Promise<void> {
    while (this.queue.size > 0 && !this.stopped) {
      // Every batch queued meanwhile goes in the same DuckDB transaction (in commit order).
      const keys = [...this.queue].slice(0, MERGE_BATCHES);
      if (this.d.mergeDelayMs) await sleep(this.d.mergeDelayMs);
      try {
        const entries = keys.flatMap((batch) => {
          const entry = this.pending.get(batch);
          return entry ? [{ batch, metrics: entry.metrics }] : [];
        });
        if (entries.length > 0)
          await this.db.mergeBatches(
            entries,
            keys.some((k) => this.replays.has(k)),
          );
        for (const key of keys) {
          this.queue.delete(key);
          this.replays.delete(key);
        }
        // The next merge does not wait for these deletes: until one lands, its entry stays in LMDB
        // with its applied mark kept (pruneApplied), so a crash meanwhile replays it to nothing.
        const removed = Promise.all(keys.map((key) => this.pending.remove(key)));
        this.removing = Promise.all([this.removing, removed]).catch((err: unknown) =>
          this.d.log.error(
            { err, batches: keys },
            'removing merged rollup entries from LMDB failed; the next start replays them to nothing',
          ),
        );
        this.requestCompaction();
      } catch (err) {
        if (this.stopped) return;
        // Whether a failed commit left its marks behind is not known: the retry looks them up.
        for (const key of keys) this.replays.add(key);
        this.d.log.error({ err, batches: keys }, 'merging rollup partials into DuckDB failed; retrying');
        await sleep(RETRY_MS);
      }
    }
  }

  /** The compaction threads' heaps as their last pass ended, summed (null before one; the server's memory breakdown). */
  compactionHeap(): CompactThread['heap'] {
    return this.compactThread.heap;
  }

  /** Fold merged partials into the tiers soon (after merges made outside the commit, e.g. a late-data re-backfill). */
  requestCompaction(): void {
    if (this.compactTimer || this.stopped) return;
    this.compactTimer = setTimeout(() => {
      this.compactTimer = null;
      this.kickCompaction();
    }, COMPACT_DELAY_MS);
    this.compactTimer.unref();
  }

  private kickCompaction(): void {
    if (this.stopped) return;
    this.compactKicked = true;
    this.compaction.kick();
  }

  /**
   * The job's run: passes until no partial waits (a backlog is folded a bounded step at a time, for
   * memory), then the waiters of idle() are told. A failed pass is kicked again after RETRY_MS.
   */
  private compactRun(signal: AbortSignal): Promise<void> {
    this.compactKicked = false;
    const run = (async () => {
      try {
        while (!signal.aborted && !this.stopped && (await this.compactStep()));
      } catch (err) {
        if (this.stopped || signal.aborted) return;
        this.d.log.error({ err }, 'rollup compaction pass failed; retrying');
        setTimeout(() => this.requestCompaction(), RETRY_MS).unref();
      }
    })();
    this.compacting = run.finally(() => {
      this.compacting = null;
      if (!this.compactKicked) for (const w of this.compactWaiters.splice(0)) w();
    });
    return this.compacting;
  }

  /** One pass, then the metrics' compact progress and the applied marks no replay can need; true when partials remain. */
  private async compactStep(): Promise<boolean> {
    const { folded, more } = await compactPartials(
      this.db,
      (id) => this.d.metrics.byId(id)?.definition_revision ?? null,
      this.d.compactRows || undefined,
      this.compactThread.merge,
    );
    // Progress: rows folded so far of all there were and are (100 once none of the metric's wait).
    // Metrics this pass folded nothing of are looked at too: a backfill counts a merged file's rows
    // as waiting, and an earlier pass may have folded them already.
    const waiting = await this.db.partialsByMetric();
    const rows = new Map<string, number>();
    for (const f of folded.values()) {
      if (this.d.metrics.byId(f.metricId)?.definition_revision === f.revision)
        rows.set(f.metricId, (rows.get(f.metricId) ?? 0) + f.rows);
    }
    const at = new Date(this.d.clock.now()).toISOString();
    for (const { value: m } of this.d.metrics.store.metrics.all()) {
      const n = rows.get(m.id) ?? 0;
      const left = waiting.get(m.id) ?? 0;
      if (n === 0 && (left > 0 || m.compact_percent === 100 || m.compact_total_count === 0)) continue;
      const revision = m.definition_revision;
      await this.d.metrics.patchMetric(
        m.id,
        (cur) => {
          if (cur.definition_revision !== revision) return {};
          const done = cur.compact_completed_count + n;
          const total = done + left;
          return {
            compact_started_at: cur.compact_started_at ?? at,
            compact_total_count: total,
            compact_completed_count: done,
            compact_percent: left === 0 ? 100 : Math.floor((done / total) * 100),
          };
        },
        { notify: false },
      );
    }
    await this.db.pruneApplied(() => this.pending.keys());
    return more;
  }

  /** Remove rows and live marks of revisions the metric no longer has (all of them when it is gone). */
  private async dropOld(metricId: string): Promise<void> {
    const keep = this.d.metrics.byId(metricId)?.definition_revision ?? null;
    await this.db.dropMetric(metricId, keep);
    await this.pending.dropLive(metricId, keep);
  }

  /**
   * RollupReader.completeThrough: the minute floor of the oldest of now, the oldest spool entry of
   * the view's collection (received, not yet committed), the oldest minute still pending in LMDB,
   * and the oldest file the backfill has not counted. null while the metric is not backfilling or
   * active, or before its backfill planned its run.
   */
  completeThrough(metricId: string): number | null {
    const m = this.d.metrics.byId(metricId);
    if (!m || (m.status !== 'active' && m.status !== 'backfilling')) return null;
    const view = this.d.views.store.byId(m.view_id);
    const backfill = this.backfill.pendingFrom(m);
    if (!view || backfill === null) return null;
    let t = Math.min(this.d.clock.now(), backfill);
    const spooled = this.d.spool.oldestReceivedAt(view.root_collection_id);
    if (spooled !== null) t = Math.min(t, spooled);
    const pending = this.pending.oldestMinute(metricId);
    if (pending !== null) t = Math.min(t, pending);
    return Math.floor(t / 60_000) * 60_000;
  }

  /** Resolves once merges, the compaction and the backfill have nothing left (tests). */
  async idle(): Promise<void> {
    for (;;) {
      await this.draining;
      const removing = this.removing;
      await removing;
      await this.backfill.idle();
      if (this.compactTimer) {
        clearTimeout(this.compactTimer);
        this.compactTimer = null;
        this.kickCompaction();
      }
      if ((this.compactKicked || this.compacting) && !this.stopped)
        await new Promise<void>((r) => this.compactWaiters.push(r));
      // A merge since the await above may have LMDB deletes under way: go round again.
      if (this.queue.size === 0 && !this.draining && !this.compactTimer && this.removing === removing) return;
    }
  }

  /** After the pipeline stopped: finish the merges of committed batches, then close. */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    await this.backfill.stop();
    await this.draining;
    await this.removing;
    this.stopped = true;
    if (this.compactTimer) clearTimeout(this.compactTimer);
    // The scheduler stopped first (its runs are aborted between passes); a pass in flight ends here.
    await this.compaction.unregister();
    await this.compacting;
    for (const w of this.compactWaiters.splice(0)) w();
    await this.compactThread.stop();
    await this.db.close();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
