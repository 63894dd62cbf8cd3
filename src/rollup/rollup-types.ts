import type { BucketState, StateFigures } from './bucket-state.js';

/**
 * The contract between the rollups' write path (worker partials → commit → DuckDB → compactor) and
 * their read path (the aggregation endpoint). docs/metrics.md, "Rollups", describes both.
 */

/** Stored tiers, finest first. Buckets are UTC: a minute, an hour, a UTC day, a UTC calendar month. */
export const TIERS = ['minute', 'hour', 'day', 'month'] as const;
export type Tier = (typeof TIERS)[number];

/** Fixed tier widths in ms (a month has none: its buckets are calendar months, see `bucketStart`). */
export const TIER_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/** Start (epoch ms) of the UTC bucket of `tier` holding `t`. */
export function bucketStart(tier: Tier, t: number): number {
  if (tier === 'month') {
    const d = new Date(t);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  }
  const w = TIER_MS[tier];
  return Math.floor(t / w) * w;
}

/** Start of the UTC bucket after the one starting at `start`. */
export function nextBucketStart(tier: Tier, start: number): number {
  if (tier === 'month') {
    const d = new Date(start);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
  return start + TIER_MS[tier];
}

/**
 * The hash of the pseudo-series every metric has beside its real ones: all records the filter kept,
 * whatever their group_by values. Answers with no group_by, `series_total` and `__other__` by
 * subtraction read it instead of merging every series.
 */
export const TOTAL_SERIES = '__total__';

/** The hash of the synthetic series the tail folds into (spec: `__other__`). */
export const OTHER_SERIES = '__other__';

/** One (series, minute) partial of one batch, as a worker returns it. */
export interface MinutePartial {
  /** Index into `MetricPartials.series`. */
  series: number;
  /** Minute start, epoch ms. */
  minute: number;
  /** `encodeState` bytes. */
  state: Uint8Array;
}

/** A series a batch saw, with the values that define it and the ones that label it. */
export interface SeenSeries {
  /** Stable opaque hash of the dimension values (`seriesHash`), or TOTAL_SERIES. */
  hash: string;
  /** group_by field → value (as stored in the view file: string, number, boolean, date as epoch ms, or null). */
  dimensions: Record<string, unknown>;
  /** group_by_display_fields: group_by field → the display field's value in the series' latest record; null when the metric has none. */
  display: Record<string, unknown> | null;
  /** The latest value of the value field seen (and its time), for ranking; null when none. */
  last: number | null;
  lastAt: number | null;
}

/** What one batch (or one backfilled view file) adds to one metric. */
export interface MetricPartials {
  metricId: string;
  /** The metric's `definition_revision` the partials were built for; rows of other revisions are never mixed. */
  revision: number;
  series: SeenSeries[];
  partials: MinutePartial[];
  /** Records the filter kept. */
  kept: number;
}

/** A stored row as the read path gets it. */
export interface StoredBucket extends StateFigures {
  series: string;
  /** Bucket start, epoch ms (UTC tier boundaries). */
  start: number;
  /** The full mergeable state; present only when the read asked for sketches. */
  state: BucketState | null;
}

/** The figures of StoredBucket a StoredColumns holds, one Float64Array each. */
export const COLUMN_FIGURES = [
  'start',
  'count',
  'value_count',
  'sum',
  'min',
  'max',
  'last',
  'last_at',
  'p50',
  'p95',
  'p99',
  'distinct',
] as const;
export type ColumnFigure = (typeof COLUMN_FIGURES)[number];

/**
 * Stored rows column-wise (RollupReader.readColumns): row i is of series `names[si[i]]`, its figures
 * at i of each column (NaN for null), its state at `states[i]` when the read asked for sketches.
 * A 24 h by-minute answer of 10 series is 14,400 rows: an object per row was most of its cost.
 */
export type StoredColumns = Record<ColumnFigure, Float64Array> & {
  length: number;
  names: readonly string[];
  si: Int32Array;
  states: Array<BucketState | null> | null;
  /** Partial rows a budgeted read left out (RollupReadQuery.partialBudget); absent or 0: none. */
  leftOut?: number;
};
