import { emptyState, encodeState, type StateShape } from './bucket-state.js';
import { MIN_INDEXABLE, RELATIVE_ACCURACY } from './ddsketch.js';
import { EXACT_MAX } from './hll.js';

/**
 * The bytes of one (series, minute) cell of a batch, written straight from the cell's records
 * (their values and unique hashes, in arrival order) instead of through a QuantileSketch, a
 * DistinctSketch and three growing writers per cell: a batch of 100 metrics has ~100,000 cells, and
 * those objects were most of its time and memory. The bytes are the bucket state's format version 1
 * (bucket-state.ts, ddsketch.ts and hll.ts describe it), which `decodeState` reads: the state they
 * decode to is the one `emptyState` + the sketches' `add`/`addHash` of the same records gives
 * (test/rollup/cell-state-bytes.test.ts checks it state by state). A cell with more distinct hashes
 * than the exact form holds (EXACT_MAX) is rare in a minute and goes through the sketches instead.
 */
export interface CellRecords {
  /** Records counted. */
  count: number;
  /** The non-null values of the value field, in arrival order (null: the metric has no value field). */
  values: Float64Array | null;
  /** Per value: its sketch bucket (`valueBucket`): the index, and its kind (POSITIVE, NEGATIVE or ZERO). */
  buckets: Float64Array | null;
  kinds: Uint8Array | null;
  valueCount: number;
  /** The value of the latest record with a value, and its time (lastAt −Infinity: none). */
  last: number;
  lastAt: number;
  /** The unique field's 64-bit hashes of the records that have one, as high and low 32 bits (null: no unique field). */
  hashHi: Uint32Array | null;
  hashLo: Uint32Array | null;
  hashCount: number;
}

const STATE_VERSION = 1;
const HAS_VALUES = 1;
const HAS_LAST = 2;
const HAS_DISTINCT = 4;
const SKETCH_VERSION = 1;
const HLL_PRECISION = 14;
const HLL_SPARSE = 0;
const HLL_EXACT = 2;
// The quantile sketch's bucket index, computed as ddsketch.ts computes it (the same expression, so the same doubles).
const GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY);
const LN_GAMMA = Math.log(GAMMA);
const indexOf = (magnitude: number): number => Math.ceil(Math.log(magnitude) / LN_GAMMA);

/** A value's bucket kind (`valueBucket`); NOT_FINITE values cannot be counted. */
export const POSITIVE = 1;
export const NEGATIVE = 2;
export const ZERO = 3;
export const NOT_FINITE = 4;

/**
 * The quantile sketch's bucket of `v` into `index[at]`, and its kind (answered): computed once per
 * row of a batch for every metric with that value field.
 */
export function valueBucket(v: number, index: Float64Array, at: number): number {
  if (!Number.isFinite(v)) return NOT_FINITE;
  if (v >= MIN_INDEXABLE) {
    index[at] = indexOf(v);
    return POSITIVE;
  }
  if (v <= -MIN_INDEXABLE) {
    index[at] = indexOf(-v);
    return NEGATIVE;
  }
  return ZERO;
}

/** One growing scratch buffer for every cell (a worker encodes one cell at a time). */
let buf = new Uint8Array(4096);
let view = new DataView(buf.buffer);
let len = 0;
let scratchIndex = new Float64Array(256);
let scratchHi = new Uint32Array(256);
let scratchLo = new Uint32Array(256);

function room(n: number): void {
  if (len + n <= buf.length) return;
  const next = new Uint8Array(Math.max(buf.length * 2, len + n));
  next.set(buf.subarray(0, len));
  buf = next;
  view = new DataView(buf.buffer);
}

function byte(b: number): void {
  room(1);
  buf[len++] = b;
}

function uvarint(n: number): void {
  room(8);
  while (n >= 0x80) {
    buf[len++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  buf[len++] = n;
}

function zigzag(n: number): void {
  uvarint(n >= 0 ? n * 2 : -n * 2 - 1);
}

function float64(x: number): void {
  room(8);
  view.setFloat64(len, x, true);
  len += 8;
}

/** Bytes a uvarint of `n` takes. */
function uvarintLength(n: number): number {
  let k = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    k++;
  }
  return k;
}

/**
 * The cell's state bytes, in a scratch buffer valid until the next call (copy them out). Throws
 * RangeError for a non-finite value, as QuantileSketch.add does.
 */
export function encodeCell(c: CellRecords): Uint8Array {
  const distinct = c.hashHi === null ? 0 : sortHashes(c.hashHi, c.hashLo!, c.hashCount);
  if (distinct > EXACT_MAX) return encodeThroughSketches(c);
  len = 0;
  const hasLast = c.lastAt !== -Infinity;
  byte(STATE_VERSION);
  byte((c.values ? HAS_VALUES : 0) | (hasLast ? HAS_LAST : 0) | (c.hashHi ? HAS_DISTINCT : 0));
  uvarint(c.count);
  if (hasLast) {
    float64(c.last);
    float64(c.lastAt);
  }
  if (c.values) writeQuantile(c.values, c.buckets!, c.kinds!, c.valueCount);
  if (c.hashHi) writeDistinct(distinct);
  return buf.subarray(0, len);
}

/** The value sketch with its length before it: [uvarint n][sketch bytes]. */
function writeQuantile(values: Float64Array, buckets: Float64Array, kinds: Uint8Array, n: number): void {
  if (n === 0) {
    uvarint(2);
    byte(SKETCH_VERSION);
    uvarint(0);
    return;
  }
  if (scratchIndex.length < n) scratchIndex = new Float64Array(Math.max(n, scratchIndex.length * 2));
  let lo = Infinity;
  let hi = -Infinity;
  let sum = 0;
  let zeros = 0;
  let pos = 0;
  let neg = 0;
  // Positive indexes from the front of the scratch, negative ones from the back.
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    const kind = kinds[i]!;
    if (kind === POSITIVE) scratchIndex[pos++] = buckets[i]!;
    else if (kind === NEGATIVE) scratchIndex[n - 1 - neg++] = buckets[i]!;
    else if (kind === ZERO) zeros++;
    else throw new RangeError(`QuantileSketch.add: value must be finite, got ${v}`);
    sum += v;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  const positive = scratchIndex.subarray(0, pos);
  const negative = scratchIndex.subarray(n - neg, n);
  if (pos > 1) positive.sort();
  if (neg > 1) negative.sort();
  // The sketch is written after its length: reserve the longest length, then move the bytes if shorter.
  const start = len;
  room(10);
  len += 10;
  const body = len;
  byte(SKETCH_VERSION);
  uvarint(n);
  float64(lo);
  float64(hi);
  float64(sum);
  uvarint(zeros);
  writeBuckets(positive);
  writeBuckets(negative);
  const size = len - body;
  const head = uvarintLength(size);
  buf.copyWithin(start + head, body, len);
  len = start;
  uvarint(size);
  len = start + head + size;
}

/** Sorted bucket indexes as the store's [uvarint buckets] then [zigzag delta][uvarint count] each. */
function writeBuckets(sorted: Float64Array): void {
  let buckets = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) buckets++;
  uvarint(buckets);
  let previous = 0;
  for (let i = 0; i < sorted.length; ) {
    const index = sorted[i]!;
    let j = i + 1;
    while (j < sorted.length && sorted[j] === index) j++;
    zigzag(index - previous);
    uvarint(j - i);
    previous = index;
    i = j;
  }
}

/** The distinct sketch with its length before it: the exact form of the `distinct` sorted hashes in scratch (or the empty sketch). */
function writeDistinct(distinct: number): void {
  if (distinct === 0) {
    uvarint(4);
    byte(SKETCH_VERSION);
    byte(HLL_PRECISION);
    byte(HLL_SPARSE);
    uvarint(0);
    return;
  }
  const size = 3 + uvarintLength(distinct) + 8 * distinct;
  uvarint(size);
  byte(SKETCH_VERSION);
  byte(HLL_PRECISION);
  byte(HLL_EXACT);
  uvarint(distinct);
  room(8 * distinct);
  for (let i = 0; i < distinct; i++) {
    view.setUint32(len, scratchLo[i]!, true);
    view.setUint32(len + 4, scratchHi[i]!, true);
    len += 8;
  }
}

/**
 * The cell's hashes sorted ascending without repeats into the scratch (scratchHi/scratchLo);
 * answers how many distinct. Small cells (most) by insertion, large ones through a BigUint64Array.
 */
function sortHashes(hi: Uint32Array, lo: Uint32Array, n: number): number {
  if (scratchHi.length < n) {
    scratchHi = new Uint32Array(Math.max(n, scratchHi.length * 2));
    scratchLo = new Uint32Array(scratchHi.length);
  }
  let k = 0;
  if (n <= 32) {
    for (let i = 0; i < n; i++) {
      const h = hi[i]!;
      const l = lo[i]!;
      let j = k;
      while (j > 0 && (scratchHi[j - 1]! > h || (scratchHi[j - 1] === h && scratchLo[j - 1]! > l))) j--;
      if (j > 0 && scratchHi[j - 1] === h && scratchLo[j - 1] === l) continue; // a repeat
      scratchHi.copyWithin(j + 1, j, k);
      scratchLo.copyWithin(j + 1, j, k);
      scratchHi[j] = h;
      scratchLo[j] = l;
      k++;
    }
    return k;
  }
  const all = new BigUint64Array(n);
  for (let i = 0; i < n; i++) all[i] = (BigInt(hi[i]!) << 32n) | BigInt(lo[i]!);
  all.sort();
  for (let i = 0; i < n; i++) {
    if (i > 0 && all[i] === all[i - 1]) continue;
    scratchHi[k] = Number(all[i]! >> 32n);
    scratchLo[k] = Number(all[i]! & 0xffffffffn);
    k++;
  }
  return k;
}

/** The general path: the records through the sketches, then `encodeState`. */
export function encodeThroughSketches(c: CellRecords): Uint8Array {
  const shape: StateShape = { values: c.values !== null, distinct: c.hashHi !== null };
  const s = emptyState(shape);
  s.count = c.count;
  if (c.values) for (let i = 0; i < c.valueCount; i++) s.values!.add(c.values[i]!);
  if (c.lastAt !== -Infinity) {
    s.last = c.last;
    s.lastAt = c.lastAt;
  }
  if (c.hashHi)
    for (let i = 0; i < c.hashCount; i++) s.distinct!.addHash((BigInt(c.hashHi[i]!) << 32n) | BigInt(c.hashLo![i]!));
  return encodeState(s);
}
