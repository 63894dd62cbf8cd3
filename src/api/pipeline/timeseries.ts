import { iso } from '../../clock.js';
import type { MinuteCounters } from '../../telemetry/pipeline-telemetry.js';

export type TelemetryInterval = 'minute' | 'hour';

const STEP: Record<TelemetryInterval, number> = { minute: 60_000, hour: 3_600_000 };

/** Most buckets one telemetry query may return (7 days of minutes, 90 days of hours). */
export const MAX_BUCKETS: Record<TelemetryInterval, number> = { minute: 7 * 24 * 60, hour: 90 * 24 };

/**
 * Each series' records are `[sum, average]` per bucket (the aggregation's `values`):
 * Throughput and Errors — the bucket's total and its average per observed minute (a minute this
 * node was running for, or one with stored counters); Pending — `null` and the average of the
 * pending samples (0 in a watched bucket that is over without samples: nothing was spooled for
 * the project; null when the bucket was not watched, or is still under way: unknown).
 */
export const PIPELINE_VALUES = ['sum', 'average'] as const;

interface Series {
  details: { label: string; hash: string; dimensions: Record<string, string>; color: string | null };
  records: Record<string, [number | null, number | null]>;
  regression: null;
  forecast: null;
}

/**
 * The spec's TimeseriesAggregation for pipeline telemetry (`coverage_mode` null): series Pending,
 * Throughput, Errors over [start, end) in buckets of `interval`, aligned to the interval.
 * `observedSince`: buckets ending before it (this node was not running) with no stored minutes are
 * null rather than 0; `now` bounds `complete_through_at` (the current bucket is provisional).
 */
export function pipelineAggregation(
  minutes: Map<number, MinuteCounters>,
  startMs: number,
  endMs: number,
  interval: TelemetryInterval,
  observedSince: number,
  now: number,
) {
  const step = STEP[interval];
  const first = Math.floor(startMs / step) * step;
  const pending = series('Pending', 'pending');
  const throughput = series('Throughput', 'throughput');
  const errors = series('Errors', 'errors');
  for (let bucket = first; bucket < endMs; bucket += step) {
    let seen = 0;
    let drained = 0;
    let errs = 0;
    let pendingSum = 0;
    let samples = 0;
    // Minutes this node watched (running, and not in the future) or that have stored counters.
    let observed = 0;
    for (let m = bucket; m < bucket + step; m += 60_000) {
      const c = minutes.get(m);
      if (m >= endMs) break;
      if (c || (m + 60_000 > observedSince && m <= now)) observed++;
      if (!c) continue;
      seen++;
      drained += c.throughput_records;
      errs += c.errors;
      pendingSum += c.pending_sum;
      samples += c.samples;
    }
    const key = iso(bucket);
    // A bucket that starts after now has not happened yet: unknown (null), not 0.
    const known = (seen > 0 || bucket + step > observedSince) && bucket <= now;
    const minutesCounted = Math.max(observed, 1);
    throughput.records[key] = known ? [drained, round(drained / minutesCounted)] : [null, null];
    errors.records[key] = known ? [errs, round(errs / minutesCounted)] : [null, null];
    // Without a sample in a watched bucket, nothing was spooled for the project: 0, not unknown.
    // (Only once the bucket is over: early in the current one the first sample may still be due.)
    pending.records[key] = [
      null,
      samples > 0 ? round(pendingSum / samples) : known && observed > 0 && bucket + step <= now ? 0 : null,
    ];
  }
  const currentBucket = Math.floor(now / step) * step;
  return {
    object: 'aggregation',
    coverage_mode: null,
    coverage_reasons: [],
    start_at: iso(first),
    end_at: iso(endMs),
    interval,
    values: [...PIPELINE_VALUES],
    series: [pending, throughput, errors],
    series_total: 3,
    complete_through_at: iso(Math.min(currentBucket, endMs)),
  };
}

function series(label: string, hash: string): Series {
  return { details: { label, hash, dimensions: {}, color: null }, records: {}, regression: null, forecast: null };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
