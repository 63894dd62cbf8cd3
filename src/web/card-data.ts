import type { Services } from '../services.js';
import type { PageRecord } from '../catalog/pages.js';
import { predict } from '../rollup/fits/index.js';
import type { Forecast } from '../rollup/fits/index.js';
import type { MetricRecord, TIME_RANGES } from '../rollup/metric-records.js';
import { bucketBound, INTERVALS, type Interval } from '../rollup/aggregation/buckets.js';
import type { TimeseriesAggregation } from '../rollup/aggregation/run-aggregation.js';
import { resolveTimeRange } from '../rollup/aggregation/time-range.js';
import { CardCache, cardKey } from './card-cache.js';
import type { AggregationQuery, CustomRange } from '../rollup/aggregation/aggregation-service.js';

export type TimeRange = (typeof TIME_RANGES)[number];

/** What a viewer of a page may choose: the range, the zone, and how wide the card is drawn. */
export interface CardWindow {
  timeRange: TimeRange;
  /** `custom` from the page's URL (epoch ms); absent: the page's saved custom range. */
  customStart?: number;
  customEnd?: number;
  timeZone: string;
  /** The card's drawing width in CSS pixels: it never gets more buckets than this. */
  widthPx: number;
}

/** One card's series, compact for the browser: times once, each series' values aligned with them. */
export interface CardData {
  interval: Interval;
  start_at: string;
  end_at: string;
  complete_through_at: string | null;
  series_total: number;
  /** The chart value drawn (the metric's `ui_chart_value`). */
  value: string;
  /** Bucket starts, epoch ms, ascending. */
  times: number[];
  series: Array<{
    hash: string;
    label: string;
    color: string | null;
    values: Array<number | null>;
    /** The regression evaluated at each bucket when the metric shows trends, else null. */
    trend: Array<number | null> | null;
    forecast: Forecast | null;
  }>;
}

/** Widest card the server draws for (a 4K screen); a wider request is drawn at this width. */
export const MAX_CARD_WIDTH_PX = 4096;
export const MIN_CARD_WIDTH_PX = 50;

/**
 * The interval a card of `widthPx` pixels draws `[start, end)` with: the finest of minute, hour,
 * day, month that gives at most one bucket per pixel (what Grafana's max data points do), which is
 * the width-bound form of the API's `auto`.
 */
export function intervalForWidth(start: number, end: number, widthPx: number): Interval {
  const px = Math.max(MIN_CARD_WIDTH_PX, Math.min(MAX_CARD_WIDTH_PX, Math.floor(widthPx)));
  return INTERVALS.find((i) => bucketBound(i, start, end) <= px) ?? 'month';
}

/**
 * The aggregation query (in the HTTP endpoint's names) of one card, and the custom range `custom`
 * resolves to: only what the page lets a viewer choose (range, zone) and the interval its width
 * gives; everything else — values, series, max series, trends, forecast — is the metric's own saved
 * setting, so no viewer can widen what a page shows. A custom range is the URL's, or the page's
 * saved one (what `page_id` means on the endpoint).
 */
export function cardQuery(
  page: PageRecord,
  w: CardWindow,
  now: number,
): { query: AggregationQuery; customRange?: CustomRange } {
  const query: AggregationQuery = { timezone: w.timeZone, time_range: w.timeRange as AggregationQuery['time_range'] };
  let custom: { start: number; end: number } | null = null;
  if (w.timeRange === 'custom') {
    if (w.customStart !== undefined && w.customEnd !== undefined) custom = { start: w.customStart, end: w.customEnd };
    else if (page.custom_range_start_at !== null && page.custom_range_end_at !== null)
      custom = { start: Date.parse(page.custom_range_start_at), end: Date.parse(page.custom_range_end_at) };
  }
  const range = custom ?? resolveTimeRange(w.timeRange, { now, timeZone: w.timeZone, custom: null, earliest: null });
  // all_time's start is the earliest data, which only the aggregation knows: it picks (auto).
  query.interval =
    range === null || w.timeRange === 'all_time' ? 'auto' : intervalForWidth(range.start, range.end, w.widthPx);
  if (custom === null) return { query };
  return {
    query,
    customRange: { start_at: new Date(custom.start).toISOString(), end_at: new Date(custom.end).toISOString() },
  };
}

/** Each server's recent card answers (keyed by its aggregation service: tests run several servers in one process). */
const caches = new WeakMap<object, CardCache<Promise<CardData>>>();

/**
 * Runs one card's query through the aggregation service and returns it compact (CardData). The same
 * card asked again with nothing changed is answered from the cache (card-cache.ts); concurrent asks
 * share one aggregation.
 */
export async function cardData(
  s: Pick<Services, 'aggregation' | 'clock' | 'rollups'>,
  page: PageRecord,
  metric: MetricRecord,
  w: CardWindow,
): Promise<CardData> {
  const now = s.clock.now();
  const { query, customRange } = cardQuery(page, w, now);
  let cache = caches.get(s.aggregation);
  if (!cache) caches.set(s.aggregation, (cache = new CardCache()));
  const key = cardKey({
    metricId: metric.id,
    revision: metric.definition_revision,
    updatedAt: metric.updated_at,
    completeThrough: s.rollups?.completeThrough(metric.id) ?? null,
    now,
    query,
    customRange,
  });
  const hit = cache.get(key);
  if (hit) return hit;
  const answer = widthBound(s, metric, query, customRange, w.widthPx).then((a) => compact(a, metric));
  cache.set(key, answer);
  // A failure is not kept: the next ask tries again.
  answer.catch(() => cache.delete(key));
  return answer;
}

/**
 * The answer, at the interval `query` names or, when it asks `auto` (all_time: only the service
 * knows where the data starts), at the coarser one that gives at most one bucket per pixel.
 */
async function widthBound(
  s: Pick<Services, 'aggregation'>,
  metric: MetricRecord,
  query: AggregationQuery,
  customRange: CustomRange | undefined,
  widthPx: number,
): Promise<TimeseriesAggregation> {
  const opts = customRange ? { customRange } : {};
  let a = await s.aggregation.answer(metric, query, opts);
  if (query.interval !== 'auto') return a;
  const px = Math.max(MIN_CARD_WIDTH_PX, Math.min(MAX_CARD_WIDTH_PX, Math.floor(widthPx)));
  for (
    let i = INTERVALS.indexOf(a.interval) + 1;
    i < INTERVALS.length && bucketBound(a.interval, Date.parse(a.start_at), Date.parse(a.end_at)) - 1 > px;
    i++
  ) {
    a = await s.aggregation.answer(metric, { ...query, interval: INTERVALS[i]! }, opts);
  }
  return a;
}

/** The answer as CardData: the union of the series' bucket times, each series aligned to it. */
export function compact(a: TimeseriesAggregation, metric: MetricRecord): CardData {
  const keys = new Set<string>();
  for (const s of a.series) for (const k of Object.keys(s.records)) keys.add(k);
  const times = [...keys].map((k) => Date.parse(k)).sort((x, y) => x - y);
  const iso = times.map((t) => new Date(t).toISOString());
  return {
    interval: a.interval,
    start_at: a.start_at,
    end_at: a.end_at,
    complete_through_at: a.complete_through_at,
    series_total: a.series_total,
    value: a.values[0] ?? metric.ui_chart_value,
    times,
    series: a.series.map((s) => ({
      hash: s.details.hash,
      label: s.details.label,
      color: s.details.color,
      values: iso.map((k) => s.records[k]?.[0] ?? null),
      trend: s.regression ? times.map((t) => finite(predict(s.regression!, t))) : null,
      forecast: s.forecast,
    })),
  };
}

function finite(v: number): number | null {
  return Number.isFinite(v) ? Math.round(v * 1e6) / 1e6 : null;
}
