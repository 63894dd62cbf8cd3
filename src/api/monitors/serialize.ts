import { describeCondition } from '../../monitor/condition-text.js';
import { serializeAlert } from '../../monitor/alert-json.js';
import type { AlertRecord, MonitorRecord, SeriesStateRecord } from '../../monitor/monitor-records.js';

export { serializeAlert };

/** Spec: Monitor series state (plus `series_label`, `pending_since`). */
export function serializeState(s: SeriesStateRecord) {
  return {
    object: 'monitor_series_state',
    monitor_id: s.monitor_id,
    series_hash: s.series_hash,
    series_label: s.series_label,
    is_firing: s.is_firing,
    started_firing_at: s.started_firing_at,
    last_triggered_at: s.last_triggered_at,
    last_value: s.last_value,
    occurrence_timestamps: s.occurrence_timestamps,
    pending_since: s.pending_since,
    open_alert_id: s.open_alert_id,
  };
}

/** Spec: Monitor. Lists carry `recent_alerts` and `series_states` too (get is the complete view; a list the same shape). */
export function serializeMonitor(m: MonitorRecord, recent: AlertRecord[], states: SeriesStateRecord[]) {
  return {
    object: 'monitor',
    id: m.id,
    slug: m.slug,
    team_id: m.team_id,
    project_id: m.project_id,
    metric_id: m.metric_id,
    created_at: m.created_at,
    updated_at: m.updated_at,
    name: m.name,
    description: m.description,
    status: m.status,
    disabled_reason: m.disabled_reason,
    chart_value: m.chart_value,
    scope: m.scope,
    time_window_minutes: m.time_window_minutes,
    condition_type: m.condition_type,
    operator: m.operator,
    threshold_value: m.threshold_value,
    sustained_minutes: m.sustained_minutes,
    schedule_cron: m.schedule_cron,
    alert_mode: m.alert_mode,
    expires_at: m.expires_at,
    series_filters: m.series_filters,
    min_occurrences: m.min_occurrences,
    occurrence_window_minutes: m.occurrence_window_minutes,
    notification_channel_ids: m.notification_channel_ids ?? [],
    notify_repeat_minutes: m.notify_repeat_minutes ?? null,
    condition_description: describeCondition(m),
    last_evaluated_at: m.last_evaluated_at,
    next_evaluation_at: m.next_evaluation_at,
    evaluation_ready: m.last_ready,
    recent_alerts: recent.map(serializeAlert),
    series_states: states.map(serializeState),
  };
}
