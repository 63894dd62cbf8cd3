/**
 * Answered cells of sealed buckets, kept between aggregation answers (docs/metrics.md, "Aggregation",
 * "Sealed buckets"). A dashboard asks the same window every few seconds while only its newest
 * buckets change: the buckets behind the seal point are taken from here and DuckDB reads only the
 * rest.
 *
 * Correctness does not rest on the seal point (a guess at what no longer changes) but on the writes:
 * the rollup store reports, after its commit, every write that adds rows (a live merge, a backfilled
 * file, a late-data re-backfill) with the oldest minute it touched, and every drop; a write below the
 * metric's ceiling (the latest seal point any answer read to, raised before that answer's read) bumps
 * the metric's generation, which makes every cached bucket of the metric unusable, and an answer
 * keeps what it read only while the generation it started with is current. A metric's change
 * (update, rebuild, delete, restore) bumps it too. Compaction is not reported: it folds rows that
 * are already read into coarser ones without changing any figure. In memory only: a restart starts
 * empty.
 */

import type { RecordTable } from './series-records.js';

/**
 * Sealed buckets kept by one answer: a run of `starts.length` buckets. Per (bucket, series) — index
 * `bucket × series + j`, in the entry's series order — whether it has records, whether it is
 * answered, and its numbers (`width` each, NaN for null, as RecordTable cells). Per series, the JSON
 * text of its answered rows (`"<start ISO>":[…]`) joined by commas as UTF-8 bytes, with the offset
 * where each bucket's text begins (`offsets[i]`; `offsets[m]` is the length + 1, as if a comma
 * followed the last row; a bucket without a row takes no bytes). Bytes and typed arrays, not a string
 * per row: a cold 24 h by-minute answer keeps 14,400 rows, which as strings would all be promoted by
 * the garbage collector.
 */
export interface SealedBlock {
  starts: readonly number[];
  series: number;
  width: number;
  hasData: Uint8Array;
  answered: Uint8Array;
  cells: Float64Array;
  json: Buffer[];
  offsets: Int32Array[];
  /** Estimated bytes (set when kept). */
  bytes: number;
  /** Buckets of the block still indexed by its entry (the block's bytes are freed when none are). */
  live: number;
}

/** One cached bucket: its block and index in it. */
export interface SealedRef {
  block: SealedBlock;
  i: number;
}

interface Entry {
  metricId: string;
  /** Entries of one family replace each other (sealed-answer.ts `family`), or null. */
  family: string | null;
  generation: number;
  buckets: Map<number, SealedRef>;
  bytes: number;
  /** The last answer's run of cached buckets joined per series (the next answer in the same minute asks the same run). */
  lead: { first: number; count: number; json: Buffer[]; bytes: number } | null;
  /** The tables of the last answer whose buckets were all cached, for its boundaries (the same array: buckets.ts keeps one per recent window). */
  whole: { boundaries: readonly number[]; answer: WholeAnswer; bytes: number } | null;
}

/** An answer's tables and the candidates with data, when every one of its buckets was cached. */
export interface WholeAnswer {
  tables: RecordTable[];
  withData: ReadonlySet<string>;
}

/** Default bound on the estimated memory of every cached bucket (64 MiB: ~35 answers of 24 h by minute over 10 series, each ~1 MB of buckets and ~0.7 MB of joined text). */
export const SEALED_CACHE_BYTES = 64 * 1024 * 1024;
/** Buckets one entry keeps at most (two weeks of minutes: an answer has at most 10,080 buckets). */
const MAX_ENTRY_BUCKETS = 20_160;

/** Series hashes kept by every cached scan together (~50 bytes each: ~10 MB). */
const MAX_SCAN_HASHES = 200_000;

export class SealedCells {
  private readonly entries = new Map<string, Entry>();
  /** Series with data in sealed spans (the scan of answers that may fold), least recently used first. */
  private readonly scans = new Map<string, { metricId: string; generation: number; series: readonly string[] }>();
  private scanHashes = 0;
  private readonly metrics = new Map<string, { generation: number; ceiling: number }>();
  private bytes = 0;
  /** Buckets answers took from here (tests, docs). */
  servedBuckets = 0;

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
  get(key: string, generation: number): ReadonlyMap<number, SealedRef> | undefined {
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

  /**
   * Keep a block read under `generation`; nothing when the metric moved on meanwhile (what was read
   * may be stale). A new entry of a `family` drops the family's others: an answer that folds is
   * keyed by the series it keeps, and when a live ranking moves only the newest one is asked again.
   */
  put(key: string, metricId: string, generation: number, block: SealedBlock, family: string | null = null): void {
    if (block.starts.length === 0 || this.metric(metricId).generation !== generation) return;
    let e = this.entries.get(key);
    if (e && e.generation !== generation) {
      this.drop(key, e);
      e = undefined;
    }
    if (!e) {
      if (family !== null) for (const [k, old] of this.entries) if (old.family === family) this.drop(k, old);
      this.entries.set(
        key,
        (e = { metricId, family, generation, buckets: new Map(), bytes: 0, lead: null, whole: null }),
      );
    }
    block.bytes = blockBytes(block);
    block.live = block.starts.length;
    this.account(e, block.bytes);
    block.starts.forEach((start, i) => {
      const old = e.buckets.get(start);
      if (old) this.release(e, old);
      e.buckets.set(start, { block, i });
    });
    if (e.buckets.size > MAX_ENTRY_BUCKETS) {
      const starts = [...e.buckets.keys()].sort((a, b) => a - b);
      for (const s of starts.slice(0, e.buckets.size - MAX_ENTRY_BUCKETS)) {
        this.release(e, e.buckets.get(s)!);
        e.buckets.delete(s);
      }
    }
    // Least recently used entries go first; the one just written last (unless it alone is too big).
    for (const [k, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(k, old);
    }
  }

  /** A bucket no longer indexed: its block's bytes go once none of its buckets is. */
  private release(e: Entry, ref: SealedRef): void {
    if (--ref.block.live === 0) this.account(e, -ref.block.bytes);
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

  /** The series with data that a scan of a sealed span found, while the metric is still at `generation`. */
  getScan(key: string, generation: number): readonly string[] | undefined {
    const e = this.scans.get(key);
    if (e === undefined) return undefined;
    this.dropScan(key);
    if (e.generation !== generation) return undefined;
    this.keepScan(key, e);
    return e.series;
  }

  /** Keep a scan of a sealed span made under `generation` (nothing when the metric moved on meanwhile). */
  putScan(key: string, metricId: string, generation: number, series: readonly string[]): void {
    if (this.metric(metricId).generation !== generation || series.length > MAX_SCAN_HASHES / 4) return;
    this.dropScan(key);
    this.keepScan(key, { metricId, generation, series });
    for (const k of this.scans.keys()) {
      if (this.scanHashes <= MAX_SCAN_HASHES) break;
      this.dropScan(k);
    }
  }

  private keepScan(key: string, e: { metricId: string; generation: number; series: readonly string[] }): void {
    this.scans.set(key, e);
    this.scanHashes += e.series.length;
  }

  private dropScan(key: string): void {
    const e = this.scans.get(key);
    if (e === undefined) return;
    this.scans.delete(key);
    this.scanHashes -= e.series.length;
  }

  /**
   * The answer over `boundaries` when every bucket of it is cached (`make` builds it from them),
   * kept for the next answer of the same window: a dashboard of a window wholly in the past asks it
   * again and again, and joining 7,200 cached rows into tables was most of a 30 d by-hour answer.
   */
  whole(key: string, generation: number, boundaries: readonly number[], make: () => WholeAnswer): WholeAnswer {
    const e = this.entries.get(key);
    if (e && e.generation === generation && e.whole?.boundaries === boundaries) return e.whole.answer;
    const answer = make();
    if (e && e.generation === generation) {
      if (e.whole) this.account(e, -e.whole.bytes);
      const bytes = answer.tables.reduce((n, t) => n + 256 + t.buckets.byteLength + t.cells.byteLength, 0);
      e.whole = { boundaries, answer, bytes };
      this.account(e, bytes);
    }
    return answer;
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
    for (const [k, e] of this.scans) if (e.metricId === metricId) this.dropScan(k);
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

/** A block's estimated memory: its bytes, arrays and a header per array. */
function blockBytes(b: SealedBlock): number {
  let n = 256 + 16 * b.starts.length + b.hasData.length + b.answered.length + b.cells.byteLength;
  for (const j of b.json) n += 96 + j.byteLength;
  for (const o of b.offsets) n += 96 + o.byteLength;
  return n;
}
