import type { Clock } from '../clock.js';
import type { CollectionRecord } from '../catalog/records.js';
import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import type { Spool, SpoolLease } from '../spool/spool.js';
import type { PipelineErrorReason } from '../telemetry/pipeline-telemetry.js';
import { rulesOf } from '../schema/rules.js';
import type { WorkerPool } from './pool.js';
import type { BatchResult } from './process-batch.js';
import { createBatchResolution } from './resolver.js';
import { StaleBatchError, type SchemaService } from '../schema/schema-service.js';
import { CollectionLane, type LaneSlot } from './collection-lane.js';
import { commitThroughSeam, type CommitParticipant } from './commit-seam.js';
import { BatchError, type TaskCost } from './failures.js';
import { schemaCommitParticipant } from '../schema/schema-commit.js';
import type { ViewTask } from '../transform/view-stage.js';
import type { JobHandle, Scheduler } from '../schedule/types.js';
import { RunnerCounters, type PipelineCounters } from './counters.js';
import { Leasing, packEntries } from './leasing.js';
import { SchemaDetector } from './schema-detector.js';
import { RETRY_MIN_MS, StepRetry, type StepOutcome } from './step-retry.js';
import { pipelineBatches, pipelineBatchSeconds, pipelineRecords } from '../self-metrics/registry.js';

export { isEnvironmental } from './failures.js';
export type { PipelineCounters } from './counters.js';
export { LEASE_MAX_BYTES, LEASE_MAX_RECORDS, LEASE_MIN_AHEAD_BYTES } from './leasing.js';
export { POISON_ATTEMPTS } from './step-retry.js';

/** Unclassified-retention sweep period. */
const RETENTION_SWEEP_MS = 3_600_000;

export interface RunnerDeps {
  spool: Spool;
  collections: {
    byId(id: string): CollectionRecord | undefined;
    /** Apply new identity rules (schema_detector auto); absent: proposals are only reported. */
    update?(
      sourceId: string,
      id: string,
      patch: (c: CollectionRecord) => Partial<CollectionRecord>,
    ): Promise<CollectionRecord | undefined>;
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
 * collection at once, one per free worker (leasing.ts) — run each on a worker, then commit what it
 * produced (schema, files, and every participant of the commit seam) in the LMDB transaction that
 * deletes its spool range, in spool order per collection. A crash before that commit replays the
 * batch; the files it had written are orphans the start-up sweep removes, so each acknowledged
 * record lands exactly once. A batch that fails is handled by the failure policy (step-retry.ts);
 * one that brought new shapes wakes the schema detector (schema-detector.ts).
 */
export class PipelineRunner {
  private inFlight = new Set<Promise<void>>();
  private stopped = false;
  private wake: ReturnType<typeof setTimeout> | null = null;
  private unsubscribe: (() => void) | null = null;
  private retentionJob: JobHandle | null = null;
  /** Per collection with batches in flight: their plan and commit order. */
  private readonly lanes = new Map<string, CollectionLane>();
  /** Everything a batch commits, schema first. */
  private readonly participants: CommitParticipant[];
  private readonly count = new RunnerCounters();
  private readonly leasing: Leasing;
  private readonly retry: StepRetry;
  private readonly detector: SchemaDetector;

  constructor(private readonly d: RunnerDeps) {
    this.participants = [schemaCommitParticipant(d.schema) as CommitParticipant, ...(d.participants ?? [])];
    this.leasing = new Leasing({
      spool: d.spool,
      workers: d.pool.size,
      maxRecords: d.leaseMaxRecords,
      maxBytes: d.leaseMaxBytes,
    });
    this.retry = new StepRetry({
      spool: d.spool,
      stageUnprocessable: (entry) => d.schema.stageUnprocessable(entry),
      log: d.log,
      telemetry: d.telemetry,
      counters: this.count,
      collectionExists: (id) => d.collections.byId(id) !== undefined,
      stopped: () => this.stopped,
      wakeIn: (ms) => this.schedule(ms),
      clock: d.clock,
    });
    this.detector = new SchemaDetector({ collections: d.collections, schema: d.schema, log: d.log, clock: d.clock });
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

  /** The runner's counters since start (a copy). */
  counters(): PipelineCounters {
    return this.count.snapshot();
  }

  /** Batches committed since start. */
  batches(): number {
    return this.count.batches;
  }

  /** Batches on a worker right now (one committing no longer counts). */
  running(): number {
    return this.leasing.running();
  }

  /**
   * How many leases a collection may hold: every worker while it flows (docs/architecture.md,
   * "Ordering"), one while a failing batch is being narrowed, none while backing off or while
   * batches of an ended epoch are still coming back.
   */
  private aheadOf(collectionId: string): number {
    if (this.lanes.get(collectionId)?.draining()) return 0;
    return this.retry.gate(collectionId) ?? this.leasing.aheadOf(collectionId);
  }

  /** Start as many batches as there are idle workers. */
  pump(): void {
    if (this.stopped) return;
    while (this.leasing.hasIdleWorker()) {
      const lease = this.count.timed('packMs', () =>
        this.leasing.lease(
          (id) => this.retry.limitOf(id),
          (id) => this.aheadOf(id),
        ),
      );
      if (!lease) break;
      this.count.leased(lease.records);
      const freeWorker = this.leasing.started(lease);
      const free = () => {
        if (freeWorker()) this.pump();
      };
      const p = this.runLease(lease, free).finally(() => {
        free();
        this.inFlight.delete(p);
        this.pump();
      });
      this.inFlight.add(p);
    }
    if (this.retry.backingOff()) this.schedule(RETRY_MIN_MS);
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
   * seam (commit-seam.ts), or is abandoned if it does not commit, and the failure policy decides
   * what becomes of the lease.
   */
  private async runLease(lease: SpoolLease, free: () => void): Promise<void> {
    const { spool, log } = this.d;
    const collection = this.d.collections.byId(lease.collectionId);
    if (!collection) {
      // Destroyed while queued: its spool entries go with it.
      await spool
        .complete(lease)
        .catch((err: unknown) => log.error({ err }, 'dropping a destroyed collection batch failed'));
      return;
    }
    const lane = this.laneOf(collection.id);
    const slot = lane.enter();
    const batch: BatchState = { result: null, cost: undefined, brought: false };
    let outcome: StepOutcome | undefined;
    try {
      outcome = await this.retry.withStepRetry(
        lease,
        () => this.runBatch(lease, collection, lane, slot, batch, free),
        async () => {
          pipelineBatches.inc({ outcome: 'failed' });
          this.count.wasted(batch.cost);
          if (slot.appliedAhead) await this.discardAppliedPlan(lane, slot, collection.id);
          for (const p of this.participants) p.abandon?.({ collection, lease, result: batch.result });
          return { laneLive: lane.live(slot) };
        },
      );
      if (outcome === 'committed') {
        this.count.committed(lease.records);
        pipelineBatches.inc({ outcome: 'committed' });
        pipelineRecords.inc(lease.records);
      }
    } finally {
      lane.leave(slot, outcome === 'committed');
      if (lane.size === 0) this.lanes.delete(collection.id);
    }
    // After the slot has left: the detector reads the report and may re-key the collection, which
    // must not hold the commits of the batches behind this one.
    if (outcome === 'committed' && batch.brought)
      await this.detector
        .detect(collection)
        .catch((err: unknown) => log.error({ err, collection_id: collection.id }, 'schema detector failed'));
  }

  /**
   * The batch step: plan against the collection's book in lane order, run the lease on a worker,
   * and commit its output through the seam in the spool transaction, at its turn. Throws when the
   * batch did not commit (the error the plan was refused for, when it was).
   */
  private async runBatch(
    lease: SpoolLease,
    collection: CollectionRecord,
    lane: CollectionLane,
    slot: LaneSlot,
    batch: BatchState,
    free: () => void,
  ): Promise<void> {
    const { spool, schema, pool, clock, log } = this.d;
    // Why the plan was refused: the worker only hears "error" and fails with a plain message.
    let refused: unknown = null;
    const startedAt = performance.now();
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
          this.count.planned(ms);
          batch.brought = plan.shapes.some((sh) => !book.shapes.has(sh.id));
          // Applied ahead: the next batch of the collection plans against this one's decisions.
          book.apply(plan);
          slot.appliedAhead = true;
          lane.markPlanned(slot);
        },
      });
      const { entries, buffer } = packEntries(lease);
      this.leasing.measured(lease, buffer.byteLength);
      try {
        batch.result = await pool.run(
          {
            collectionId: collection.id,
            projectId: collection.project_id,
            rules: rulesOf(collection),
            entries,
            firstSeq: lease.firstSeq,
            lastSeq: lease.lastSeq,
            filesDir: schema.filesDir(collection),
            views: this.d.viewTasks?.(collection.id) ?? [],
          },
          resolution.resolve,
          [buffer],
        );
        batch.cost = batch.result.cost;
      } catch (err) {
        if (err instanceof BatchError) batch.cost = err.cost;
        throw err;
      } finally {
        this.count.tally(batch.cost, lease.records);
      }
      free();
      const workerDoneAt = performance.now();
      const plan = resolution.plan();
      if (!plan) throw new Error('the batch finished without a plan');
      await lane.commitTurn(slot);
      const result = batch.result;
      // stageCommit throws StaleBatchError when the collection re-keyed while the batch ran (its
      // plan names pre-re-key shapes): the transaction aborts and the batch runs again.
      await commitThroughSeam(
        this.participants,
        { collection, lease, plan, book, result },
        (stage) => spool.complete(lease, () => this.count.timed('commitStageMs', stage)),
        (err, participant) =>
          log.error(
            { err, collection_id: collection.id, participant },
            'applying a committed batch failed; the next start rebuilds from LMDB',
          ),
      );
      lane.markCommitted(slot);
      const committedAt = performance.now();
      pipelineBatchSeconds.observe({ stage: 'worker' }, (workerDoneAt - startedAt) / 1000);
      pipelineBatchSeconds.observe({ stage: 'commit' }, (committedAt - workerDoneAt) / 1000);
      pipelineBatchSeconds.observe({ stage: 'total' }, (committedAt - startedAt) / 1000);
    } catch (err) {
      throw refused ?? err;
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

  /** Wait until nothing is waiting in the spool (tests, benchmarks), or the timeout passes. */
  async idle(timeoutMs = 30_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.inFlight.size === 0 && this.d.spool.pendingRecords() === 0 && this.d.spool.inFlightRecords() === 0)
        return true;
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

/** What the batch step learned that the runner needs after it: for the abandon, the counters and the detector. */
interface BatchState {
  result: BatchResult | null;
  cost: TaskCost | undefined;
  /** The plan brought shapes the book did not have (the detector then looks). */
  brought: boolean;
}
