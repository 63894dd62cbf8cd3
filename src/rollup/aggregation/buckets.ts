import type { Tier } from '../rollup-types.js';
import { addLocal, startOfLocal } from './zoned-time.js';

/** Bounds of the aggregation query (ours; docs/metrics.md, "Aggregation"). */
export const AGGREGATION_LIMITS = {
  /** `interval=auto` picks the finest interval giving at most this many buckets (a day of minutes fits). */
  autoBuckets: 1_500,
  /** An explicit interval may give at most this many buckets (a week of minutes). */
  maxBuckets: 10_080,
  /** Spec: `max_series` 1 to 50. */
  maxSeries: 50,
  /** Series hashes one `series` filter may list. */
  seriesFilter: 100,
} as const;

/** A resolved interval: always one of the stored tiers' names (spec: ChartInterval resolved). */
export type Interval = Tier;
export const INTERVALS: readonly Interval[] = ['minute', 'hour', 'day', 'month'];

/** Shortest length of one bucket of each interval, for counting buckets without listing them. */
const SHORTEST_MS: Record<Interval, number> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 23 * 3_600_000,
  month: 28 * 86_400_000,
};

/** At most how many buckets `interval` gives over `[start, end)` (exact for minutes, a bound otherwise). */
export function bucketBound(interval: Interval, start: number, end: number): number {
  return Math.ceil((end - start) / SHORTEST_MS[interval]) + 1;
}

/** The finest interval whose bucket count over `[start, end)` stays within `autoBuckets`. */
export function autoInterval(start: number, end: number): Interval {
  return INTERVALS.find((i) => bucketBound(i, start, end) <= AGGREGATION_LIMITS.autoBuckets) ?? 'month';
}

/**
 * The answer's buckets: boundaries b0 < b1 < … < bn (epoch ms) of the local `interval` buckets of
 * `timeZone` that overlap `[start, end)`; bucket k is `[b_k, b_k+1)`. b0 is the start of the bucket
 * holding `start`, bn the end of the one holding `end − 1`, so whole buckets are always answered.
 */
export function bucketBoundaries(interval: Interval, timeZone: string, start: number, end: number): readonly number[] {
  // A dashboard asks the same window again and again: the same array comes back, so what is made
  // per array (bucket labels, series-records.ts) is made once too.
  const key = `${interval}\u0000${timeZone}\u0000${start}\u0000${end}`;
  let out = recentBoundaries.get(key);
  if (out !== undefined) {
    recentBoundaries.delete(key);
    recentBoundaries.set(key, out);
    return out;
  }
  const b = [startOfLocal(timeZone, interval, start)];
  while (b[b.length - 1]! < end) b.push(addLocal(timeZone, interval, b[b.length - 1]!, 1));
  if (b.length === 1) b.push(addLocal(timeZone, interval, b[0]!, 1)); // an empty window still names its bucket
  out = Object.freeze(b);
  recentBoundaries.set(key, out);
  if (recentBoundaries.size > RECENT_WINDOWS) recentBoundaries.delete(recentBoundaries.keys().next().value!);
  return out;
}

/** Windows whose boundaries are kept (least recently asked dropped first); at most 10,081 numbers each. */
const RECENT_WINDOWS = 32;
const recentBoundaries = new Map<string, readonly number[]>();

/** Index of the bucket holding `t` in `boundaries` (binary search), or -1 outside them. */
export function bucketIndex(boundaries: readonly number[], t: number): number {
  if (t < boundaries[0]! || t >= boundaries[boundaries.length - 1]!) return -1;
  let lo = 0;
  let hi = boundaries.length - 1; // invariant: boundaries[lo] <= t < boundaries[hi]
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (boundaries[mid]! <= t) lo = mid;
    else hi = mid;
  }
  return lo;
}
