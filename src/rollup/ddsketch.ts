/**
 * A mergeable quantile sketch in the manner of DDSketch (Masson, Rim, Lee, VLDB 2019): values fall
 * into logarithmic buckets, so any quantile is answered within a relative error of α.
 *
 * Rank rule: `quantile(q)` estimates the lower order statistic x[⌊q·(n−1)⌋] of the sorted values
 * (0-based). DuckDB's `quantile_disc` takes the upper one, so exact comparisons (tests, checks
 * against DuckDB) must use x[⌊q·(n−1)⌋], not `quantile_disc`.
 *
 * Buckets are never collapsed, so the α bound holds for every quantile whatever the spread of the
 * data; memory grows with the number of distinct buckets touched (at most ~40,000 per sign over the
 * whole float64 range, in pages of 64 so a stray outlier costs one page).
 */
import { ByteReader, ByteWriter, SketchDecodeError } from './sketch-bytes.js';

/** Relative accuracy: every answer is within α·|exact| of the exact lower order statistic. */
export const RELATIVE_ACCURACY = 0.009;

/**
 * Values with |v| below this are counted as zero (and answered as 0, an absolute error under 1e-9):
 * one nanosecond in seconds; smaller magnitudes are float noise in metrics, and a floor keeps the
 * index range bounded for decode checks.
 */
export const MIN_INDEXABLE = 1e-9;

const GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY);
const LN_GAMMA = Math.log(GAMMA);
// Bucket i holds magnitudes in (γ^(i−1), γ^i]; answering 2γ^i/(γ+1) is within α of all of them.
const LN_REPRESENTATIVE = Math.log(2 / (GAMMA + 1));
const indexOf = (magnitude: number): number => Math.ceil(Math.log(magnitude) / LN_GAMMA);
const valueOf = (index: number): number => Math.exp(index * LN_GAMMA + LN_REPRESENTATIVE);
const MIN_INDEX = indexOf(MIN_INDEXABLE);
const MAX_INDEX = indexOf(Number.MAX_VALUE);

/** Format 1 fixes α = 0.009 and MIN_INDEXABLE = 1e-9: changing either needs a new version. */
const FORMAT_VERSION = 1;
const PAGE_BITS = 6;
const PAGE_SIZE = 1 << PAGE_BITS;

/**
 * Distinct bucket indexes a store keeps in two short arrays before it allocates pages. Most rollup
 * states are small (one series in one minute of a time-spread import holds one or two values): a
 * page of 64 float64 counts per state was the largest cost of building and decoding them, in
 * allocation and garbage collection. The form is internal: encodings and answers are the same.
 */
const SMALL_BUCKETS = 8;

/**
 * Counts per bucket index: up to SMALL_BUCKETS indexes in two unsorted arrays, then in pages of 64
 * buckets (dense-array speed without one array per range).
 */
class BucketStore {
  private pages: Map<number, Float64Array> | null = null;
  private smallIndex: number[] | null = null;
  private smallCount: number[] | null = null;

  add(index: number, count: number): void {
    if (this.pages === null) {
      const idx = (this.smallIndex ??= []);
      const cnt = (this.smallCount ??= []);
      for (let k = 0; k < idx.length; k++) {
        if (idx[k] === index) {
          cnt[k]! += count;
          return;
        }
      }
      if (idx.length < SMALL_BUCKETS) {
        idx.push(index);
        cnt.push(count);
        return;
      }
      this.toPages();
    }
    this.addToPage(this.pages!, index, count);
  }

  private addToPage(pages: Map<number, Float64Array>, index: number, count: number): void {
    const key = index >> PAGE_BITS; // arithmetic shift floors, so negative indexes page correctly
    let page = pages.get(key);
    if (page === undefined) pages.set(key, (page = new Float64Array(PAGE_SIZE)));
    page[index & (PAGE_SIZE - 1)]! += count;
  }

  private toPages(): void {
    const pages = (this.pages = new Map());
    const idx = this.smallIndex ?? [];
    const cnt = this.smallCount ?? [];
    for (let k = 0; k < idx.length; k++) this.addToPage(pages, idx[k]!, cnt[k]!);
    this.smallIndex = this.smallCount = null;
  }

  /** The count of one bucket (0 when none). */
  private countAt(index: number): number {
    if (this.pages !== null) return this.pages.get(index >> PAGE_BITS)?.[index & (PAGE_SIZE - 1)] ?? 0;
    const idx = this.smallIndex;
    if (idx !== null) for (let k = 0; k < idx.length; k++) if (idx[k] === index) return this.smallCount![k]!;
    return 0;
  }

  /** Non-empty buckets as [index, count] in ascending index order. */
  buckets(): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    if (this.pages === null) {
      const idx = this.smallIndex;
      if (idx === null) return out;
      for (let k = 0; k < idx.length; k++) if (this.smallCount![k]! > 0) out.push([idx[k]!, this.smallCount![k]!]);
      return out.length > 1 ? out.sort((x, y) => x[0] - y[0]) : out;
    }
    for (const key of [...this.pages.keys()].sort((a, b) => a - b)) {
      const page = this.pages.get(key)!;
      for (let j = 0; j < PAGE_SIZE; j++) if (page[j]! > 0) out.push([key * PAGE_SIZE + j, page[j]!]);
    }
    return out;
  }

  /** Takes `other`'s counts out of this store; false (and this store unchanged) when one would go negative. */
  subtractFrom(other: BucketStore): boolean {
    const take = other.buckets();
    for (const [index, count] of take) if (count > this.countAt(index)) return false;
    // Adding negative counts: every bucket touched exists already, so the form does not change.
    for (const [index, count] of take) this.add(index, -count);
    return true;
  }

  /** Lowest and highest non-empty bucket index, or null when empty. */
  extremes(): [number, number] | null {
    const b = this.buckets();
    return b.length === 0 ? null : [b[0]![0], b[b.length - 1]![0]];
  }

  mergeFrom(other: BucketStore): void {
    if (other.pages === null) {
      const idx = other.smallIndex;
      if (idx !== null)
        for (let k = 0; k < idx.length; k++) if (other.smallCount![k]! > 0) this.add(idx[k]!, other.smallCount![k]!);
      return;
    }
    for (const [key, page] of other.pages) {
      for (let j = 0; j < PAGE_SIZE; j++) if (page[j]! > 0) this.add(key * PAGE_SIZE + j, page[j]!);
    }
  }
}

/**
 * Quantiles of a stream of finite numbers within relative error `RELATIVE_ACCURACY`, mergeable
 * exactly (merging sketches of parts gives the sketch of the whole, in any order) and encodable.
 * Counts are integers; the total must stay below 2^53.
 */
export class QuantileSketch {
  private readonly positive = new BucketStore();
  private readonly negative = new BucketStore();
  private zeroCount = 0;
  private total = 0;
  private valueSum = 0;
  private lo = Infinity;
  private hi = -Infinity;

  /** Number of values added (with their counts). */
  get count(): number {
    return this.total;
  }
  /** Sum of the values added (plain float64 addition, so it can depend on merge order in the last bits). */
  get sum(): number {
    return this.valueSum;
  }
  /** Smallest value added, exactly; null when empty. */
  get min(): number | null {
    return this.total === 0 ? null : this.lo;
  }
  /** Largest value added, exactly; null when empty. */
  get max(): number | null {
    return this.total === 0 ? null : this.hi;
  }

  /**
   * Adds `v` `count` times. Throws RangeError for NaN or ±Infinity (callers skip those) and for a
   * count that is not a positive safe integer.
   */
  add(v: number, count = 1): void {
    if (!Number.isFinite(v)) throw new RangeError(`QuantileSketch.add: value must be finite, got ${v}`);
    if (!Number.isSafeInteger(count) || count < 1)
      throw new RangeError(`QuantileSketch.add: count must be a positive integer, got ${count}`);
    if (v >= MIN_INDEXABLE) this.positive.add(indexOf(v), count);
    else if (v <= -MIN_INDEXABLE) this.negative.add(indexOf(-v), count);
    else this.zeroCount += count;
    this.total += count;
    this.valueSum += v * count;
    if (v < this.lo) this.lo = v;
    if (v > this.hi) this.hi = v;
  }

  /** Adds everything `other` holds; `other` is unchanged. */
  merge(other: QuantileSketch): void {
    if (other.total === 0) return;
    this.positive.mergeFrom(other.positive);
    this.negative.mergeFrom(other.negative);
    this.zeroCount += other.zeroCount;
    this.total += other.total;
    this.valueSum += other.valueSum;
    this.lo = Math.min(this.lo, other.lo);
    this.hi = Math.max(this.hi, other.hi);
  }

  /**
   * Takes out the values of `other`, a part of what this sketch holds (the kept series out of a
   * metric's total, leaving the folded tail). Bucket counts subtract exactly, so quantiles keep the
   * α bound; the sum is float subtraction. min (max) stays exact when `other`'s min (max) is not this
   * sketch's — the extreme then lies in the remainder — and otherwise becomes the remainder's lowest
   * (highest) bucket value, within α. Throws RangeError, changing nothing, when `other` holds values
   * this sketch does not.
   */
  subtract(other: QuantileSketch): void {
    if (other.total === 0) return;
    const fits = other.total <= this.total && other.zeroCount <= this.zeroCount;
    if (!fits || !this.positive.subtractFrom(other.positive))
      throw new RangeError('QuantileSketch.subtract: the other sketch is not a part of this one');
    if (!this.negative.subtractFrom(other.negative)) {
      this.positive.mergeFrom(other.positive); // undo, so a refused subtraction changes nothing
      throw new RangeError('QuantileSketch.subtract: the other sketch is not a part of this one');
    }
    this.zeroCount -= other.zeroCount;
    this.total -= other.total;
    this.valueSum -= other.valueSum;
    if (this.total === 0) {
      this.valueSum = 0;
      this.lo = Infinity;
      this.hi = -Infinity;
      return;
    }
    const [lo, hi] = [this.lo, this.hi];
    if (other.lo <= lo) this.lo = this.lowestBucketValue();
    if (other.hi >= hi) this.hi = this.highestBucketValue();
    // The remainder's extremes lie within the whole's.
    this.lo = Math.max(lo, this.lo);
    this.hi = Math.min(hi, this.hi);
  }

  private lowestBucketValue(): number {
    const neg = this.negative.extremes();
    if (neg) return -valueOf(neg[1]);
    if (this.zeroCount > 0) return 0;
    return valueOf(this.positive.extremes()![0]);
  }

  private highestBucketValue(): number {
    const pos = this.positive.extremes();
    if (pos) return valueOf(pos[1]);
    if (this.zeroCount > 0) return 0;
    return -valueOf(this.negative.extremes()![0]);
  }

  /**
   * The q-quantile (0 ≤ q ≤ 1) as the lower order statistic x[⌊q·(n−1)⌋], within relative error α;
   * null when empty. q = 0 and q = 1 give the exact min and max.
   */
  quantile(q: number): number | null {
    if (!(q >= 0 && q <= 1)) throw new RangeError(`QuantileSketch.quantile: q must be in [0, 1], got ${q}`);
    if (this.total === 0) return null;
    const rank = Math.floor(q * (this.total - 1));
    let seen = 0;
    // Ascending value order: negatives from the largest magnitude down, then zeros, then positives.
    const negatives = this.negative.buckets();
    for (let k = negatives.length - 1; k >= 0; k--) {
      const [index, count] = negatives[k]!;
      seen += count;
      if (seen > rank) return this.clamp(-valueOf(index));
    }
    seen += this.zeroCount;
    if (seen > rank) return this.clamp(0);
    for (const [index, count] of this.positive.buckets()) {
      seen += count;
      if (seen > rank) return this.clamp(valueOf(index));
    }
    return this.hi; // unreachable while counts add up to total
  }

  /**
   * `quantile` of each of `qs` (ascending) from one walk over the buckets: a stored row's p50, p95
   * and p99 are computed together (the buckets are listed, and sorted, once instead of three times).
   */
  quantiles(qs: readonly number[]): Array<number | null> {
    for (let i = 0; i < qs.length; i++) {
      const q = qs[i]!;
      if (!(q >= 0 && q <= 1)) throw new RangeError(`QuantileSketch.quantiles: q must be in [0, 1], got ${q}`);
      if (i > 0 && q < qs[i - 1]!) throw new RangeError('QuantileSketch.quantiles: qs must be ascending');
    }
    const out: Array<number | null> = new Array(qs.length).fill(null);
    if (this.total === 0 || qs.length === 0) return out;
    let next = 0;
    let rank = Math.floor(qs[0]! * (this.total - 1));
    let seen = 0;
    // Each answer is the value of the first bucket where the running count passes the q's rank.
    const take = (x: number): boolean => {
      while (next < qs.length && seen > rank) {
        out[next++] = this.clamp(x);
        if (next < qs.length) rank = Math.floor(qs[next]! * (this.total - 1));
      }
      return next === qs.length;
    };
    const negatives = this.negative.buckets();
    for (let k = negatives.length - 1; k >= 0; k--) {
      const [index, count] = negatives[k]!;
      seen += count;
      if (take(-valueOf(index))) return out;
    }
    seen += this.zeroCount;
    if (take(0)) return out;
    for (const [index, count] of this.positive.buckets()) {
      seen += count;
      if (take(valueOf(index))) return out;
    }
    for (; next < qs.length; next++) out[next] = this.hi; // unreachable while counts add up to total
    return out;
  }

  // The exact answer lies in [min, max], so clamping only ever reduces the error; it also makes
  // q = 0 / 1 exact and keeps the top bucket's representative from overflowing to Infinity.
  private clamp(x: number): number {
    return Math.min(this.hi, Math.max(this.lo, x));
  }

  /**
   * Binary form, version 1: [version][uvarint count]; if count > 0: [f64 min][f64 max][f64 sum]
   * [uvarint zero count], then the positive and the negative store, each [uvarint buckets] and per
   * bucket [zigzag index delta from the previous index (first from 0)][uvarint count].
   */
  encode(): Uint8Array {
    const w = new ByteWriter();
    w.byte(FORMAT_VERSION);
    w.uvarint(this.total);
    if (this.total === 0) return w.finish();
    w.float64(this.lo);
    w.float64(this.hi);
    w.float64(this.valueSum);
    w.uvarint(this.zeroCount);
    for (const store of [this.positive, this.negative]) {
      const buckets = store.buckets();
      w.uvarint(buckets.length);
      let previous = 0;
      for (const [index, count] of buckets) {
        w.zigzag(index - previous);
        w.uvarint(count);
        previous = index;
      }
    }
    return w.finish();
  }

  /** Reads `encode()`'s output; throws SketchDecodeError for unknown versions, truncation or bad contents. */
  static decode(bytes: Uint8Array): QuantileSketch {
    const r = new ByteReader(bytes, 'quantile sketch');
    const version = r.byte('format version');
    if (version !== FORMAT_VERSION) r.fail(`unknown format version ${version} (this build reads ${FORMAT_VERSION})`);
    const s = new QuantileSketch();
    const total = r.uvarint('count');
    if (total === 0) {
      r.end();
      return s;
    }
    s.lo = r.float64('min');
    s.hi = r.float64('max');
    s.valueSum = r.float64('sum'); // may be ±Infinity or NaN: float sums of huge values overflow
    if (!Number.isFinite(s.lo) || !Number.isFinite(s.hi) || s.lo > s.hi)
      r.fail(`min ${s.lo} and max ${s.hi} are not a finite range`);
    s.zeroCount = r.uvarint('zero count');
    let seen = s.zeroCount;
    for (const [store, name] of [
      [s.positive, 'positive'],
      [s.negative, 'negative'],
    ] as const) {
      const n = r.uvarint(`${name} bucket count`);
      let index = 0;
      for (let k = 0; k < n; k++) {
        const next = index + r.zigzag(`${name} bucket ${k} index`);
        if (k > 0 && next <= index) r.fail(`${name} bucket ${k} index ${next} is not above the previous ${index}`);
        if (next < MIN_INDEX || next > MAX_INDEX)
          r.fail(`${name} bucket ${k} index ${next} is outside [${MIN_INDEX}, ${MAX_INDEX}]`);
        const count = r.uvarint(`${name} bucket ${k} count`);
        if (count === 0) r.fail(`${name} bucket ${k} has count 0`);
        store.add(next, count);
        seen += count;
        index = next;
      }
    }
    r.end();
    if (seen !== total) r.fail(`bucket counts add up to ${seen}, header says ${total}`);
    s.total = total;
    return s;
  }
}

export { SketchDecodeError };
