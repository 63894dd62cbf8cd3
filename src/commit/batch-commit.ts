import type { CollectionRecord } from '../catalog/records.js';
import type { BatchPlan, SchemaBook } from '../schema/book.js';
import type { FileCounts, FileKind } from '../schema/schema-store.js';
import type { SpoolLease } from '../spool/spool.js';
import type { ViewOutcome } from '../transform/view-stage.js';

/*
 * The contract between the pipeline and the stages that commit a batch's output (schema, views,
 * rollups, late data, output consumers): what a batch's task returns, and how a stage joins the
 * commit. Below the pipeline, so the stages implement it without importing the runner
 * (pipeline/commit-seam.ts runs it).
 */

/** A task's cost on its worker thread: CPU, and time spent waiting for the main thread's plan. */
export interface TaskCost {
  /** The worker thread's id (worker_threads.threadId). */
  thread: number;
  cpuMs: number;
  planWaitMs: number;
  /**
   * The thread's V8 heap when the task ended (bytes): what a batch leaves allocated, garbage
   * included (the server's memory breakdown, docs/self-hosting.md "Memory"). Absent from builds that
   * do not report it.
   */
  heap?: { usedBytes: number; totalBytes: number; externalBytes: number };
}

/**
 * What one pipeline task returns (process-batch.ts): kept apart from the worker's code so the commit
 * seam and the stages reading a result depend on its shape only.
 */

export interface WrittenFile {
  kind: FileKind;
  dir: string;
  versionId: string | null;
  shapeHash: string | null;
  /** Path relative to the collection's files directory. */
  path: string;
  rows: number;
  bytes: number;
  docBytes: number;
  minTs: number;
  maxTs: number;
  counts: FileCounts;
}

export interface BatchResult {
  rows: number;
  files: WrittenFile[];
  /** One per task view, in task order. */
  views: ViewOutcome[];
  /**
   * Each output consumer's parts, by consumer name: one per view it consumes that produced output,
   * in view order (absent: no part at all). Read with output-consumer.ts `consumerOutputs`.
   */
  outputs?: Record<string, unknown[]>;
  /** What the task cost its worker (set by the worker entry; absent when run in-process). */
  cost?: TaskCost;
}

/**
 * The one commit seam (docs/architecture.md, "The commit"): every stage that produces durable
 * output joins a batch's commit through this interface instead of being wired into the runner.
 *
 * - `stage` runs inside the spool's LMDB write transaction that deletes the batch's entries, so its
 *   writes land exactly when the batch leaves the spool. It may throw `StaleBatchError` (the batch
 *   must run again) or any error (the transaction aborts; the batch is retried).
 * - `applyCommitted` runs once that transaction is durable: in-memory state follows. It must not
 *   throw; whatever it cannot do is rebuilt from LMDB on the next start.
 * - `abandon` runs when the batch did not commit: remove what the worker wrote for this stage.
 *
 * Participants run in the order they are listed (schema before views before rollups): a later one
 * may read what an earlier one staged in the same transaction.
 */
export interface CommitParticipant<Staged = unknown> {
  readonly name: string;
  stage(batch: CommittingBatch): Staged;
  applyCommitted(batch: CommittingBatch, staged: Staged): void;
  abandon?(batch: AbandonedBatch): void;
}

/** What a participant sees of a batch at commit time. */
export interface CommittingBatch {
  collection: CollectionRecord;
  lease: SpoolLease;
  plan: BatchPlan;
  /** The book the plan was made against (its generation tells a stale plan). */
  book: SchemaBook;
  result: BatchResult;
}

/** A batch that will not commit: the worker's result, if it got that far. */
export interface AbandonedBatch {
  collection: CollectionRecord;
  lease: SpoolLease;
  result: BatchResult | null;
}
