import type { ChartValue } from '../rollup/metric-records.js';

/**
 * Control-plane records of monitors, their series states and alerts (spec api-2: Monitor, Monitor
 * series state, Alert). Choices the spec leaves open are fixed here and documented in docs/monitors.md.
 */

export const MONITOR_STATUSES = ['active', 'paused', 'disabled'] as const;
export type MonitorStatus = (typeof MONITOR_STATUSES)[number];
export const MONITOR_SCOPES = ['total', 'any_series', 'each_series'] as const;
export type MonitorScope = (typeof MONITOR_SCOPES)[number];
export const CONDITION_TYPES = ['threshold', 'sustained', 'existence', 'absence'] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];
export const OPERATORS = ['gt', 'gte', 'lt', 'lte', 'eq', 'neq'] as const;
export type Operator = (typeof OPERATORS)[number];
export const ALERT_MODES = ['spanning', 'instant'] as const;
export type AlertMode = (typeof ALERT_MODES)[number];

/** Why the service disabled a monitor (ours; shown as `disabled_reason`). */
export type DisabledReason = 'metric_deleted' | 'metric_error' | 'expired';

export interface SeriesFilters {
  include?: Record<string, string[]>;
  exclude?: Record<string, string[]>;
}

/** Bounds the spec gives (name, window, cron length) and ours (docs/monitors.md, "Limits"). */
export const MONITOR_LIMITS = {
  nameMin: 2,
  nameMax: 64,
  description: 1024,
  windowMinutes: 525_600,
  cronLength: 128,
  sustainedMinutes: 525_600,
  minOccurrences: 1_000,
  occurrenceWindowMinutes: 525_600,
  /** Values per field in one include/exclude list. */
  filterValues: 100,
  /** Monitors one project may hold. */
  perProject: 1_000,
  /** Alerts shown in a monitor's `recent_alerts`. */
  recentAlerts: 10,
  /** Series one evaluation tracks (each_series); more are evaluated but only the first are kept (by hash). */
  trackedSeries: 10_000,
} as const;

/** The settings a user gives (create, preview, update). */
export interface MonitorSettings {
  name: string;
  description: string | null;
  chart_value: ChartValue;
  scope: MonitorScope;
  time_window_minutes: number | null;
  condition_type: ConditionType;
  operator: Operator;
  threshold_value: number | null;
  sustained_minutes: number | null;
  schedule_cron: string;
  alert_mode: AlertMode;
  expires_at: string | null;
  series_filters: SeriesFilters | null;
  min_occurrences: number | null;
  occurrence_window_minutes: number | null;
  /** Ours: the notification channels alert events go to (docs/notifications.md). */
  notification_channel_ids: string[];
  /** Ours: while an alert stays open, notify again every this many minutes; null: only on open and resolve. */
  notify_repeat_minutes: number | null;
}

/** Spec defaults of the create body; `name` defaults to one made from the condition (docs/monitors.md). */
export const MONITOR_DEFAULTS: Omit<MonitorSettings, 'name'> = {
  description: null,
  chart_value: 'sum',
  scope: 'total',
  time_window_minutes: null,
  condition_type: 'threshold',
  operator: 'gt',
  threshold_value: null,
  sustained_minutes: null,
  schedule_cron: '* * * * *',
  alert_mode: 'spanning',
  expires_at: null,
  series_filters: null,
  min_occurrences: null,
  occurrence_window_minutes: null,
  notification_channel_ids: [],
  notify_repeat_minutes: null,
};

/** Settings whose change restarts every series' state (the condition tracked is another one). */
export const CONDITION_FIELDS = [
  'chart_value',
  'scope',
  'time_window_minutes',
  'condition_type',
  'operator',
  'threshold_value',
  'sustained_minutes',
  'series_filters',
  'min_occurrences',
  'occurrence_window_minutes',
  'alert_mode',
] as const satisfies ReadonlyArray<keyof MonitorSettings>;

export interface MonitorRecord extends MonitorSettings {
  id: string;
  slug: string;
  team_id: string;
  project_id: string;
  metric_id: string;
  created_at: string;
  updated_at: string;
  status: MonitorStatus;
  disabled_reason: DisabledReason | null;
  last_evaluated_at: string | null;
  next_evaluation_at: string | null;
  /** Internal: the last slot (epoch ms) whose evaluation committed; a slot at or before it is never evaluated again. */
  last_slot_at: number | null;
  /** Internal: alerts raised so far; numbers the alert slugs. */
  alert_seq: number;
  /** Internal: whether the last evaluation had complete data (`false`: waiting for the window to complete). */
  last_ready: boolean | null;
}

/**
 * One watched series of a monitor (spec: Monitor series state) plus what evaluation keeps between
 * slots. `series_hash` is `__total__` for `total` and `any_series` scopes. Stored under the monitor.
 */
export interface SeriesStateRecord {
  /** = series_hash (the Table key). */
  id: string;
  monitor_id: string;
  series_hash: string;
  series_label: string | null;
  is_firing: boolean;
  started_firing_at: string | null;
  last_triggered_at: string | null;
  last_value: number | null;
  /** Occurrence-counting monitors: when the condition was met, within the occurrence window. */
  occurrence_timestamps: string[] | null;
  /** Sustained: since when the condition has held without a break (the sustained clock), else null. */
  pending_since: string | null;
  /** The alert open for this series, else null. */
  open_alert_id: string | null;
  /** When the open alert was last notified (notifications; null when none). */
  last_notified_at: string | null;
}

export interface AlertRecord {
  id: string;
  slug: string;
  team_id: string;
  project_id: string;
  metric_id: string;
  metric_name: string | null;
  monitor_id: string;
  monitor_name: string | null;
  created_at: string;
  ended_at: string | null;
  series_hash: string;
  series_label: string | null;
  trigger_value: number;
  threshold_value: number;
  condition_description: string;
  /** Ours: why the period ended when not because the condition cleared (`paused`, `deleted`, `condition_changed`, `metric_deleted`, `metric_error`, `expired`), else null. */
  end_reason: string | null;
}

/** The series hash of the whole metric (aggregation's total pseudo-series). */
export const TOTAL_HASH = '__total__';
