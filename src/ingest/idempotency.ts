import { createHash } from 'node:crypto';
import type { Database } from 'lmdb';
import type { Clock } from '../clock.js';
import { ApiError } from '../errors.js';
import { openPlain, type Store } from '../store/db.js';
import { IDEMPOTENCY_TTL_MS } from './limits.js';

/** The remembered outcome of an accepted request. */
export interface IdempotentResult {
  accepted: number;
}

interface StoredResult {
  at: number;
  accepted: number;
  /** `requestHash` of the request that stored it (absent in results stored before it was kept). */
  hash?: string;
}

/** Expired results removed per write transaction by `sweep` (it yields between chunks). */
export const SWEEP_CHUNK = 10_000;

/**
 * Fingerprint of an ingest request for its idempotency record: the collection slug and the body
 * bytes (decompressed, without a BOM). A retry must carry the same; a different request under the
 * same key is refused rather than answered with the first one's result.
 */
export function requestHash(collection: string, body: Uint8Array): string {
  return createHash('sha256').update(collection).update('\0').update(body).digest('base64url');
}

/**
 * Idempotency keys of ingest requests. A key is scoped to its ingest key (`<ingest key id>:<key>`).
 * The result is written in the same LMDB commit as the spool entry (so a crash cannot leave one
 * without the other), kept for IDEMPOTENCY_TTL_MS, and concurrent duplicates share one execution.
 * Only successes are remembered: a refused request may be retried with the same key.
 */
export class IdempotencyStore {
  private readonly results: Database<StoredResult, string>;
  /** Expiry order: [stored at, scoped key] → true; a sweep walks it from the oldest. */
  private readonly expiry: Database<true, [number, string]>;
  private readonly running = new Map<string, { promise: Promise<IdempotentResult>; hash: string | undefined }>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {
    this.results = openPlain<StoredResult, string>(store, 'ingest_idempotency');
    this.expiry = openPlain<true, [number, string]>(store, 'ingest_idempotency_expiry');
  }

  /** Whether a result is stored (or being stored) for `scoped`: a retry is answered without admission. */
  has(scoped: string): boolean {
    if (this.running.has(scoped)) return true;
    const stored = this.results.get(scoped);
    return stored !== undefined && this.clock.now() - stored.at < IDEMPOTENCY_TTL_MS;
  }

  /**
   * Run `fn` once per scoped key: a stored or in-flight result is returned instead (`replayed`).
   * `fn` receives `stage`, which it must call synchronously next to its spool put. `hash`
   * (`requestHash`) must match the first request's: otherwise `idempotency_key_reused` (409).
   */
  async run(
    scoped: string,
    hash: string | undefined,
    fn: (stage: (result: IdempotentResult) => void) => Promise<IdempotentResult>,
  ): Promise<{ result: IdempotentResult; replayed: boolean }> {
    const pending = this.running.get(scoped);
    if (pending) {
      checkSame(pending.hash, hash);
      return { result: await pending.promise, replayed: true };
    }
    const stored = this.results.get(scoped);
    const now = this.clock.now();
    if (stored && now - stored.at < IDEMPOTENCY_TTL_MS) {
      checkSame(stored.hash, hash);
      return { result: { accepted: stored.accepted }, replayed: true };
    }
    const stage = (result: IdempotentResult) => {
      const at = this.clock.now();
      this.results.put(
        scoped,
        hash === undefined ? { at, accepted: result.accepted } : { at, accepted: result.accepted, hash },
      );
      this.expiry.put([at, scoped], true);
    };
    const p = fn(stage);
    this.running.set(scoped, { promise: p, hash });
    try {
      return { result: await p, replayed: false };
    } finally {
      this.running.delete(scoped);
    }
  }

  /**
   * Forget every result older than the TTL, `SWEEP_CHUNK` per write transaction, yielding to the
   * event loop between chunks (ingest keeps its commits going). Returns how many were removed.
   */
  async sweep(): Promise<number> {
    const cutoff = this.clock.now() - IDEMPOTENCY_TTL_MS;
    let removed = 0;
    for (;;) {
      let chunk = 0;
      await this.store.transaction(() => {
        for (const key of this.expiry.getKeys({ end: [cutoff, ''], limit: SWEEP_CHUNK })) {
          const current = this.results.get(key[1]);
          // A newer result under the same key (stored after an earlier one expired) stays.
          if (current && current.at === key[0]) this.results.remove(key[1]);
          this.expiry.remove(key);
          chunk++;
        }
      });
      removed += chunk;
      if (chunk < SWEEP_CHUNK) return removed;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

/** A retry must be the same request as the first one under its key (unknown on either side passes). */
function checkSame(first: string | undefined, retry: string | undefined): void {
  if (first === undefined || retry === undefined || first === retry) return;
  throw new ApiError(
    'idempotency_key_reused',
    'This idempotency key (Idempotency-Key, or WebSocket stream and seq) was already used within 24 hours for a different request (another body or collection); nothing was stored. Send new data under a new key',
  );
}
