import type { FieldIssue } from '../errors.js';
import { VALUE_FIELD_CHART_VALUES, type MetricRecord } from '../rollup/metric-records.js';
import { checkMonitorCron } from './monitor-cron.js';
import type { MonitorSettings, MonitorStatus } from './monitor-records.js';

/**
 * The create and preview rules 1–7 of the spec (api-2, Monitors) and ours, over settings with every
 * default applied (create) or merged with the stored monitor (update). Each problem names the body
 * field to fix. The shapes (types, ranges, enums) are checked before, by the route's schema.
 */
export function monitorRuleIssues(
  m: MonitorSettings,
  metric: MetricRecord,
  opts: { status: MonitorStatus; now: number; checkExpiry: boolean },
): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const add = (field: string, message: string) => issues.push({ field: `body.${field}`, message });

  // The value must be one the metric can compute (as the aggregation endpoint requires).
  if (VALUE_FIELD_CHART_VALUES.has(m.chart_value) && metric.value_field === null) {
    add(
      'chart_value',
      `"${m.chart_value}" needs the metric's value_field, which is not set; use count, cumulative_count or count_unique, or set value_field on the metric`,
    );
  }
  if (m.chart_value === 'count_unique' && metric.unique_field === null) {
    add('chart_value', '"count_unique" needs the metric\'s unique_field, which is not set');
  }

  // Rule 1: absence counts observations over a complete, finite window.
  if (m.condition_type === 'absence') {
    if (m.chart_value !== 'count')
      add('chart_value', 'must be "count" for an absence condition (absence means no observations in the window)');
    if (m.time_window_minutes === null)
      add(
        'time_window_minutes',
        'must be set (1 to 525600) for an absence condition: absence is judged over a finite window',
      );
  }
  // Rule 2: what each condition type needs, and what it has no use for.
  const usesThreshold = m.condition_type === 'threshold' || m.condition_type === 'sustained';
  if (usesThreshold && m.threshold_value === null)
    add('threshold_value', `is required when condition_type is "${m.condition_type}"`);
  if (!usesThreshold && m.threshold_value !== null) {
    add(
      'threshold_value',
      `must be null for condition_type "${m.condition_type}" (${m.condition_type === 'existence' ? 'existence means the value is greater than 0' : 'absence means no observations'})`,
    );
  }
  if (m.condition_type === 'sustained' && m.sustained_minutes === null)
    add('sustained_minutes', 'is required when condition_type is "sustained"');
  if (m.condition_type !== 'sustained' && m.sustained_minutes !== null)
    add('sustained_minutes', 'must be null unless condition_type is "sustained"');
  // Rule 3: occurrences come in pairs and exclude sustained.
  if ((m.min_occurrences === null) !== (m.occurrence_window_minutes === null)) {
    add(
      m.min_occurrences === null ? 'min_occurrences' : 'occurrence_window_minutes',
      'min_occurrences and occurrence_window_minutes must both be set or both be null',
    );
  }
  if (m.min_occurrences !== null && m.condition_type === 'sustained') {
    add('min_occurrences', 'cannot be combined with a sustained condition; use one or the other');
  }
  // Rule 4: a five-field UTC cron, at most one slot per minute.
  const cron = checkMonitorCron(m.schedule_cron);
  if (!cron.ok) add('schedule_cron', cron.message);
  // Rule 5: not created (or resumed, updated) active with an expiry already past.
  if (opts.checkExpiry && opts.status === 'active' && m.expires_at !== null && Date.parse(m.expires_at) <= opts.now) {
    add(
      'expires_at',
      'is in the past: a monitor cannot be active after it expires; send a later expires_at, null, or status "paused"',
    );
  }
  // Ours: series filters name grouping fields, and only on a metric with series.
  if (m.series_filters !== null) {
    const groups = new Set(metric.group_by);
    for (const part of ['include', 'exclude'] as const) {
      for (const field of Object.keys(m.series_filters[part] ?? {})) {
        if (!groups.has(field)) {
          add(
            `series_filters.${part}.${field}`,
            metric.group_by.length
              ? `names a field outside the metric's group_by (${metric.group_by.join(', ')})`
              : 'cannot be used: the metric has no group_by, so it has one series',
          );
        }
      }
    }
  }
  return issues;
}
