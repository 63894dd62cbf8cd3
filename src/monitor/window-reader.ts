import { iso } from '../clock.js';
import type { ChartValue, MetricRecord } from '../rollup/metric-records.js';
import { seriesLabel } from '../rollup/aggregation/series-selection.js';
import type { SeriesLookup } from '../rollup/series-cache.js';
import type { SeriesValue } from './evaluate.js';
import type { MonitorSettings } from './monitor-records.js';
import { TOTAL_HASH } from './monitor-records.js';
import { combineSeries, valuesToAsk, windowValue } from './window-values.js';

/**
 * The part of the aggregation service monitors use (`services.aggregation`, aggregation-service.ts):
 * the HTTP query names as a plain object; `allSeries` for every series, unfolded.
 */
export interface MonitorAggregation {
  answer(
    metric: MetricRecord,
    query: Record<string, unknown>,
    opts?: { allSeries?: true },
  ): Promise<{
    complete_through_at: string | null;
    values: string[];
    series: Array<{
      details: { hash: string; label: string; dimensions: Record<string, unknown> };
      records: Record<string, Array<number | null>>;
    }>;
  }>;
  /**
   * One value per series over the whole window, states merged (aggregation-service.ts
   * `windowValues`): what percentiles and distinct counts over several buckets are judged on.
   */
  windowValues(
    metric: MetricRecord,
    req: {
      start: number;
      end: number;
      value: ChartValue;
      nullHandling: MetricRecord['null_handling'];
      series: readonly string[];
    },
  ): Promise<Map<string, number | null>>;
}

/** Values that cannot be made from bucket figures: the window's merged states answer them (`windowValues`). */
const MERGED_VALUES: ReadonlySet<ChartValue> = new Set(['p50', 'p95', 'p99', 'count_unique']);

export interface MonitorWindow {
  start: number;
  end: number;
  completeThroughAt: string | null;
  /** False when the window ends after `complete_through_at` (no verdict yet). */
  ready: boolean;
  /** Every series with data in the window, and every registered one without (value null). */
  series: SeriesValue[];
}

/** Largest number of buckets asked for one window (a week of minutes, the aggregation's explicit limit). */
const MAX_BUCKETS = 10_080;

/** The window of a slot ending at `end`: `time_window_minutes` back, or since the metric was created. */
export function windowBounds(
  m: Pick<MonitorSettings, 'time_window_minutes'>,
  metric: Pick<MetricRecord, 'created_at'>,
  end: number,
): { start: number; end: number } {
  const start =
    m.time_window_minutes !== null
      ? end - m.time_window_minutes * 60_000
      : Math.floor(Date.parse(metric.created_at) / 60_000) * 60_000;
  return { start: Math.min(start, end - 60_000), end };
}

/**
 * Read one monitor window through the aggregation service, in-process (strict coverage: only final
 * data), and reduce each series' buckets to one value (window-values.ts). The finest interval giving
 * at most a week of buckets is used: minutes up to a week, hours up to ~1 year.
 */
export async function readWindow(
  aggregation: MonitorAggregation,
  metric: MetricRecord,
  m: Pick<MonitorSettings, 'time_window_minutes' | 'chart_value'>,
  end: number,
  registry: SeriesLookup & { hashes(): Iterable<string> },
): Promise<MonitorWindow> {
  const { start } = windowBounds(m, metric, end);
  const minutes = (end - start) / 60_000;
  const interval = minutes <= MAX_BUCKETS ? 'minute' : minutes / 60 <= MAX_BUCKETS ? 'hour' : 'day';
  const values = valuesToAsk(m.chart_value);
  const answer = await aggregation.answer(
    metric,
    {
      start_at: iso(start),
      end_at: iso(end),
      values: values.join(','),
      coverage_mode: 'strict',
      normalize: false,
      interval,
      timezone: 'UTC',
      empty_bucket_handling: 'gaps',
    },
    { allSeries: true },
  );
  const ready = answer.complete_through_at !== null && Date.parse(answer.complete_through_at) >= end;
  const series: SeriesValue[] = [];
  const seen = new Set<string>();
  const grouped = metric.group_by.length > 0;
  const parts: Array<{ value: number | null; count: number | null }> = [];
  for (const s of answer.series) {
    // Buckets in time order (the map's keys are ISO bucket starts).
    const rows = Object.entries(s.records)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, r]) => r);
    const counts = values.length > 1 ? rows.map((r) => r[1] ?? null) : undefined;
    const value = windowValue(
      m.chart_value,
      rows.map((r) => r[0] ?? null),
      counts,
    );
    const hash = grouped ? s.details.hash : TOTAL_HASH;
    seen.add(hash);
    series.push({ hash, label: s.details.label, dimensions: s.details.dimensions ?? {}, value });
    parts.push({ value, count: counts ? counts.reduce<number>((a, c) => a + (c ?? 0), 0) : null });
  }
  // A metric with group_by: its total (for `total` monitors) from its series.
  if (grouped && !seen.has(TOTAL_HASH))
    series.push({ hash: TOTAL_HASH, label: metric.name, dimensions: {}, value: combineSeries(m.chart_value, parts) });
  // Percentiles and distinct counts: from the window's merged states, per series and for the total
  // (stored as its own series), not from bucket figures — exact whatever the window's length.
  // Registered series without data in the window stay without a value (they are not read).
  const valued = series.filter((s) => s.value !== null);
  if (ready && MERGED_VALUES.has(m.chart_value) && valued.length > 0) {
    const merged = await aggregation.windowValues(metric, {
      start,
      end,
      value: m.chart_value,
      nullHandling: metric.null_handling,
      series: valued.map((s) => s.hash),
    });
    for (const s of valued) s.value = merged.get(s.hash) ?? null;
  }
  // A registered series with nothing in the window is in it with no value (what absence looks for).
  if (grouped) {
    for (const hash of registry.hashes()) {
      if (seen.has(hash)) continue;
      const r = registry.get(hash);
      if (r) series.push({ hash, label: seriesLabel(r), dimensions: r.dimensions, value: null });
    }
  }
  return { start, end, completeThroughAt: answer.complete_through_at, ready, series };
}
