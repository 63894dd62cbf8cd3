import type { CommitParticipant, CommittingBatch } from '../commit/batch-commit.js';

export type { AbandonedBatch, CommitParticipant, CommittingBatch } from '../commit/batch-commit.js';

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
