import { iso } from '../clock.js';
import { ApiError, invalidField } from '../errors.js';
import type { MetricRecord } from '../rollup/metric-records.js';
import { seriesLabel } from '../rollup/aggregation/series-selection.js';
import type { SeriesLookup } from '../rollup/series-cache.js';
import { applySlot, verdicts, watchedSeries, type SeriesValue } from './evaluate.js';
import { nextMonitorSlot } from './monitor-cron.js';
import {
  MONITOR_DEFAULTS,
  TOTAL_HASH,
  type MonitorRecord,
  type MonitorSettings,
  type SeriesStateRecord,
} from './monitor-records.js';
import type { MonitorAggregation } from './window-reader.js';
import { combineSeries, valuesToAsk, windowValue } from './window-values.js';

const MIN = 60_000;
/** Slots one backtest evaluates at most (a week of every-minute slots). */
export const BACKTEST_MAX_SLOTS = 10_080;
/** Bucket reads one backtest may do (slots × series × buckets per window). */
const MAX_WORK = 30_000_000;

export interface BacktestAlert {
  series_hash: string;
  series_label: string | null;
  created_at: string;
  /** null: still open at the end of the backtest. */
  ended_at: string | null;
  trigger_value: number;
}

export interface Backtest {
  object: 'monitor_backtest';
  start_at: string;
  end_at: string;
  complete_through_at: string | null;
  slots_evaluated: number;
  alerts: BacktestAlert[];
}

/**
 * When the monitor would have opened and closed alerts over the last `days` of stored data
 * (docs/monitors.md, "Backtest"): every cron slot in the range evaluated as the scheduler would —
 * windows, scopes, filters, sustained clocks, occurrences, alert modes — from one aggregation read of
 * the whole range (minute buckets up to a week of range and window, hours beyond), only up to
 * `complete_through_at`.
 */
export async function backtestMonitor(
  aggregation: MonitorAggregation,
  metric: MetricRecord,
  settings: MonitorSettings,
  days: number,
  now: number,
  registry: SeriesLookup & { hashes(): Iterable<string> },
): Promise<Backtest> {
  if (settings.time_window_minutes === null)
    throw invalidField(
      'body.backtest_days',
      'needs a finite time_window_minutes: a window since the metric was created has no fixed length to replay',
    );
  const windowMs = settings.time_window_minutes * MIN;
  let end = Math.floor(now / MIN) * MIN;
  const start = end - days * 24 * 60 * MIN;
  const spanMinutes = (end - start + windowMs) / MIN;
  const interval = spanMinutes <= 10_080 ? 'minute' : 'hour';
  const step = interval === 'minute' ? MIN : 60 * MIN;
  const values = valuesToAsk(settings.chart_value);
  const answer = await aggregation.answer(
    metric,
    {
      start_at: iso(start - windowMs),
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
  const complete = answer.complete_through_at === null ? null : Date.parse(answer.complete_through_at);
  if (complete === null)
    return {
      object: 'monitor_backtest',
      start_at: iso(start),
      end_at: iso(end),
      complete_through_at: null,
      slots_evaluated: 0,
      alerts: [],
    };
  end = Math.min(end, Math.floor(complete / MIN) * MIN);

  // Buckets by series: bucket start → [value, count].
  const grouped = metric.group_by.length > 0;
  const series = answer.series.map((s) => ({
    hash: grouped ? s.details.hash : TOTAL_HASH,
    label: s.details.label,
    dimensions: s.details.dimensions ?? {},
    buckets: new Map(Object.entries(s.records).map(([t, r]) => [Date.parse(t), r] as const)),
  }));
  const seen = new Set(series.map((s) => s.hash));
  const silent: SeriesValue[] = [];
  if (grouped) {
    for (const hash of registry.hashes()) {
      const r = registry.get(hash);
      if (r && !seen.has(hash)) silent.push({ hash, label: seriesLabel(r), dimensions: r.dimensions, value: null });
    }
  }
  const slots: number[] = [];
  for (
    let t = nextMonitorSlot(settings.schedule_cron, start);
    t !== null && t <= end;
    t = nextMonitorSlot(settings.schedule_cron, t)
  ) {
    slots.push(t);
    if (slots.length > BACKTEST_MAX_SLOTS)
      throw invalidField(
        'body.backtest_days',
        `covers more than ${BACKTEST_MAX_SLOTS} slots of schedule_cron; use fewer days`,
      );
  }
  const perWindow = Math.ceil(windowMs / step);
  if (slots.length * Math.max(1, series.length) * perWindow > MAX_WORK) {
    throw new ApiError(
      'request_validation_failed',
      'body.backtest_days covers too much data to replay at once; use fewer days or a shorter window',
      { details: [{ field: 'body.backtest_days', message: 'covers too much data to replay at once' }] },
    );
  }

  const m: MonitorRecord = {
    ...MONITOR_DEFAULTS,
    ...settings,
    id: 'backtest',
    slug: '',
    team_id: metric.team_id,
    project_id: metric.project_id,
    metric_id: metric.id,
    created_at: '',
    updated_at: '',
    status: 'active',
    disabled_reason: null,
    last_evaluated_at: null,
    next_evaluation_at: null,
    last_slot_at: null,
    alert_seq: 0,
    last_ready: true,
  };
  let states = new Map<string, SeriesStateRecord>();
  const alerts: BacktestAlert[] = [];
  const open = new Map<string, BacktestAlert>();
  let seq = 0;
  for (const at of slots) {
    const from = at - windowMs;
    const parts: Array<{ value: number | null; count: number | null }> = [];
    const now: SeriesValue[] = series.map((s) => {
      const vals: Array<number | null> = [];
      const counts: Array<number | null> = [];
      for (let t = Math.floor(from / step) * step; t < at; t += step) {
        const row = s.buckets.get(t);
        if (!row) continue;
        vals.push(row[0] ?? null);
        counts.push(row[1] ?? null);
      }
      const value = windowValue(settings.chart_value, vals, values.length > 1 ? counts : undefined);
      parts.push({ value, count: values.length > 1 ? counts.reduce<number>((a, c) => a + (c ?? 0), 0) : null });
      return { hash: s.hash, label: s.label, dimensions: s.dimensions, value };
    });
    if (grouped)
      now.push(
        { hash: TOTAL_HASH, label: metric.name, dimensions: {}, value: combineSeries(settings.chart_value, parts) },
        ...silent,
      );
    else if (now.length === 0) now.push({ hash: TOTAL_HASH, label: metric.name, dimensions: {}, value: null });
    const outcome = applySlot(m, at, verdicts(m, watchedSeries(m, grouped, now)), states);
    for (const c of outcome.closed) {
      const a = open.get(c.alert_id);
      if (a) a.ended_at = c.ended_at;
      open.delete(c.alert_id);
    }
    for (const o of outcome.opened) {
      const a: BacktestAlert = {
        series_hash: o.series_hash,
        series_label: o.series_label,
        created_at: o.created_at,
        ended_at: o.ended_at,
        trigger_value: o.trigger_value,
      };
      alerts.push(a);
      if (o.ended_at === null) {
        const id = `bt_${++seq}`;
        open.set(id, a);
        const s = outcome.states.find((x) => x.id === o.key);
        if (s) s.open_alert_id = id;
      }
    }
    states = new Map(outcome.states.map((s) => [s.id, s]));
  }
  return {
    object: 'monitor_backtest',
    start_at: iso(start),
    end_at: iso(end),
    complete_through_at: answer.complete_through_at,
    slots_evaluated: slots.length,
    alerts,
  };
}
