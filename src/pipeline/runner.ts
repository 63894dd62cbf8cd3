import type { Clock } from '../clock.js';
import type { CollectionRecord } from '../catalog/records.js';
import { ApiError } from '../errors.js';
import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import type { Spool, SpoolLease } from '../spool/spool.js';
import type { PipelineErrorReason } from '../telemetry/pipeline-telemetry.js';
import type { SchemaProposal } from '../schema/proposals.js';
import { rulesOf } from '../schema/rules.js';
import type { WorkerPool } from './pool.js';
import type { BatchEntry } from '../records/decode.js';
import type { BatchResult } from './process-batch.js';
import { createBatchResolution } from './resolver.js';
import { StaleBatchError, type SchemaService } from '../schema/schema-service.js';
import { CollectionLane, LaneAborted, type LaneSlot } from './collection-lane.js';
import { commitThroughSeam, type CommitParticipant } from './commit-seam.js';
import { BatchError, causeOf, isEnvironmental, type TaskCost } from './failures.js';
import { schemaCommitParticipant } from '../schema/schema-commit.js';
import type { ViewTask } from '../transform/view-stage.js';
import type { JobHandle, Scheduler } from '../schedule/types.js';

export { isEnvironmental } from './failures.js';

/**
 * The task's entries over the lease's one buffer of bodies (spool.ts `SpoolLease.bodies`), whose
 * ArrayBuffer is transferred to the worker as it is: no copy here, none in the worker. The lease's
 * own views of it read as empty afterwards; a batch given back is leased again from the spool.
 */
function packEntries(lease: SpoolLease): { entries: BatchEntry[]; buffer: ArrayBuffer } {
  const entries = lease.entries.map((e): BatchEntry => ({ seq: e.seq, received_at: e.received_at, format: e.format, body: e.body }));
  return { entries, buffer: lease.bodies.buffer as ArrayBuffer };
}

/** Records per lease: large enough for good files, small enough to keep lag low. */
export const LEASE_MAX_RECORDS = 50_000;
/**
 * Body bytes per lease. 50,000 records of 4 KB would be one 200 MB lease: the first worker would
 * take a whole backlog of large records and the others wait (2 workers ran no faster than 1 on
 * the e2e bench's nested input). 50,000 flat records of ~200 bytes stay under it.
 */
export const LEASE_MAX_BYTES = 16 << 20;
/**
 * Body bytes a lease of a collection should have at least while another batch of it is on a
 * worker: a nested record's batch writes one file per schema version (~20 here) whatever its size,
 * and each file has a fixed Parquet cost (~2–3 ms for ~100 columns), so leasing ahead the few
 * requests that arrived meanwhile made small batches that cost more per record and left the big
 * one last (docs/benchmarks.md, "2w ÷ 1w").
 */
export const LEASE_MIN_AHEAD_BYTES = 8 << 20;
const RETRY_MIN_MS = 500;
/** The detector looks at a collection at most this often, after batches that brought new shapes. */
const DETECTOR_INTERVAL_MS = 10_000;
/** Unclassified-retention sweep period. */
const RETENTION_SWEEP_MS = 3_600_000;
const RETRY_MAX_MS = 30_000;
/**
 * Attempts on one batch before it is isolated: a batch of several spool entries is narrowed to its
 * first half; a lone entry is set aside as unprocessable (its records never block the collection).
 */
export const POISON_ATTEMPTS = 3;

/**
 * What the runner has done since start (benchmarks read them to tell where a second worker's gain
 * goes; docs/benchmarks.md). Times are milliseconds; the main thread's are its synchronous work.
 */
export interface PipelineCounters {
  leases: number;
  leasedRecords: number;
  committed: number;
  committedRecords: number;
  /** Batches given back to run again at once: planned against a replaced book, or behind a batch that did not commit. */
  reruns: number;
  rerunRecords: number;
  /** Batches that failed (retried with back-off, or isolated). */
  failed: number;
  /** Worker CPU of every task, and the part spent on tasks whose work was thrown away (reruns, failures). */
  workerCpuMs: number;
  wastedWorkerCpuMs: number;
  /** Time tasks held their worker waiting for the main thread's answers (shapes, the plan at its turn). */
  planWaitMs: number;
  /** Main thread: leasing (reading the bodies from LMDB into the buffer the worker gets), planning, staging commits in the spool transaction. */
  packMs: number;
  planMs: number;
  commitStageMs: number;
  /** Per worker thread (by thread id): tasks, their records, and their CPU. */
  threads: Record<number, { tasks: number; records: number; cpuMs: number }>;
}

function newCounters(): PipelineCounters {
  return { leases: 0, leasedRecords: 0, committed: 0, committedRecords: 0, reruns: 0, rerunRecords: 0, failed: 0, workerCpuMs: 0, wastedWorkerCpuMs: 0, planWaitMs: 0, packMs: 0, planMs: 0, commitStageMs: 0, threads: {} };
}

export interface RunnerDeps {
  spool: Spool;
  collections: {
    byId(id: string): CollectionRecord | undefined;
    /** Apply new identity rules (schema_detector auto); absent: proposals are only reported. */
    update?(sourceId: string, id: string, patch: (c: CollectionRecord) => Partial<CollectionRecord>): Promise<CollectionRecord | undefined>;
  };
  schema: SchemaService;
  /** The worker threads (pool.ts); tests pass a scripted stand-in. */
  pool: Pick<WorkerPool, 'size' | 'run' | 'destroy'>;
  clock: Clock;
  log: Logger;
  /** Counts entries set aside as unprocessable (reason `server_error`). */
  telemetry?: { recordError(projectId: string | null, reason: PipelineErrorReason): void };
  /** Typed field columns in collection files (default true; false: documents only — benchmarks compare). */
  typedColumns?: boolean;
  /** Stages that join each batch's commit after schema (views, rollups), in order. */
  participants?: CommitParticipant[];
  /** The views a batch of the collection feeds (none when absent). */
  viewTasks?: (collectionId: string) => ViewTask[];
  /** At start: remove the partial output of interrupted batches that the participants own; returns files removed. */
  sweep?: () => number;
  /** Records per lease (default LEASE_MAX_RECORDS; `SLUICE_LEASE_MAX_RECORDS`, for tests of many small batches). */
  leaseMaxRecords?: number;
  /** Body bytes per lease (default LEASE_MAX_BYTES). */
  leaseMaxBytes?: number;
  /** Runs the hourly unclassified-retention sweep; without one (tests, benchmarks) it runs only when called. */
  scheduler?: Scheduler;
}

/**
 * The pipeline's main-thread loop (docs/architecture.md): lease spool batches — several of one
 * collection at once, one per free worker — run each on a worker, then commit what it produced
 * (schema, files, and every participant of the commit seam) in the LMDB transaction that deletes
 * its spool range, in spool order per collection. A crash before that commit replays the batch;
 * the files it had written are orphans the start-up sweep removes, so each acknowledged record
 * lands exactly once.
 */
export class PipelineRunner {
  private inFlight = new Set<Promise<void>>();
  /** Batches on a worker right now (a batch that is committing no longer holds its worker). */
  private busy = 0;
  private stopped = false;
  private wake: ReturnType<typeof setTimeout> | null = null;
  private unsubscribe: (() => void) | null = null;
  /** Collections backing off after a failed batch: id → earliest retry time. */
  private readonly backoff = new Map<string, { until: number; delay: number }>();
  /** Consecutive failures of a collection's batch (same spool range). */
  private readonly failing = new Map<string, { firstSeq: number; attempts: number }>();
  /** Collections whose batches are narrowed to isolate a failing entry: records per lease, until a batch passes `untilSeq`. */
  private readonly narrow = new Map<string, { limit: number; untilSeq: number }>();
  private processedBatches = 0;
  private readonly detectedAt = new Map<string, number>();
  private retentionJob: JobHandle | null = null;
  /** Per collection with batches in flight: their plan and commit order. */
  private readonly lanes = new Map<string, CollectionLane>();
  /** Everything a batch commits, schema first. */
  private readonly participants: CommitParticipant[];
  /** Per collection: its batches on a worker now. */
  private readonly onWorker = new Map<string, number>();
  /** Per collection: body bytes per record of its last lease (sizes leases in records from bytes). */
  private readonly bytesPerRecord = new Map<string, number>();
  private readonly count = newCounters();

  constructor(private readonly d: RunnerDeps) {
    this.participants = [schemaCommitParticipant(d.schema) as CommitParticipant, ...(d.participants ?? [])];
  }

  start(): void {
    const removed = this.d.schema.sweepOrphans() + (this.d.sweep?.() ?? 0);
    if (removed > 0) this.d.log.info({ files: removed }, 'removed partial output of interrupted batches');
    this.unsubscribe = this.d.spool.onAppend(() => this.pump());
    this.retentionJob =
      this.d.scheduler?.register({
        name: 'pipeline-retention',
        schedule: { everyMs: RETENTION_SWEEP_MS },
        run: async () => void (await this.sweepRetention()),
      }) ?? null;
    this.pump();
  }

  /** Remove files of rows without a settled version past schema_unclassified_retention_days. */
  async sweepRetention(): Promise<number> {
    let removed = 0;
    for (const id of this.d.schema.knownCollections()) {
      const c = this.d.collections.byId(id);
      if (!c) continue;
      try {
        removed += await this.d.schema.purgeUnclassified(c);
      } catch (err) {
        this.d.log.error({ err, collection_id: id }, 'unclassified retention sweep failed');
      }
    }
    return removed;
  }

  /**
   * schema_detector auto: apply a safe proposal by itself — one no mapping reads inside that
   * merges shapes — by adding its path to the opaque paths and its tracked children to the tracked
   * paths (the collection re-keys on next use). manual: proposals wait in the report.
   */
  private async detect(c: CollectionRecord): Promise<void> {
    if (c.schema_detector !== 'auto' || !this.d.collections.update) return;
    const last = this.detectedAt.get(c.id) ?? 0;
    if (Date.now() - last < DETECTOR_INTERVAL_MS) return;
    this.detectedAt.set(c.id, Date.now());
    const report = await this.d.schema.report(c);
    const safe = await this.chooseProposals(c, report.proposals.filter((p) => !p.read_by_mapping), report.shapes.before);
    if (safe.length === 0) return;
    const updated = await this.d.collections.update(c.source_id, c.id, (cur) => ({
      schema_opaque_paths: [...cur.schema_opaque_paths, ...safe.map((p) => p.path)],
      schema_tracked_paths: [...cur.schema_tracked_paths, ...safe.flatMap((p) => p.tracked.map((t) => [...p.path, t]))],
    }));
    if (updated) await this.d.schema.rulesChanged(updated);
    this.d.log.info({ collection_id: c.id, paths: safe.map((p) => p.path) }, 'schema detector applied opaque paths');
  }

  /**
   * The proposals to apply together: all candidates at once must merge shapes (some only help
   * together: two invented-key maps in one record each keep shapes apart alone); then, one after
   * another, each is dropped again if the count without it is no higher — so only proposals that
   * take part in merging are applied.
   */
  private async chooseProposals(c: CollectionRecord, candidates: SchemaProposal[], before: number): Promise<SchemaProposal[]> {
    if (candidates.length === 0) return [];
    const current = rulesOf(c);
    const count = (ps: SchemaProposal[]) =>
      this.d.schema.shapesUnder(c, {
        ...current,
        opaquePaths: [...current.opaquePaths, ...ps.map((p) => p.path)],
        trackedPaths: [...current.trackedPaths, ...ps.flatMap((p) => p.tracked.map((t) => [...p.path, t]))],
      });
    let chosen = candidates;
    const best = await count(chosen);
    if (best >= before) return [];
    // Least helpful alone first: the first to be found unnecessary.
    for (const p of [...candidates].sort((a, b) => b.shapes_after - a.shapes_after)) {
      if (chosen.length === 1) break;
      const without = chosen.filter((x) => x !== p);
      if ((await count(without)) <= best) chosen = without;
    }
    return chosen;
  }

  /** The runner's counters since start (a copy). */
  counters(): PipelineCounters {
    return structuredClone(this.count);
  }

  /** Batches committed since start. */
  batches(): number {
    return this.processedBatches;
  }

  /** Batches on a worker right now (one committing no longer counts). */
  running(): number {
    return this.busy;
  }

  /**
   * How many leases a collection may hold: every worker while it flows (docs/architecture.md,
   * "Ordering"), one while a failing batch is being narrowed, none while backing off or while
   * batches of an ended epoch are still coming back.
   */
  private aheadOf(collectionId: string): number {
    const lane = this.lanes.get(collectionId);
    if (lane?.draining()) return 0;
    const b = this.backoff.get(collectionId);
    if (b && b.until > Date.now()) return 0;
    if (this.narrow.has(collectionId)) return 1;
    // Lease ahead only what is worth a batch of its own (floorRecords).
    if ((this.onWorker.get(collectionId) ?? 0) > 0 && this.d.spool.unleasedRecords(collectionId) < this.floorRecords(collectionId)) return 0;
    return this.d.pool.size;
  }

  private maxRecords(): number {
    return this.d.leaseMaxRecords || LEASE_MAX_RECORDS;
  }

  /**
   * Least records worth a lease ahead: LEASE_MIN_AHEAD_BYTES of the collection's records, at most a
   * quarter of a full lease (small records make few, large files anyway); a full lease while the
   * collection's record size is unknown.
   */
  private floorRecords(collectionId: string): number {
    const bpr = this.bytesPerRecord.get(collectionId);
    const max = this.maxRecords();
    if (bpr === undefined) return max;
    const minBytes = Math.min(LEASE_MIN_AHEAD_BYTES, (this.d.leaseMaxBytes || LEASE_MAX_BYTES) / 2);
    return Math.max(1, Math.min(Math.ceil(max / 4), Math.ceil(minBytes / bpr)));
  }

  /** Start as many batches as there are idle workers. */
  pump(): void {
    if (this.stopped) return;
    while (this.busy < this.d.pool.size) {
      const lease = this.timed('packMs', () =>
        this.d.spool.lease(
          this.d.leaseMaxRecords || LEASE_MAX_RECORDS,
          (id) => this.narrow.get(id)?.limit,
          (id) => this.aheadOf(id),
          this.d.leaseMaxBytes || LEASE_MAX_BYTES,
        ),
      );
      if (!lease) break;
      this.count.leases++;
      this.count.leasedRecords += lease.records;
      this.busy++;
      const cid = lease.collectionId;
      this.onWorker.set(cid, (this.onWorker.get(cid) ?? 0) + 1);
      let freed = false;
      const free = () => {
        if (freed) return;
        freed = true;
        this.busy--;
        const n = (this.onWorker.get(cid) ?? 1) - 1;
        if (n > 0) this.onWorker.set(cid, n);
        else this.onWorker.delete(cid);
        this.pump();
      };
      const p = this.runLease(lease, free).finally(() => {
        free();
        this.inFlight.delete(p);
        this.pump();
      });
      this.inFlight.add(p);
    }
    if (this.backoff.size > 0) this.schedule(RETRY_MIN_MS);
  }

  private laneOf(collectionId: string): CollectionLane {
    let lane = this.lanes.get(collectionId);
    if (!lane) this.lanes.set(collectionId, (lane = new CollectionLane(collectionId)));
    return lane;
  }

  private schedule(ms: number): void {
    if (this.wake || this.stopped) return;
    this.wake = setTimeout(() => {
      this.wake = null;
      this.pump();
    }, ms);
    this.wake.unref();
  }

  /**
   * Run one lease; `free` is called as soon as its worker is done (before the commit). The batch
   * plans and commits in its lane's order; everything it produced joins the commit through the
   * seam (commit-seam.ts), or is abandoned if it does not commit.
   */
  private async runLease(lease: SpoolLease, free: () => void): Promise<void> {
    const { spool, schema, pool, clock, log } = this.d;
    const collection = this.d.collections.byId(lease.collectionId);
    if (!collection) {
      // Destroyed while queued: its spool entries go with it.
      await spool.complete(lease).catch((err: unknown) => log.error({ err }, 'dropping a destroyed collection batch failed'));
      return;
    }
    const lane = this.laneOf(collection.id);
    const slot = lane.enter();
    let result: BatchResult | null = null;
    let cost: TaskCost | undefined;
    let ok = false;
    let brought = false;
    // Why the plan was refused: the worker only hears "error" and fails with a plain message.
    let refused: unknown = null;
    try {
      const book = await schema.book(collection);
      const resolution = createBatchResolution({
        book,
        settings: collection,
        nowMs: () => clock.now(),
        newVersionId: () => newId('schemaVersion'),
        typedColumns: this.d.typedColumns ?? true,
        planTurn: async () => {
          try {
            await lane.planTurn(slot);
            // The book was replaced while this batch waited (re-key, purge, an earlier plan that
            // did not commit as made): planning against the held one would be stale.
            if (book.generation !== schema.generation(collection.id)) throw new StaleBatchError(collection.id);
          } catch (err) {
            refused = err;
            throw err;
          }
        },
        onPlan: (plan, ms) => {
          this.count.planMs += ms;
          brought = plan.shapes.some((sh) => !book.shapes.has(sh.id));
          // Applied ahead: the next batch of the collection plans against this one's decisions.
          book.apply(plan);
          slot.appliedAhead = true;
          lane.markPlanned(slot);
        },
      });
      const { entries, buffer } = packEntries(lease);
      if (lease.records > 0) this.bytesPerRecord.set(collection.id, buffer.byteLength / lease.records);
      try {
        result = await pool.run(
          { collectionId: collection.id, projectId: collection.project_id, rules: rulesOf(collection), entries, firstSeq: lease.firstSeq, lastSeq: lease.lastSeq, filesDir: schema.filesDir(collection), views: this.d.viewTasks?.(collection.id) ?? [] },
          resolution.resolve,
          [buffer],
        );
        cost = result.cost;
      } catch (err) {
        if (err instanceof BatchError) cost = err.cost;
        throw err;
      } finally {
        this.tally(cost, lease.records);
      }
      free();
      const plan = resolution.plan();
      if (!plan) throw new Error('the batch finished without a plan');
      await lane.commitTurn(slot);
      // stageCommit throws StaleBatchError when the collection re-keyed while the batch ran (its
      // plan names pre-re-key shapes): the transaction aborts and the batch runs again.
      await commitThroughSeam(this.participants, { collection, lease, plan, book, result }, (stage) => spool.complete(lease, () => this.timed('commitStageMs', stage)), (err, participant) =>
        log.error({ err, collection_id: collection.id, participant }, 'applying a committed batch failed; the next start rebuilds from LMDB'),
      );
      ok = true;
      lane.markCommitted(slot);
      this.backoff.delete(collection.id);
      this.failing.delete(collection.id);
      const n = this.narrow.get(collection.id);
      if (n && lease.lastSeq >= n.untilSeq) this.narrow.delete(collection.id);
      this.processedBatches++;
      this.count.committed++;
      this.count.committedRecords += lease.records;
    } catch (err) {
      this.count.wastedWorkerCpuMs += cost?.cpuMs ?? 0;
      if (slot.appliedAhead) await this.discardAppliedPlan(lane, slot, collection.id);
      await this.notCommitted(lease, collection, slot, result, refused ?? err);
    } finally {
      lane.leave(slot, ok);
      if (lane.size === 0) this.lanes.delete(collection.id);
    }
    // After the slot has left: the detector reads the report and may re-key the collection, which
    // must not hold the commits of the batches behind this one.
    if (ok && brought) await this.detect(collection).catch((err: unknown) => log.error({ err, collection_id: collection.id }, 'schema detector failed'));
  }

  /** Count a task's cost on its worker (the counters; absent when the pool does not report it). */
  private tally(cost: TaskCost | undefined, records: number): void {
    if (!cost) return;
    this.count.workerCpuMs += cost.cpuMs;
    this.count.planWaitMs += cost.planWaitMs;
    const t = (this.count.threads[cost.thread] ??= { tasks: 0, records: 0, cpuMs: 0 });
    t.tasks++;
    t.records += records;
    t.cpuMs += cost.cpuMs;
  }

  /** Run `fn` on the main thread, adding the time it took to counter `key`. */
  private timed<T>(key: 'packMs' | 'commitStageMs', fn: () => T): T {
    const at = performance.now();
    try {
      return fn();
    } finally {
      this.count[key] += performance.now() - at;
    }
  }

  /**
   * A plan applied to the book ahead of its commit that will not commit leaves the book ahead of
   * LMDB: reload it, but only once the batches before this one have committed (their plans were
   * made against the same book and are sound; reloading now would make them stale and re-run
   * them). The batches behind it abort at once (`fail`), and none of the collection is leased
   * meanwhile. When an earlier batch failed too, its own reload has already discarded this plan.
   */
  private async discardAppliedPlan(lane: CollectionLane, slot: LaneSlot, collectionId: string): Promise<void> {
    if (!lane.live(slot)) return;
    lane.fail(slot);
    await lane.earlierDone(slot);
    if (lane.live(slot)) this.d.schema.invalidate(collectionId);
  }

  /** A batch that did not commit: abandon its output, then retry, re-run or isolate it. */
  private async notCommitted(lease: SpoolLease, collection: CollectionRecord, slot: LaneSlot, result: BatchResult | null, err: unknown): Promise<void> {
    const { spool, log } = this.d;
    for (const p of this.participants) p.abandon?.({ collection, lease, result });
    const lane = this.laneOf(collection.id);
    // Stale at the commit, the error comes wrapped by the store (the participant threw it inside
    // the spool's transaction).
    if (causeOf(err, StaleBatchError) || causeOf(err, LaneAborted) || !lane.live(slot)) {
      // Not a failure: an earlier batch did not commit, or the book changed. Given back, the
      // batch is leased again (once the lane has drained) under the current book.
      spool.release(lease);
      this.count.reruns++;
      this.count.rerunRecords += lease.records;
      return;
    }
    if ((err instanceof ApiError && err.code === 'source_deleted') || !this.d.collections.byId(lease.collectionId)) {
      // The collection is being destroyed (its spool drop fenced this batch off): nothing to retry.
      spool.release(lease);
      this.backoff.delete(lease.collectionId);
      this.failing.delete(lease.collectionId);
      this.narrow.delete(lease.collectionId);
      return;
    }
    this.count.failed++;
    // A full disk, too many open files, an I/O error: the machine's trouble, not the records'.
    // Such a batch is retried (with back-off) until it passes, never set aside.
    if (!isEnvironmental(err) && (await this.isolate(lease, err)) === 'set_aside') return;
    spool.release(lease);
    const prev = this.backoff.get(lease.collectionId)?.delay ?? 0;
    const delay = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, prev * 2));
    this.backoff.set(lease.collectionId, { until: Date.now() + delay, delay });
    if (!this.stopped) log.error({ err, collection_id: lease.collectionId, first_seq: lease.firstSeq, retry_in_ms: delay }, 'pipeline batch failed; it will be retried');
    this.schedule(delay);
  }

  /**
   * Count a failure of `lease`; at POISON_ATTEMPTS in a row, narrow the collection's batches to the
   * lease's first half of entries, or, when the lease is one entry, set that entry aside: copied
   * with the error to `pipeline_unprocessable` in the transaction that removes it from the spool,
   * counted as a pipeline error (`server_error`). Later records of the collection then flow.
   */
  private async isolate(lease: SpoolLease, err: unknown): Promise<'retry' | 'narrowed' | 'set_aside'> {
    const id = lease.collectionId;
    const f = this.failing.get(id);
    // Keyed by the first entry only: entries appended meanwhile may lengthen the retried lease.
    const attempts = f && f.firstSeq === lease.firstSeq ? f.attempts + 1 : 1;
    this.failing.set(id, { firstSeq: lease.firstSeq, attempts });
    if (attempts < POISON_ATTEMPTS || this.stopped) return 'retry';
    this.failing.delete(id);
    // Retry the narrowed batch promptly (the backoff starts over).
    this.backoff.set(id, { until: 0, delay: 0 });
    if (lease.entries.length > 1) {
      let half = 0;
      for (const e of lease.entries.slice(0, lease.entries.length >> 1)) half += e.records;
      this.narrow.set(id, { limit: Math.max(1, half), untilSeq: Math.max(lease.lastSeq, this.narrow.get(id)?.untilSeq ?? 0) });
      this.d.log.warn({ collection_id: id, first_seq: lease.firstSeq, last_seq: lease.lastSeq, attempts }, 'pipeline batch keeps failing; narrowing it to find the entry');
      return 'narrowed';
    }
    const e = lease.entries[0]!;
    const error = (err as Error)?.message ?? String(err);
    try {
      await this.d.spool.complete(lease, () => {
        // The lease's own copy went to the worker with its buffer: the body as stored.
        const body = this.d.spool.bodyOf(e.seq);
        if (!body) throw new Error(`spool entry ${e.seq} has no body to set aside`);
        this.d.schema.stageUnprocessable({ collection_id: id, project_id: lease.projectId, seq: e.seq, received_at: e.received_at, records: e.records, format: e.format, body, error, attempts });
      });
    } catch (err2) {
      this.d.log.error({ err: err2, collection_id: id, seq: e.seq }, 'setting an unprocessable entry aside failed');
      return 'retry';
    }
    this.backoff.delete(id);
    const n = this.narrow.get(id);
    if (n && lease.lastSeq >= n.untilSeq) this.narrow.delete(id);
    this.d.telemetry?.recordError(lease.projectId, 'server_error');
    this.d.log.error({ collection_id: id, seq: e.seq, records: e.records, attempts, error }, 'spool entry set aside as unprocessable');
    return 'set_aside';
  }

  /** Wait until nothing is waiting in the spool (tests, benchmarks), or the timeout passes. */
  async idle(timeoutMs = 30_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.inFlight.size === 0 && this.d.spool.pendingRecords() === 0 && this.d.spool.inFlightRecords() === 0) return true;
      this.pump();
      await new Promise((r) => setTimeout(r, 20));
    }
    return false;
  }

  /** Stop leasing, let batches in flight finish (and commit), close the pool. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.wake) clearTimeout(this.wake);
    const retentionStopped = this.retentionJob?.unregister();
    await Promise.allSettled([...this.inFlight]);
    await retentionStopped;
    await this.d.pool.destroy();
  }
}
