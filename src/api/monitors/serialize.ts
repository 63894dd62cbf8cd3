import { describeCondition } from '../../monitor/condition-text.js';
import type { AlertRecord, MonitorRecord, SeriesStateRecord } from '../../monitor/monitor-records.js';

/** Spec: Alert, plus ours (`end_reason`, docs/monitors.md). */
export function serializeAlert(a: AlertRecord) {
  return {
    object: 'alert',
    id: a.id,
    slug: a.slug,
    team_id: a.team_id,
    project_id: a.project_id,
    metric_id: a.metric_id,
    metric_name: a.metric_name,
    monitor_id: a.monitor_id,
    monitor_name: a.monitor_name,
    created_at: a.created_at,
    ended_at: a.ended_at,
    is_open: a.ended_at === null,
    series_hash: a.series_hash,
    series_label: a.series_label,
    trigger_value: a.trigger_value,
    threshold_value: a.threshold_value,
    condition_description: a.condition_description,
    end_reason: a.end_reason,
  };
}

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
