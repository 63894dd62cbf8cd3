import { DEFAULT_SERIES_LIMITS } from '../../rollup/series-limit.js';
import { CHART_FAMILY_OF, type MetricRecord, type MetricSeriesRecord } from '../../rollup/metric-records.js';

/**
 * The metric as the API shows it (spec: Metric, every field; `ui_chart_family` derived; `triggered`: an
 * alert of it is open). The series limit fields are ours; `defaultSeriesLimit` answers `series_limit`
 * for a metric stored before they existed.
 */
export function serializeMetric(
  m: MetricRecord,
  triggered = false,
  defaultSeriesLimit = DEFAULT_SERIES_LIMITS.perMetric,
) {
  return {
    object: 'metric',
    id: m.id,
    name: m.name,
    team_id: m.team_id,
    project_id: m.project_id,
    deleted_at: m.deleted_at,
    view_id: m.view_id,
    status: m.status,
    // Sluice addition (docs/metrics.md): why the metric is in `error`; null in every other status.
    error_message: m.status === 'error' ? (m.error_message ?? null) : null,
    group_by: m.group_by,
    filters: m.filters,
    timestamp_field: m.timestamp_field,
    value_field: m.value_field,
    unique_field: m.unique_field,
    null_handling: m.null_handling,
    empty_bucket_handling: m.empty_bucket_handling,
    group_by_display_fields: m.group_by_display_fields,
    backfill_strategy: m.backfill_strategy,
    ui_chart_family: CHART_FAMILY_OF[m.ui_chart_type],
    ui_chart_type: m.ui_chart_type,
    ui_chart_color_mode: m.ui_chart_color_mode,
    ui_chart_color_base: m.ui_chart_color_base,
    ui_chart_color_rules: m.ui_chart_color_rules,
    ui_chart_curve: m.ui_chart_curve,
    ui_chart_show_alerts: m.ui_chart_show_alerts,
    ui_chart_show_monitors: m.ui_chart_show_monitors,
    ui_chart_show_trends: m.ui_chart_show_trends,
    ui_chart_compact_values: m.ui_chart_compact_values,
    ui_chart_y_min: m.ui_chart_y_min,
    ui_chart_y_max: m.ui_chart_y_max,
    ui_chart_show_forecast: m.ui_chart_show_forecast,
    ui_chart_forecast_horizon: m.ui_chart_forecast_horizon,
    ui_chart_forecast_model: m.ui_chart_forecast_model,
    ui_value_unit: m.ui_value_unit,
    ui_chart_value: m.ui_chart_value,
    ui_chart_time_range: m.ui_chart_time_range,
    ui_chart_interval: m.ui_chart_interval,
    ui_chart_custom_range_start_at: m.ui_chart_custom_range_start_at,
    ui_chart_custom_range_end_at: m.ui_chart_custom_range_end_at,
    ui_chart_max_series: m.ui_chart_max_series,
    created_at: m.created_at,
    updated_at: m.updated_at,
    backfill_percent: m.backfill_percent,
    backfill_total_count: m.backfill_total_count,
    backfill_completed_count: m.backfill_completed_count,
    backfill_completed_at: m.backfill_completed_at,
    backfill_started_at: m.backfill_started_at,
    compact_percent: m.compact_percent,
    compact_total_count: m.compact_total_count,
    compact_completed_count: m.compact_completed_count,
    compact_started_at: m.compact_started_at,
    // Sluice additions (docs/metrics.md, "Series limits"): null count on a metric stored before counts were kept, until it registers a series.
    series_limit: m.series_limit ?? defaultSeriesLimit,
    series_count: m.series_count ?? null,
    series_limit_reached_at: m.series_limit_reached_at ?? null,
    has_triggered_monitors: triggered,
  };
}

/** Spec: Metric series. */
export function serializeSeries(s: MetricSeriesRecord) {
  return {
    object: 'metric_series',
    id: s.id,
    metric_id: s.metric_id,
    hash: s.hash,
    dimensions: s.dimensions,
    display_values: s.display_values,
    display_label: s.display_label,
    first_seen_at: s.first_seen_at,
    last_seen_at: s.last_seen_at,
    last_value: s.last_value,
    last_value_at: s.last_value_at,
    color: s.color,
    pinned_at: s.pinned_at,
  };
}
