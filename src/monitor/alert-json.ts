import type { AlertRecord } from './monitor-records.js';

/** Spec: Alert, plus ours (`end_reason`, docs/monitors.md): the API's alert and the one notification payloads carry. */
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
