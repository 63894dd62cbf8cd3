import type { ChartValue } from '../rollup/metric-records.js';

/**
 * One value per series over a monitor's window, from the aggregation's buckets (docs/monitors.md,
 * "How a window becomes one value"). Counts, sums and extremes combine exactly; `last` is the latest
 * bucket with a value; the running totals are their last bucket; `average` is the buckets' averages
 * weighted by their record counts. Percentiles and `count_unique` cannot be merged from bucket
 * figures: here a longer window takes the largest bucket figure (a bound, what the backtest uses);
 * the scheduled evaluation and the preview replace it with the window's merged states
 * (window-reader.ts, aggregation service `windowValues`).
 */
export function windowValue(
  chartValue: ChartValue,
  values: ReadonlyArray<number | null>,
  counts?: ReadonlyArray<number | null>,
): number | null {
  const present: number[] = [];
  for (const v of values) if (v !== null && Number.isFinite(v)) present.push(v);
  if (present.length === 0) return null;
  switch (chartValue) {
    case 'count':
    case 'sum':
      return present.reduce((a, b) => a + b, 0);
    case 'cumulative_sum':
    case 'cumulative_count':
    case 'last':
      return present[present.length - 1]!;
    case 'min':
      return Math.min(...present);
    case 'max':
    case 'p50':
    case 'p95':
    case 'p99':
    case 'count_unique':
      return Math.max(...present);
    case 'average': {
      if (!counts) return present.reduce((a, b) => a + b, 0) / present.length;
      let weighted = 0;
      let n = 0;
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        const c = counts[i] ?? 0;
        if (v === null || v === undefined || !Number.isFinite(v) || c <= 0) continue;
        weighted += v * c;
        n += c;
      }
      return n > 0 ? weighted / n : null;
    }
  }
}

/** The `values` to ask the aggregation for: the chart value, and `count` to weight averages. */
export function valuesToAsk(chartValue: ChartValue): ChartValue[] {
  return chartValue === 'average' ? ['average', 'count'] : [chartValue];
}

/**
 * The whole metric's value from its series' window values, for a `total` monitor of a metric with
 * group_by (the aggregation answers series, not their total): additive values add up, `min` takes
 * the least, `average` weights by record counts, the others take the largest (docs/monitors.md).
 */
export function combineSeries(
  chartValue: ChartValue,
  parts: ReadonlyArray<{ value: number | null; count: number | null }>,
): number | null {
  const present = parts.filter((p) => p.value !== null);
  if (present.length === 0) return null;
  const values = present.map((p) => p.value!);
  switch (chartValue) {
    case 'count':
    case 'sum':
    case 'cumulative_sum':
    case 'cumulative_count':
      return values.reduce((a, b) => a + b, 0);
    case 'min':
      return Math.min(...values);
    case 'average':
      return windowValue(
        'average',
        values,
        present.map((p) => p.count),
      );
    default:
      return Math.max(...values);
  }
}
