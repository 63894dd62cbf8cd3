import type { Database } from 'lmdb';
import type { Clock } from '../clock.js';
import type { Store } from '../store/db.js';
import { IDEMPOTENCY_TTL_MS } from './limits.js';
import { openPlain } from './spool.js';

/** The remembered outcome of an accepted request. */
export interface IdempotentResult {
  accepted: number;
}

interface StoredResult {
  at: number;
  accepted: number;
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
  private readonly running = new Map<string, Promise<IdempotentResult>>();

  constructor(private readonly store: Store, private readonly clock: Clock) {
    this.results = openPlain<StoredResult, string>(store, 'ingest_idempotency');
    this.expiry = openPlain<true, [number, string]>(store, 'ingest_idempotency_expiry');
  }

  /**
   * Run `fn` once per scoped key: a stored or in-flight result is returned instead (`replayed`).
   * `fn` receives `stage`, which it must call synchronously next to its spool put.
   */
  async run(scoped: string, fn: (stage: (result: IdempotentResult) => void) => Promise<IdempotentResult>): Promise<{ result: IdempotentResult; replayed: boolean }> {
    const pending = this.running.get(scoped);
    if (pending) return { result: await pending, replayed: true };
    const stored = this.results.get(scoped);
    const now = this.clock.now();
    if (stored && now - stored.at < IDEMPOTENCY_TTL_MS) return { result: { accepted: stored.accepted }, replayed: true };
    const stage = (result: IdempotentResult) => {
      const at = this.clock.now();
      this.results.put(scoped, { at, accepted: result.accepted });
      this.expiry.put([at, scoped], true);
    };
    const p = fn(stage);
    this.running.set(scoped, p);
    try {
      return { result: await p, replayed: false };
    } finally {
      this.running.delete(scoped);
    }
  }

  /** Forget results older than the TTL. Returns how many were removed. */
  async sweep(): Promise<number> {
    const cutoff = this.clock.now() - IDEMPOTENCY_TTL_MS;
    let removed = 0;
    await this.store.transaction(() => {
      for (const key of this.expiry.getKeys({ end: [cutoff, ''] })) {
        const current = this.results.get(key[1]);
        // A newer result under the same key (stored after an earlier one expired) stays.
        if (current && current.at === key[0]) this.results.remove(key[1]);
        this.expiry.remove(key);
        if (++removed >= 10_000) break;
      }
    });
    return removed;
  }
}
