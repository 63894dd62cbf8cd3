import type { Database } from 'lmdb';
import type { Store } from '../store/db.js';
import type { MetricPartials } from './rollup-types.js';

/** One committed batch's partials awaiting their DuckDB merge. */
export interface PendingEntry {
  /** The metrics' partials of the batch (states as `encodeState` bytes). */
  metrics: MetricPartials[];
}

/**
 * The LMDB side of the rollups' exactly-once (docs/metrics.md, "Rollups"):
 *
 * - `rollup_pending`: batch key (the batch's first spool sequence, never reused) → its partials,
 *   staged in the spool's commit transaction and deleted once DuckDB holds them with the batch's
 *   applied mark;
 * - `rollup_live`: [metric id, revision] → the first spool sequence of a batch that committed live
 *   partials for that revision. View files of earlier batches (and every file the view's own
 *   backfill writes) are the metric backfill's; later ones were counted live.
 *
 * Also keeps, in memory, the oldest minute each pending entry holds per metric (completeThrough).
 */
export class PendingPartials {
  private readonly pending: Database<PendingEntry, number>;
  private readonly live: Database<number, [string, number]>;
  /** batch key → metric id → oldest minute in it. */
  private readonly oldest = new Map<number, Map<string, number>>();

  constructor(store: Store) {
    this.pending = store.db<PendingEntry, number>('rollup_pending');
    this.live = store.db<number, [string, number]>('rollup_live');
    for (const { key, value } of this.pending.getRange({})) this.remember(key, value);
  }

  /** Inside the spool's transaction: the batch's partials become pending. */
  stage(key: number, entry: PendingEntry): void {
    void this.pending.put(key, entry);
    this.remember(key, entry);
  }

  /** The batch did not commit after all (its stage ran in an aborted transaction). */
  forget(key: number): void {
    this.oldest.delete(key);
  }

  get(key: number): PendingEntry | undefined {
    return this.pending.get(key);
  }

  /** Keys of every pending entry, oldest first (start-up replay). */
  keys(): number[] {
    return [...this.pending.getKeys({})];
  }

  /** After DuckDB committed the entry with its applied mark. */
  async remove(key: number): Promise<void> {
    await this.pending.remove(key);
    this.oldest.delete(key);
  }

  /** Oldest minute of `metricId` still pending (not yet in DuckDB); null when none. */
  oldestMinute(metricId: string): number | null {
    let min: number | null = null;
    for (const m of this.oldest.values()) {
      const t = m.get(metricId);
      if (t !== undefined && (min === null || t < min)) min = t;
    }
    return min;
  }

  /** Inside a transaction: the first batch with live partials of this revision (kept once set). */
  stageLiveFrom(metricId: string, revision: number, seq: number): void {
    const cur = this.live.get([metricId, revision]);
    if (cur === undefined || seq < cur) void this.live.put([metricId, revision], seq);
  }

  liveFrom(metricId: string, revision: number): number | null {
    return this.live.get([metricId, revision]) ?? null;
  }

  /** Drop the live marks of every revision of `metricId` but `keep` (null: all). */
  async dropLive(metricId: string, keep: number | null): Promise<void> {
    const doomed = [...this.live.getKeys({ start: [metricId, 0], end: [metricId, Number.MAX_SAFE_INTEGER] })].filter(
      (k) => k[1] !== keep,
    );
    for (const k of doomed) await this.live.remove(k);
  }

  private remember(key: number, entry: PendingEntry): void {
    const m = new Map<string, number>();
    for (const p of entry.metrics) {
      for (const part of p.partials) {
        const cur = m.get(p.metricId);
        if (cur === undefined || part.minute < cur) m.set(p.metricId, part.minute);
      }
    }
    this.oldest.set(key, m);
  }
}
