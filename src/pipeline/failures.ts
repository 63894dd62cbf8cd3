/**
 * The pipeline's failure kinds as values (docs/architecture.md, "Failures"). A worker classifies
 * its own error where the error still carries its `code` (errors cross the thread boundary as
 * plain messages), and the main thread branches on the kind, never on message text.
 */
import type { TaskCost } from '../commit/batch-commit.js';

export type { TaskCost };

/** `environmental`: the machine failed (disk full, descriptors), retry until it clears; `batch`: the batch's own trouble. */
export type BatchFailureKind = 'environmental' | 'batch';

/** What a worker returns instead of throwing. */
export interface BatchFailure {
  failed: true;
  kind: BatchFailureKind;
  message: string;
  /** What the task cost its worker before it failed (the pipeline's counters). */
  cost?: TaskCost;
}

/** A worker's failure, thrown on the main thread by the pool. */
export class BatchError extends Error {
  constructor(
    readonly kind: BatchFailureKind,
    message: string,
    readonly cost?: TaskCost,
  ) {
    super(message);
    this.name = 'BatchError';
  }
}

/** errno codes (and LMDB conditions) that say the environment failed, not the input. */
const ENVIRONMENTAL_CODE = /\b(ENOSPC|EDQUOT|EIO|EMFILE|ENFILE|EROFS|ENOMEM|EAGAIN|EBUSY|MDB_MAP_FULL|MDB_TXN_FULL)\b/;
/** Codes are matched in capitals only (a path or key spelling `eio` says nothing); these phrases in any case. */
const ENVIRONMENTAL_TEXT = /no space left on device|too many open files/i;

/**
 * Whether `err` (or an error it wraps) comes from the machine rather than the batch: such a
 * failure clears when space or descriptors are freed, so the batch must wait, not be set aside.
 * Native libraries (LMDB, parquet-wasm's fs writes) report some conditions in the message only.
 */
export function isEnvironmental(err: unknown): boolean {
  if (err instanceof BatchError) return err.kind === 'environmental';
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof BatchError) return e.kind === 'environmental';
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && ENVIRONMENTAL_CODE.test(code)) return true;
    if (typeof message === 'string' && (ENVIRONMENTAL_CODE.test(message) || ENVIRONMENTAL_TEXT.test(message)))
      return true;
  }
  return false;
}

/**
 * `err` itself or an error it wraps (`cause`) of class `type`. The store turns whatever a
 * transaction callback throws into a catalogue error carrying it as `cause`, so a participant's
 * StaleBatchError reaches the runner wrapped.
 */
export function causeOf<T>(err: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++)
    if (e instanceof type) return e;
  return undefined;
}

/** A worker's thrown error as a value. */
export function failureOf(err: unknown): BatchFailure {
  return {
    failed: true,
    kind: isEnvironmental(err) ? 'environmental' : 'batch',
    message: (err as Error)?.message ?? String(err),
  };
}
