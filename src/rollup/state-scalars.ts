import { decodeState, type BucketState } from './bucket-state.js';
import { QuantileSketch } from './ddsketch.js';

/**
 * The scalar figures of an encoded bucket state — record count, the value field's count, sum, min
 * and max, `last` and its time — read from its header without decoding a sketch (no quantile
 * buckets, no HyperLogLog registers). What a read needs to merge partials into counts, sums,
 * averages, extremes and `last` (rollup-reader.ts): decoding whole states was most of an answer's
 * cost while a compaction backlog waited.
 */
export interface StateScalars {
  count: number;
  valueCount: number;
  /** NaN when no value (as the figure columns hold null). */
  sum: number;
  min: number;
  max: number;
  last: number;
  lastAt: number;
}

/** bucket-state.ts format version 1 and its flags; ddsketch.ts format version 1. */
const STATE_V1 = 1;
const HAS_VALUES = 1;
const HAS_LAST = 2;
const SKETCH_V1 = 1;

/**
 * `into` with the scalars of `bytes` (an `encodeState` output). Layouts other than the ones above
 * (another version written by a newer build) go through `decodeState`, so this never guesses.
 */
export function readStateScalars(bytes: Uint8Array, into: StateScalars): StateScalars {
  if (bytes.length < 3 || bytes[0] !== STATE_V1) return viaDecode(bytes, into);
  const flags = bytes[1]!;
  let at = 2;
  const varint = (): number => {
    let x = 0;
    let mul = 1;
    for (;;) {
      if (at >= bytes.length) return Number.NaN;
      const b = bytes[at++]!;
      x += (b & 0x7f) * mul;
      if (b < 0x80) return x;
      mul *= 128;
    }
  };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const f64 = (): number => {
    if (at + 8 > bytes.length) return Number.NaN;
    const x = view.getFloat64(at, true);
    at += 8;
    return x;
  };
  into.count = varint();
  into.last = Number.NaN;
  into.lastAt = Number.NaN;
  if (flags & HAS_LAST) {
    into.last = f64();
    into.lastAt = f64();
  }
  into.valueCount = 0;
  into.sum = into.min = into.max = Number.NaN;
  if (flags & HAS_VALUES) {
    const length = varint();
    if (!(length >= 1) || bytes[at] !== SKETCH_V1) return viaDecode(bytes, into);
    at++;
    const total = varint();
    if (total > 0) {
      into.min = f64();
      into.max = f64();
      into.sum = f64();
      into.valueCount = total;
    }
  }
  if (Number.isNaN(into.count) || Number.isNaN(into.valueCount) || (into.valueCount > 0 && Number.isNaN(into.max)))
    return viaDecode(bytes, into);
  return into;
}

function viaDecode(bytes: Uint8Array, into: StateScalars): StateScalars {
  const s = decodeState(bytes);
  const v = s.values;
  const has = v !== null && v.count > 0;
  into.count = s.count;
  into.valueCount = v?.count ?? 0;
  into.sum = has ? v.sum : Number.NaN;
  into.min = has ? v.min! : Number.NaN;
  into.max = has ? v.max! : Number.NaN;
  into.last = s.last ?? Number.NaN;
  into.lastAt = s.last === null ? Number.NaN : s.lastAt;
  return into;
}

/**
 * `decodeState` without its distinct sketch (`distinct` null): a read that wants no distinct count
 * does not decode 16 KB of HyperLogLog registers a row. Other layouts go through `decodeState`.
 */
export function decodeStateWithoutDistinct(bytes: Uint8Array): BucketState {
  if (bytes.length < 3 || bytes[0] !== STATE_V1) return withoutDistinct(decodeState(bytes));
  const flags = bytes[1]!;
  let at = 2;
  const varint = (): number => {
    let x = 0;
    let mul = 1;
    for (;;) {
      if (at >= bytes.length) return Number.NaN;
      const b = bytes[at++]!;
      x += (b & 0x7f) * mul;
      if (b < 0x80) return x;
      mul *= 128;
    }
  };
  const count = varint();
  let last: number | null = null;
  let lastAt = -Infinity;
  if (flags & HAS_LAST) {
    if (at + 16 > bytes.length) return withoutDistinct(decodeState(bytes));
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    last = view.getFloat64(at, true);
    lastAt = view.getFloat64(at + 8, true);
    at += 16;
  }
  let values: QuantileSketch | null = null;
  if (flags & HAS_VALUES) {
    const length = varint();
    if (Number.isNaN(length) || at + length > bytes.length) return withoutDistinct(decodeState(bytes));
    values = QuantileSketch.decode(bytes.subarray(at, at + length));
  }
  if (Number.isNaN(count)) return withoutDistinct(decodeState(bytes));
  return { count, values, last, lastAt, distinct: null };
}

function withoutDistinct(s: BucketState): BucketState {
  s.distinct = null;
  return s;
}
