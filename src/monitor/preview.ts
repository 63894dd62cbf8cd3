import { iso } from '../clock.js';
import { ApiError } from '../errors.js';
import type { MetricCatalog } from '../rollup/metric-catalog.js';
import type { MetricRecord } from '../rollup/metric-records.js';
import { conditionMet, watchedSeries } from './evaluate.js';
import { assertRules, withDefaults, type MonitorInput } from './monitor-catalog.js';
import { monitorRuleIssues } from './monitor-rules.js';
import { readWindow, type MonitorAggregation } from './window-reader.js';
import { backtestMonitor, type Backtest } from './backtest.js';

export interface PreviewDeps {
  /** Null while the aggregation service does not run (the pipeline is off): 503 after the rules are checked. */
  aggregation: MonitorAggregation | null;
  metrics: Pick<MetricCatalog, 'store'>;
  now: number;
}

/** Spec: Monitor preview (`object: monitor_preview`). */
export interface MonitorPreview {
  object: 'monitor_preview';
  start_at: string;
  end_at: string;
  complete_through_at: string | null;
  ready: boolean;
  verdicts: Array<{ series_hash: string; series_label: string | null; value: number | null; is_met: boolean | null }>;
  /** Only when asked (`backtest_days`, or `?backtest=<n>d`): the alerts the monitor would have raised. */
  backtest?: Backtest;
}

/**
 * Preview (spec rule 7): the same rules, series filtering and condition as a scheduled evaluation,
 * over the window ending at the current minute — no cron, no sustained duration, no occurrence
 * counting. An incomplete window is `ready: false` with no verdicts. Each watched series gets a
 * verdict (for `any_series` too, so the caller sees which series would fire); `is_met` is null for a
 * series with no value, except for absence, where no value is what it looks for.
 */
export async function previewMonitor(
  deps: PreviewDeps,
  metric: MetricRecord,
  body: MonitorInput,
  backtestDays?: number,
): Promise<MonitorPreview> {
  const settings = withDefaults(body, metric);
  assertRules(
    monitorRuleIssues(settings, metric, { status: body.status ?? 'active', now: deps.now, checkExpiry: true }),
  );
  if (!deps.aggregation)
    throw new ApiError(
      'service_unavailable',
      'Monitor preview needs the aggregation service, which is not running on this node (pipeline off)',
    );
  const end = Math.floor(deps.now / 60_000) * 60_000;
  const registry = deps.metrics.store.seriesView(metric);
  const w = await readWindow(deps.aggregation, metric, settings, end, registry);
  const backtest =
    backtestDays === undefined
      ? {}
      : { backtest: await backtestMonitor(deps.aggregation, metric, settings, backtestDays, deps.now, registry) };
  const base = {
    object: 'monitor_preview' as const,
    start_at: iso(w.start),
    end_at: iso(w.end),
    complete_through_at: w.completeThroughAt,
    ...backtest,
  };
  if (!w.ready) return { ...base, ready: false, verdicts: [] };
  const watched = watchedSeries(settings, metric.group_by.length > 0, w.series);
  return {
    ...base,
    ready: true,
    verdicts: watched
      .sort((a, b) => a.hash.localeCompare(b.hash))
      .map((s) => ({
        series_hash: s.hash,
        series_label: s.label,
        value: s.value,
        is_met: s.value === null && settings.condition_type !== 'absence' ? null : conditionMet(settings, s.value),
      })),
  };
}
