import type { MonitorCatalog } from '../monitor/monitor-catalog.js';
import type { MetricRecord } from '../rollup/metric-records.js';

/**
 * What a card's markers depend on, as a string that changes when they may have: the metric's open
 * alerts, and each of its monitors' settings, status and alert count (an `instant` alert opens and
 * ends between two looks). Empty when the metric shows neither. The live refresh compares it
 * (page-events.ts), so an alert that opens or ends redraws open pages without new data.
 */
export function markersVersion(monitors: Pick<MonitorCatalog, 'list' | 'store'>, metric: MetricRecord): string {
  if (!(metric.ui_chart_show_alerts || metric.ui_chart_show_monitors)) return '';
  const open = monitors.store
    .openOfMetric(metric.id)
    .map((a) => a.alertId)
    .join(',');
  const own = monitors
    .list(metric.project_id)
    .filter((m) => m.metric_id === metric.id)
    .map((m) => `${m.id}:${m.updated_at}:${m.status}:${m.alert_seq}`)
    .join(',');
  return `${open};${own}`;
}
