import { systemClock, type Clock } from '../clock.js';
import { ApiError } from '../errors.js';
import type { Logger } from '../log.js';
import type { UnprocessableEntry } from '../schema/schema-store.js';
import { StaleBatchError } from '../schema/schema-service.js';
import type { Spool, SpoolLease } from '../spool/spool.js';
import type { PipelineErrorReason } from '../telemetry/pipeline-telemetry.js';
import { LaneAborted } from './collection-lane.js';
import type { RunnerCounters } from './counters.js';
import { causeOf, isEnvironmental } from './failures.js';

/** Back-off after a failed batch: it starts here and doubles per failure in a row … */
export const RETRY_MIN_MS = 500;
/** … up to this. */
export const RETRY_MAX_MS = 30_000;
/**
 * Attempts on one batch before it is isolated: a batch of several spool entries is narrowed to its
 * first half; a lone entry is set aside as unprocessable (its records never block the collection).
 */
export const POISON_ATTEMPTS = 3;

/**
 * What a batch step's failure is (docs/architecture.md, "Failures"):
 * - `rerun`: not a failure — the book changed under the batch (StaleBatchError, also wrapped by the
 *   store), or an earlier batch of its lane did not commit (LaneAborted, or the lane ended its slot's
 *   epoch): given back to run again at once.
 * - `gone`: the collection is being destroyed (`source_deleted`, or no longer found): nothing to retry.
 * - `environmental`: the machine's trouble (disk full, descriptors, I/O): retried with back-off until
 *   it passes, never set aside.
 * - `batch`: the batch's own trouble: retried with back-off, isolated after POISON_ATTEMPTS in a row.
 */
export type FailureClass = 'rerun' | 'gone' | 'environmental' | 'batch';

/** Classify `err`, thrown by a batch step; `laneLive`: the batch's lane slot is still of the current epoch. */
export function classifyFailure(err: unknown, at: { laneLive: boolean; collectionExists: boolean }): FailureClass {
  if (causeOf(err, StaleBatchError) || causeOf(err, LaneAborted) || !at.laneLive) return 'rerun';
  if ((err instanceof ApiError && err.code === 'source_deleted') || !at.collectionExists) return 'gone';
  return isEnvironmental(err) ? 'environmental' : 'batch';
}

/**
 * How a batch step ended: `committed`; `rerun` and `dropped` (given back, see FailureClass);
 * `retry` (given back, leased again after the back-off); `narrowed` (given back, the collection's
 * next batches are cut to the failing lease's first half); `set_aside` (its one entry moved to
 * `pipeline_unprocessable` and removed from the spool).
 */
export type StepOutcome = 'committed' | 'rerun' | 'dropped' | 'retry' | 'narrowed' | 'set_aside';

export interface StepRetryDeps {
  spool: Pick<Spool, 'release' | 'complete' | 'bodyOf'>;
  /** Stage an entry set aside (inside the spool transaction that removes it): schema-service `stageUnprocessable`. */
  stageUnprocessable(entry: Omit<UnprocessableEntry, 'id' | 'set_aside_at'>): void;
  log: Logger;
  /** Counts entries set aside as unprocessable (reason `server_error`). */
  telemetry?: { recordError(projectId: string | null, reason: PipelineErrorReason): void } | undefined;
  counters: RunnerCounters;
  /** Whether the collection still exists (a failure of a collection being destroyed is not retried). */
  collectionExists(collectionId: string): boolean;
  /** The runner is stopping: no more isolation steps, no error logs for batches cut short. */
  stopped(): boolean;
  /** Lease again in `ms` (the back-off is over then). */
  wakeIn(ms: number): void;
  /** The time back-offs are measured on (the runner's; default the system clock). */
  clock?: Clock;
}

/**
 * The pipeline's failure policy as a wrapper around the batch step (PostHog's `withStepRetry` is
 * the model): the step runs; when it throws, the caller abandons what the step produced, and the
 * policy decides from the failure's class whether the lease is run again at once, dropped, retried
 * with back-off, narrowed, or its one entry set aside. It keeps the per-collection state that
 * decides: back-off, failures in a row, and narrowing; `gate` and `limitOf` feed it to leasing.
 */
export class StepRetry {
  /** Collections backing off after a failed batch: id → earliest retry time. */
  private readonly backoff = new Map<string, { until: number; delay: number }>();
  /** Consecutive failures of a collection's batch (same spool range). */
  private readonly failing = new Map<string, { firstSeq: number; attempts: number }>();
  /** Collections whose batches are narrowed to isolate a failing entry: records per lease, until a batch passes `untilSeq`. */
  private readonly narrow = new Map<string, { limit: number; untilSeq: number }>();

  private readonly clock: Clock;

  constructor(private readonly d: StepRetryDeps) {
    this.clock = d.clock ?? systemClock;
  }

  /**
   * Run `step` on `lease`. When it throws, `abandon` runs first (undo what the step produced; it
   * answers whether the batch's lane slot is still live), then the policy decides; the lease is
   * given back to the spool or completed here in every failure outcome.
   */
  async withStepRetry(
    lease: SpoolLease,
    step: () => Promise<void>,
    abandon: (err: unknown) => Promise<{ laneLive: boolean }>,
  ): Promise<StepOutcome> {
    try {
      await step();
    } catch (err) {
      const { laneLive } = await abandon(err);
      const kind = classifyFailure(err, { laneLive, collectionExists: this.d.collectionExists(lease.collectionId) });
      return this.failed(lease, err, kind);
    }
    this.passed(lease);
    return 'committed';
  }

  /**
   * Leases the collection may hold as far as the policy goes: 0 while it backs off, 1 while a
   * failing batch is narrowed, undefined when the policy does not limit it.
   */
  gate(collectionId: string): number | undefined {
    const b = this.backoff.get(collectionId);
    if (b && b.until > this.clock.now()) return 0;
    if (this.narrow.has(collectionId)) return 1;
    return undefined;
  }

  /** Records per lease of a collection being narrowed, else undefined. */
  limitOf(collectionId: string): number | undefined {
    return this.narrow.get(collectionId)?.limit;
  }

  /** Whether some collection is backing off (the loop must wake to lease it again). */
  backingOff(): boolean {
    return this.backoff.size > 0;
  }

  /** A batch committed: its collection's failure state ends (narrowing once past the failing range). */
  private passed(lease: SpoolLease): void {
    const id = lease.collectionId;
    this.backoff.delete(id);
    this.failing.delete(id);
    const n = this.narrow.get(id);
    if (n && lease.lastSeq >= n.untilSeq) this.narrow.delete(id);
  }

  private async failed(lease: SpoolLease, err: unknown, kind: FailureClass): Promise<StepOutcome> {
    const { spool, log, counters } = this.d;
    const id = lease.collectionId;
    if (kind === 'rerun') {
      // Given back, the batch is leased again (once the lane has drained) under the current book.
      spool.release(lease);
      counters.rerun(lease.records);
      return 'rerun';
    }
    if (kind === 'gone') {
      // The collection's spool drop fenced this batch off.
      spool.release(lease);
      this.backoff.delete(id);
      this.failing.delete(id);
      this.narrow.delete(id);
      return 'dropped';
    }
    counters.failed();
    let outcome: StepOutcome = 'retry';
    if (kind === 'batch') {
      outcome = await this.isolate(lease, err);
      if (outcome === 'set_aside') return outcome;
    }
    spool.release(lease);
    const prev = this.backoff.get(id)?.delay ?? 0;
    const delay = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, prev * 2));
    this.backoff.set(id, { until: this.clock.now() + delay, delay });
    if (!this.d.stopped())
      log.error(
        { err, collection_id: id, first_seq: lease.firstSeq, retry_in_ms: delay },
        'pipeline batch failed; it will be retried',
      );
    this.d.wakeIn(delay);
    return outcome;
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
    if (attempts < POISON_ATTEMPTS || this.d.stopped()) return 'retry';
    this.failing.delete(id);
    // Retry the narrowed batch promptly (the backoff starts over).
    this.backoff.set(id, { until: 0, delay: 0 });
    if (lease.entries.length > 1) {
      let half = 0;
      for (const e of lease.entries.slice(0, lease.entries.length >> 1)) half += e.records;
      this.narrow.set(id, {
        limit: Math.max(1, half),
        untilSeq: Math.max(lease.lastSeq, this.narrow.get(id)?.untilSeq ?? 0),
      });
      this.d.log.warn(
        { collection_id: id, first_seq: lease.firstSeq, last_seq: lease.lastSeq, attempts },
        'pipeline batch keeps failing; narrowing it to find the entry',
      );
      return 'narrowed';
    }
    const e = lease.entries[0]!;
    const error = (err as Error)?.message ?? String(err);
    try {
      await this.d.spool.complete(lease, () => {
        // The lease's own copy went to the worker with its buffer: the body as stored.
        const body = this.d.spool.bodyOf(e.seq);
        if (!body) throw new Error(`spool entry ${e.seq} has no body to set aside`);
        this.d.stageUnprocessable({
          collection_id: id,
          project_id: lease.projectId,
          seq: e.seq,
          received_at: e.received_at,
          records: e.records,
          format: e.format,
          body,
          error,
          attempts,
        });
      });
    } catch (err2) {
      this.d.log.error({ err: err2, collection_id: id, seq: e.seq }, 'setting an unprocessable entry aside failed');
      return 'retry';
    }
    this.backoff.delete(id);
    const n = this.narrow.get(id);
    if (n && lease.lastSeq >= n.untilSeq) this.narrow.delete(id);
    this.d.telemetry?.recordError(lease.projectId, 'server_error');
    this.d.log.error(
      { collection_id: id, seq: e.seq, records: e.records, attempts, error },
      'spool entry set aside as unprocessable',
    );
    return 'set_aside';
  }
}
