/**
 * Answered cells of sealed buckets, kept between aggregation answers (docs/metrics.md, "Aggregation",
 * "Sealed buckets"). A dashboard asks the same window every few seconds while only its newest
 * buckets change: the buckets behind the seal point are taken from here and DuckDB reads only the
 * rest.
 *
 * Correctness does not rest on the seal point (a guess at what no longer changes) but on the writes:
 * the rollup store reports every commit that adds rows (a live merge, a backfilled file, a late-data
 * re-backfill) with the oldest minute it touched, and every drop; a write below the oldest boundary
 * any answer may have cached from (the metric's ceiling, raised before the answer's read) bumps the
 * metric's generation, which makes every cached bucket of the metric unusable. A metric's change
 * (update, rebuild, delete, restore) bumps it too. Compaction is not reported: it folds rows that
 * are already read into coarser ones without changing any figure. In memory only: a restart starts
 * empty.
 */

/** One sealed bucket of one entry: per series (the entry's order) its answered row. */
export interface SealedBucket {
  /** Whether the series has records in the bucket. */
  hasData: Uint8Array;
  /** The row's JSON text (`"<start ISO>":[…]`), or null when the bucket is not answered for the series. */
  texts: Array<string | null>;
  /** series × width numbers (NaN for null), as RecordTable cells. */
  cells: Float64Array;
}

interface Entry {
  metricId: string;
  generation: number;
  buckets: Map<number, SealedBucket>;
  bytes: number;
  /** The last answer's run of cached buckets joined per series (the next answer in the same minute asks the same run). */
  lead: { first: number; count: number; json: Buffer[]; bytes: number } | null;
}

/** Default bound on the estimated memory of every cached bucket (64 MiB: ~60 answers of 24 h by minute over 10 series). */
export const SEALED_CACHE_BYTES = 64 * 1024 * 1024;
/** Buckets one entry keeps at most (two weeks of minutes: an answer has at most 10,080 buckets). */
const MAX_ENTRY_BUCKETS = 20_160;

export class SealedCells {
  private readonly entries = new Map<string, Entry>();
  private readonly metrics = new Map<string, { generation: number; ceiling: number }>();
  private bytes = 0;

  constructor(readonly maxBytes = SEALED_CACHE_BYTES) {}

  /**
   * Before an answer's read: the metric's generation now, and its ceiling raised to `sealBefore`, so
   * a write that lands below it from now on is seen as touching what this answer may cache.
   */
  begin(metricId: string, sealBefore: number): number {
    const m = this.metric(metricId);
    if (sealBefore > m.ceiling) m.ceiling = sealBefore;
    return m.generation;
  }

  /** The cached buckets under `key` while the metric is still at `generation` (most recently used). */
  get(key: string, generation: number): ReadonlyMap<number, SealedBucket> | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.generation !== generation) {
      this.drop(key, e);
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.buckets;
  }

  /** Keep buckets read under `generation`; nothing when the metric moved on meanwhile (what was read may be stale). */
  put(key: string, metricId: string, generation: number, buckets: ReadonlyArray<{ start: number; bucket: SealedBucket }>): void {
    if (buckets.length === 0 || this.metric(metricId).generation !== generation) return;
    let e = this.entries.get(key);
    if (e && e.generation !== generation) {
      this.drop(key, e);
      e = undefined;
    }
    if (!e) this.entries.set(key, (e = { metricId, generation, buckets: new Map(), bytes: 0, lead: null }));
    for (const { start, bucket } of buckets) {
      const old = e.buckets.get(start);
      if (old) this.account(e, -bucketBytes(old));
      e.buckets.set(start, bucket);
      this.account(e, bucketBytes(bucket));
    }
    if (e.buckets.size > MAX_ENTRY_BUCKETS) {
      const starts = [...e.buckets.keys()].sort((a, b) => a - b);
      for (const s of starts.slice(0, e.buckets.size - MAX_ENTRY_BUCKETS)) {
        this.account(e, -bucketBytes(e.buckets.get(s)!));
        e.buckets.delete(s);
      }
    }
    // Least recently used entries go first; the one just written last (unless it alone is too big).
    for (const [k, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(k, old);
    }
  }

  /**
   * The JSON text of the `count` cached buckets from `first` joined per series (`make` builds it),
   * kept for the next answer of the same run: within a minute a dashboard's polls ask the same one.
   */
  lead(key: string, generation: number, first: number, count: number, make: () => Buffer[]): Buffer[] {
    const e = this.entries.get(key);
    if (e && e.generation === generation && e.lead?.first === first && e.lead.count === count) return e.lead.json;
    const json = make();
    if (e && e.generation === generation) {
      if (e.lead) this.account(e, -e.lead.bytes);
      const bytes = json.reduce((n, b) => n + b.byteLength + 64, 0);
      e.lead = { first, count, json, bytes };
      this.account(e, bytes);
    }
    return json;
  }

  /** The rollup store committed rows of `metricId` from minute `from` on. */
  written(metricId: string, from: number): void {
    const m = this.metrics.get(metricId);
    if (m && from < m.ceiling) this.changed(metricId);
  }

  /** Everything cached of `metricId` is stale (its rows were dropped, or the metric changed). */
  changed(metricId: string): void {
    const m = this.metric(metricId);
    m.generation++;
    for (const [k, e] of this.entries) if (e.metricId === metricId) this.drop(k, e);
  }

  /** Estimated bytes held (tests, docs). */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  private metric(metricId: string): { generation: number; ceiling: number } {
    let m = this.metrics.get(metricId);
    if (!m) this.metrics.set(metricId, (m = { generation: 0, ceiling: -Infinity }));
    return m;
  }

  private account(e: Entry, bytes: number): void {
    e.bytes += bytes;
    this.bytes += bytes;
  }

  private drop(key: string, e: Entry): void {
    this.entries.delete(key);
    this.bytes -= e.bytes;
  }
}

/** A bucket's estimated heap: its texts (one byte a character plus a string header) and arrays. */
function bucketBytes(b: SealedBucket): number {
  let n = 96 + b.hasData.length + b.cells.byteLength + 8 * b.texts.length;
  for (const t of b.texts) if (t !== null) n += 24 + t.length;
  return n;
}
