import { QuantileSketch } from './ddsketch.js';
import { DistinctSketch } from './hll.js';
import { ByteReader, ByteWriter } from './sketch-bytes.js';

/**
 * The mergeable aggregate of one (metric, series, time bucket): what a minute partial, a stored
 * tier row and an answer bucket all are. Merging the states of parts gives the state of the whole,
 * in any order (docs/metrics.md, "Rollups"), so minutes fold into hours, days and months, series
 * into `__other__`, and partials of several batches into one row without going back to records.
 */
export interface BucketState {
  /** Records counted (those the filter kept). */
  count: number;
  /** The value field's numbers (count, sum, min, max, quantiles); null when the metric has no value field. */
  values: QuantileSketch | null;
  /** The value of the record with the latest time (`lastAt`); null when none had a value. */
  last: number | null;
  /** Time (epoch ms) of `last`; -Infinity when none. A tie keeps the value merged last. */
  lastAt: number;
  /** Distinct values of the unique field; null when the metric has no unique field. */
  distinct: DistinctSketch | null;
}

/** What a metric's states carry: a value sketch when it has a value field, a distinct sketch when it has a unique field. */
export interface StateShape {
  values: boolean;
  distinct: boolean;
}

export function emptyState(shape: StateShape): BucketState {
  return {
    count: 0,
    values: shape.values ? new QuantileSketch() : null,
    last: null,
    lastAt: -Infinity,
    distinct: shape.distinct ? new DistinctSketch() : null,
  };
}

/** Adds `from` into `into` (`from` unchanged). Both must have the same shape. */
export function mergeState(into: BucketState, from: BucketState): void {
  into.count += from.count;
  if (from.values) (into.values ??= new QuantileSketch()).merge(from.values);
  if (from.distinct) (into.distinct ??= new DistinctSketch()).merge(from.distinct);
  if (from.last !== null && from.lastAt >= into.lastAt) {
    into.last = from.last;
    into.lastAt = from.lastAt;
  }
}

const FORMAT_VERSION = 1;
const HAS_VALUES = 1;
const HAS_LAST = 2;
const HAS_DISTINCT = 4;

/**
 * Binary form, version 1: [version][flags][uvarint count], then when flagged [f64 last][f64 lastAt],
 * [uvarint n][value sketch bytes], [uvarint n][distinct sketch bytes]. Used for partials in the
 * spool's transaction and for stored rows' blobs.
 */
export function encodeState(s: BucketState): Uint8Array {
  const w = new ByteWriter();
  w.byte(FORMAT_VERSION);
  w.byte((s.values ? HAS_VALUES : 0) | (s.last !== null ? HAS_LAST : 0) | (s.distinct ? HAS_DISTINCT : 0));
  w.uvarint(s.count);
  if (s.last !== null) {
    w.float64(s.last);
    w.float64(s.lastAt);
  }
  for (const sketch of [s.values, s.distinct]) {
    if (!sketch) continue;
    const bytes = sketch.encode();
    w.uvarint(bytes.length);
    w.raw(bytes);
  }
  return w.finish();
}

/** Reads `encodeState`'s output; throws SketchDecodeError on anything else. */
export function decodeState(bytes: Uint8Array): BucketState {
  const r = new ByteReader(bytes, 'bucket state');
  const version = r.byte('format version');
  if (version !== FORMAT_VERSION) r.fail(`unknown format version ${version} (this build reads ${FORMAT_VERSION})`);
  const flags = r.byte('flags');
  const count = r.uvarint('count');
  let last: number | null = null;
  let lastAt = -Infinity;
  if (flags & HAS_LAST) {
    last = r.float64('last');
    lastAt = r.float64('last time');
  }
  const values =
    flags & HAS_VALUES ? QuantileSketch.decode(r.raw(r.uvarint('value sketch length'), 'value sketch')) : null;
  const distinct =
    flags & HAS_DISTINCT ? DistinctSketch.decode(r.raw(r.uvarint('distinct sketch length'), 'distinct sketch')) : null;
  r.end();
  return { count, values, last, lastAt, distinct };
}

/** The figures a stored row keeps beside its blob, so most reads never decode one. */
export interface StateFigures {
  count: number;
  value_count: number;
  sum: number | null;
  min: number | null;
  max: number | null;
  last: number | null;
  last_at: number | null;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  distinct: number | null;
}

const FIGURE_QUANTILES = [0.5, 0.95, 0.99];

export function figuresOf(s: BucketState): StateFigures {
  const v = s.values;
  const has = v !== null && v.count > 0;
  const [p50, p95, p99] = has ? v.quantiles(FIGURE_QUANTILES) : [null, null, null];
  return {
    count: s.count,
    value_count: v?.count ?? 0,
    sum: has ? v.sum : null,
    min: has ? v.min : null,
    max: has ? v.max : null,
    last: s.last,
    last_at: s.last === null ? null : s.lastAt,
    p50: p50 ?? null,
    p95: p95 ?? null,
    p99: p99 ?? null,
    distinct: s.distinct ? s.distinct.estimate() : null,
  };
}
