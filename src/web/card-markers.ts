import { overlaps } from '../api/alerts/routes.js';
import type { AlertRecord, MonitorRecord, Operator } from '../monitor/monitor-records.js';
import type { MetricRecord } from '../rollup/metric-records.js';
import type { Services } from '../services.js';
import type { CardData } from './card-data.js';

/** One firing period drawn on a card: no ids, no values beyond the period, only what the card shows. */
export interface AlertMarker {
  /** When the period opened and ended (null: still firing), epoch ms. */
  start: number;
  end: number | null;
  /** The monitor's name (what the card's reader sees on the band). */
  label: string;
  /** The series that fired when the card shows it, else null (the whole metric, or a series not on the card). */
  series_hash: string | null;
  series_label: string | null;
}

/** One monitor threshold drawn as a horizontal line. */
export interface ThresholdMarker {
  value: number;
  operator: Operator;
  /** The monitor's name. */
  label: string;
}

/** What a card draws over its data when its metric asks for it (docs/pages.md, "Alerts and thresholds"). */
export interface CardMarkers {
  alerts: AlertMarker[];
  thresholds: ThresholdMarker[];
}

/** Most alert periods one card carries (the latest); older ones in a long window are left out. */
export const MAX_ALERT_MARKERS = 200;
/** Most threshold lines one card carries. */
export const MAX_THRESHOLD_MARKERS = 20;

/**
 * The alert periods and monitor thresholds of one card, or null when its metric shows neither
 * (`ui_chart_show_alerts`, `ui_chart_show_monitors`) or the card has no data. Alerts are those of
 * the metric whose firing period overlaps the card's window, with the same rule as
 * `GET …/metrics/:metric_id/alerts` (opened before the end, not ended before the start). Thresholds
 * are those of the metric's active `threshold` and `sustained` monitors on the value the card draws
 * (a threshold on another value would be read against the wrong line). A public page shows these to
 * anyone, so each carries only a name, a period or a value: no monitor or alert ids, no channels,
 * no trigger values, and a series label only when the card itself shows that series.
 */
export function cardMarkers(
  s: Pick<Services, 'monitors'>,
  metric: MetricRecord,
  data: CardData | null,
): CardMarkers | null {
  if (!data || !(metric.ui_chart_show_alerts || metric.ui_chart_show_monitors)) return null;
  return {
    alerts: metric.ui_chart_show_alerts ? alertMarkers(s.monitors.store.alertsOfMetric(metric.id), data) : [],
    thresholds: metric.ui_chart_show_monitors
      ? thresholdMarkers(s.monitors.list(metric.project_id), metric, data.value)
      : [],
  };
}

/** The alerts overlapping the card's window, oldest first, at most MAX_ALERT_MARKERS (the latest). */
export function alertMarkers(alerts: readonly AlertRecord[], data: CardData): AlertMarker[] {
  const start = Date.parse(data.start_at);
  const end = Date.parse(data.end_at);
  const shown = new Map(data.series.map((x) => [x.hash, x.label]));
  return alerts
    .filter((a) => overlaps(a, start, end))
    .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
    .slice(-MAX_ALERT_MARKERS)
    .map((a) => {
      const label = shown.get(a.series_hash);
      return {
        start: Date.parse(a.created_at),
        end: a.ended_at === null ? null : Date.parse(a.ended_at),
        label: a.monitor_name ?? 'Alert',
        series_hash: label === undefined ? null : a.series_hash,
        series_label: label ?? null,
      };
    });
}

/** Thresholds of the metric's active threshold and sustained monitors on the drawn value, lowest first. */
export function thresholdMarkers(
  monitors: readonly MonitorRecord[],
  metric: Pick<MetricRecord, 'id'>,
  value: string,
): ThresholdMarker[] {
  return monitors
    .filter(
      (m) =>
        m.metric_id === metric.id &&
        m.status === 'active' &&
        (m.condition_type === 'threshold' || m.condition_type === 'sustained') &&
        m.threshold_value !== null &&
        m.chart_value === value,
    )
    .sort((a, b) => a.threshold_value! - b.threshold_value! || a.name.localeCompare(b.name))
    .slice(0, MAX_THRESHOLD_MARKERS)
    .map((m) => ({ value: m.threshold_value!, operator: m.operator, label: m.name }));
}
