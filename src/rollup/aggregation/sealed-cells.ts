/**
 * Answered cells of sealed buckets, kept between aggregation answers (docs/metrics.md, "Aggregation",
 * "Sealed buckets"). A dashboard asks the same window every few seconds while only its newest
 * buckets change: the buckets behind the seal point are taken from here and DuckDB reads only the
 * rest.
 *
 * Correctness does not rest on the seal point (a guess at what no longer changes) but on the writes:
 * the rollup store reports, after its commit, every write that adds rows (a live merge, a backfilled
 * file, a late-data re-backfill) with the minutes it touched, and every drop. A write whose minutes
 * are all at or after the metric's ceiling (the latest seal point any answer read to, raised before
 * that answer's read) touches nothing that is or may be cached. One below it drops the cached
 * buckets (and scans) that hold one of its minutes, nothing else, and is logged: an answer that
 * began before it keeps none of the buckets it touched (`writeMark`/`put`'s `since`). A drop of rows
 * and a metric's change (update, rebuild, delete, restore) bump the metric's generation, which makes
 * every cached bucket of the metric unusable, and an answer keeps what it read only while the
 * generation it started with is current. Compaction is not reported: it folds rows that
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
  /** Where each bucket ends (absent: a bucket is taken to reach the next start, the last one without end). */
  ends?: readonly number[];
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

/** Writes below the ceiling remembered per metric for answers in flight (an older answer keeps nothing). */
const WRITE_LOG = 64;

/** One write below a metric's ceiling: its sequence number and its minutes (sorted, ascending). */
interface LoggedWrite {
  seq: number;
  minutes: ArrayLike<number>;
}

interface MetricState {
  generation: number;
  ceiling: number;
  /** Writes below the ceiling so far (range writes: `writtenMinutes`). */
  seq: number;
  /** The last WRITE_LOG of them, oldest first. */
  log: LoggedWrite[];
}

/** Whether a sorted list of minutes has one in [a, b). */
function touches(minutes: ArrayLike<number>, a: number, b: number): boolean {
  let lo = 0;
  let hi = minutes.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (minutes[mid]! < a) lo = mid + 1;
    else hi = mid;
  }
  return lo < minutes.length && minutes[lo]! < b;
}

/** Bucket `i` of a block as [start, end). */
function bucketEnd(block: SealedBlock, i: number): number {
  return block.ends?.[i] ?? block.starts[i + 1] ?? Infinity;
}

export class SealedCells {
  private readonly entries = new Map<string, Entry>();
  /** Series with data in sealed spans (the scan of answers that may fold), least recently used first. */
  private readonly scans = new Map<string, ScanEntry>();
  private scanHashes = 0;
  private readonly metrics = new Map<string, MetricState>();
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
  put(
    key: string,
    metricId: string,
    generation: number,
    block: SealedBlock,
    family: string | null = null,
    since?: number,
  ): void {
    if (block.starts.length === 0 || this.metric(metricId).generation !== generation) return;
    // Buckets a write touched since the answer began were read before or after it: not kept.
    const stale = since === undefined ? null : this.writesSince(metricId, since);
    if (stale === 'unknown') return;
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
    block.live = 0;
    const entry = e;
    block.starts.forEach((start, i) => {
      if (stale?.some((w) => touches(w.minutes, start, bucketEnd(block, i)))) return;
      const old = entry.buckets.get(start);
      if (old) this.release(entry, old);
      entry.buckets.set(start, { block, i });
      block.live++;
    });
    if (block.live === 0) {
      if (e.buckets.size === 0) this.drop(key, e);
      return;
    }
    this.account(e, block.bytes);
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
  lead(key: string, generation: number, first: number, count: number, make: () => Buffer[], since?: number): Buffer[] {
    const e = this.entries.get(key);
    if (e && e.generation === generation && e.lead?.first === first && e.lead.count === count) return e.lead.json;
    const json = make();
    // Made from buckets taken before a write that may have dropped some of them: used once, not kept.
    if (e && e.generation === generation && this.unchangedSince(e.metricId, since)) {
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

  /**
   * Keep a scan of a sealed span `[from, to)` made under `generation` (nothing when the metric moved
   * on meanwhile, or when a write since `since` touched the span).
   */
  putScan(
    key: string,
    metricId: string,
    generation: number,
    series: readonly string[],
    span: { from: number; to: number; since: number } = { from: -Infinity, to: Infinity, since: Number.NaN },
  ): void {
    if (this.metric(metricId).generation !== generation || series.length > MAX_SCAN_HASHES / 4) return;
    if (!Number.isNaN(span.since)) {
      const stale = this.writesSince(metricId, span.since);
      if (stale === 'unknown' || stale.some((w) => touches(w.minutes, span.from, span.to))) return;
    }
    this.dropScan(key);
    this.keepScan(key, { metricId, generation, series, from: span.from, to: span.to });
    for (const k of this.scans.keys()) {
      if (this.scanHashes <= MAX_SCAN_HASHES) break;
      this.dropScan(k);
    }
  }

  private keepScan(key: string, e: ScanEntry): void {
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
  whole(
    key: string,
    generation: number,
    boundaries: readonly number[],
    make: () => WholeAnswer,
    since?: number,
  ): WholeAnswer {
    const e = this.entries.get(key);
    if (e && e.generation === generation && e.whole?.boundaries === boundaries) return e.whole.answer;
    const answer = make();
    if (e && e.generation === generation && this.unchangedSince(e.metricId, since)) {
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

  /**
   * The rollup store committed rows of `metricId` in these minutes (sorted, ascending): the cached
   * buckets and scans holding one of them are dropped, the rest stays. Writes wholly at or after the
   * ceiling touch nothing any answer has cached or may cache.
   */
  writtenMinutes(metricId: string, minutes: ArrayLike<number>): void {
    const m = this.metrics.get(metricId);
    if (!m || minutes.length === 0 || minutes[0]! >= m.ceiling) return;
    m.log.push({ seq: ++m.seq, minutes });
    if (m.log.length > WRITE_LOG) m.log.shift();
    for (const [k, e] of this.entries) {
      if (e.metricId !== metricId) continue;
      let dropped = false;
      for (const [start, ref] of e.buckets) {
        if (!touches(minutes, start, bucketEnd(ref.block, ref.i))) continue;
        this.release(e, ref);
        e.buckets.delete(start);
        dropped = true;
      }
      if (!dropped) continue;
      // The joined run and the whole answer were made of the buckets: made again when asked.
      if (e.lead) this.account(e, -e.lead.bytes);
      if (e.whole) this.account(e, -e.whole.bytes);
      e.lead = null;
      e.whole = null;
      if (e.buckets.size === 0) this.drop(k, e);
    }
    for (const [k, e] of this.scans) if (e.metricId === metricId && touches(minutes, e.from, e.to)) this.dropScan(k);
  }

  /** The metric's write sequence now: given to `put`, `putScan`, `lead` and `whole` by an answer as it begins. */
  writeMark(metricId: string): number {
    return this.metric(metricId).seq;
  }

  /** The range writes after `since`, or 'unknown' when some are no longer logged. */
  private writesSince(metricId: string, since: number): readonly LoggedWrite[] | 'unknown' {
    const m = this.metric(metricId);
    if (m.seq === since) return [];
    const first = m.log[0];
    if (first === undefined || first.seq > since + 1) return 'unknown';
    return m.log.filter((w) => w.seq > since);
  }

  private unchangedSince(metricId: string, since: number | undefined): boolean {
    return since === undefined || this.metric(metricId).seq === since;
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

  private metric(metricId: string): MetricState {
    let m = this.metrics.get(metricId);
    if (!m) this.metrics.set(metricId, (m = { generation: 0, ceiling: -Infinity, seq: 0, log: [] }));
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

/** A kept scan: the series with data in the sealed span [from, to) of a window. */
interface ScanEntry {
  metricId: string;
  generation: number;
  series: readonly string[];
  from: number;
  to: number;
}

/** A block's estimated memory: its bytes, arrays and a header per array. */
function blockBytes(b: SealedBlock): number {
  let n = 256 + 24 * b.starts.length + b.hasData.length + b.answered.length + b.cells.byteLength;
  for (const j of b.json) n += 96 + j.byteLength;
  for (const o of b.offsets) n += 96 + o.byteLength;
  return n;
}
