import type { CollectionRecord } from '../catalog/records.js';
import type { BatchPlan, SchemaBook } from '../schema/book.js';
import type { SpoolLease } from '../spool/spool.js';
import type { BatchResult } from './batch-result.js';

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

/**
 * Run `participants`' stages inside `withinTransaction` (the spool's completion), then apply each
 * once it is durable. Returns after the apply step.
 */
export async function commitThroughSeam(
  participants: readonly CommitParticipant[],
  batch: CommittingBatch,
  withinTransaction: (stage: () => void) => Promise<void>,
  onApplyError: (err: unknown, participant: string) => void,
): Promise<void> {
  const staged: unknown[] = [];
  await withinTransaction(() => {
    // A transaction that is retried starts over: nothing staged before counts.
    staged.length = 0;
    for (const p of participants) staged.push(p.stage(batch));
  });
  // Committed from here on: an apply that throws must not make the batch look uncommitted (its
  // output would be abandoned and the batch run again).
  participants.forEach((p, i) => {
    try {
      p.applyCommitted(batch, staged[i]);
    } catch (err) {
      onApplyError(err, p.name);
    }
  });
}
