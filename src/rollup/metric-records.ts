/**
 * Control-plane records of metrics (spec: Metric, Metric series) and the value sets of their fields.
 * Every choice the spec leaves open (defaults, the chart family of each chart type, the shape of a
 * color rule) is fixed here and documented in docs/metrics.md; the API and the rollups read these.
 */

/** Spec: MetricStatus. `waiting_for_transforms`: the view has no transform producing records yet. */
export const METRIC_STATUSES = [
  'initializing',
  'waiting_for_transforms',
  'backfilling',
  'active',
  'error',
  'cancelled',
] as const;
export type MetricStatus = (typeof METRIC_STATUSES)[number];

export const NULL_HANDLINGS = ['skip', 'count_as_zero'] as const;
export const EMPTY_BUCKET_HANDLINGS = ['zero', 'gaps'] as const;
export const BACKFILL_STRATEGIES = ['newest_first', 'oldest_first'] as const;

export const CHART_FAMILIES = ['cartesian', 'radial', 'geographic', 'temporal', 'hierarchical'] as const;
export type ChartFamily = (typeof CHART_FAMILIES)[number];

export const CHART_TYPES = [
  'line',
  'area',
  'bar',
  'pie',
  'scatter',
  'radar',
  'stat',
  'gauge',
  'calendar',
  'uptime',
] as const;
export type ChartType = (typeof CHART_TYPES)[number];

/**
 * `ui_chart_family` is read-only, derived from `ui_chart_type` (spec). Ours: charts over x/y axes are
 * cartesian; charts around a centre (slices, spokes, a dial, a single figure) radial; charts laid out
 * on the calendar or as an up/down timeline temporal. No type maps to geographic or hierarchical yet.
 */
export const CHART_FAMILY_OF: Readonly<Record<ChartType, ChartFamily>> = {
  line: 'cartesian',
  area: 'cartesian',
  bar: 'cartesian',
  scatter: 'cartesian',
  pie: 'radial',
  radar: 'radial',
  gauge: 'radial',
  stat: 'radial',
  calendar: 'temporal',
  uptime: 'temporal',
};

export const CHART_COLOR_MODES = ['by_series', 'by_intensity', 'by_value'] as const;
export const CHART_COLORS = ['blue', 'red', 'amber', 'green', 'teal', 'purple', 'pink'] as const;
export const CHART_CURVES = ['linear', 'step', 'smooth'] as const;
export const FORECAST_HORIZONS = [
  'next_7_days',
  'next_30_days',
  'next_90_days',
  'end_of_quarter',
  'end_of_year',
  'next_year',
] as const;
export const FORECAST_MODELS = ['auto', 'linear', 'exponential', 'logarithmic', 'logistic', 'sinusoidal'] as const;

/** Spec: MetricChartValue. */
export const CHART_VALUES = [
  'count',
  'average',
  'sum',
  'min',
  'max',
  'last',
  'cumulative_sum',
  'cumulative_count',
  'p50',
  'p95',
  'p99',
  'count_unique',
] as const;
export type ChartValue = (typeof CHART_VALUES)[number];

/** Chart values computed from `value_field` (it must be set, and numeric). */
export const VALUE_FIELD_CHART_VALUES: ReadonlySet<ChartValue> = new Set([
  'average',
  'sum',
  'min',
  'max',
  'last',
  'cumulative_sum',
  'p50',
  'p95',
  'p99',
]);

/** Spec: AnalyticsTimeRange. */
export const TIME_RANGES = [
  'last_hour',
  'last_6_hours',
  'today',
  'last_24_hours',
  'yesterday',
  'this_week',
  'last_week',
  'this_month',
  'last_month',
  'this_quarter',
  'last_quarter',
  'this_year',
  'last_year',
  'last_7_days',
  'last_30_days',
  'last_90_days',
  'last_365_days',
  'all_time',
  'custom',
  'next_7_days',
  'next_30_days',
  'next_90_days',
] as const;

/** Spec: ChartInterval (setting). */
export const CHART_INTERVALS = ['minute', 'hour', 'day', 'month', 'auto'] as const;

/** Comparison of a color rule (spec: MetricColorRule, structure ours). */
export const COLOR_RULE_OPERATORS = ['gt', 'gte', 'lt', 'lte', 'eq'] as const;

/** One value-to-color rule of `by_value` mode: the first rule whose comparison holds colors the value. */
export interface MetricColorRule {
  operator: (typeof COLOR_RULE_OPERATORS)[number];
  value: number;
  /** A palette color (`blue` … `pink`) or `#rrggbb`. */
  color: string;
}

/**
 * The name `timestamp_field` takes for the record's event time (its `timestamp`, or the time it was
 * received): the `__ts` column every view file has. The default; any `date` output field may be used instead.
 */
export const EVENT_TIME_FIELD = '__ts';

/** Bounds the spec leaves open (ours; docs/metrics.md). `ui_chart_max_series` is the spec's 1..50. */
export const METRIC_LIMITS = {
  name: 128,
  groupBy: 10,
  colorRules: 20,
  unit: 32,
  maxSeries: 50,
  fieldName: 128,
} as const;

/** The metric as stored: every field of the spec's Metric except the computed `ui_chart_family` and `has_triggered_monitors`. */
export interface MetricRecord {
  id: string;
  name: string;
  team_id: string;
  project_id: string;
  deleted_at: string | null;
  view_id: string;
  status: MetricStatus;
  group_by: string[];
  filters: string;
  timestamp_field: string;
  value_field: string | null;
  unique_field: string | null;
  null_handling: (typeof NULL_HANDLINGS)[number];
  empty_bucket_handling: (typeof EMPTY_BUCKET_HANDLINGS)[number];
  group_by_display_fields: Record<string, string> | null;
  backfill_strategy: (typeof BACKFILL_STRATEGIES)[number];
  ui_chart_type: ChartType;
  ui_chart_color_mode: (typeof CHART_COLOR_MODES)[number];
  ui_chart_color_base: (typeof CHART_COLORS)[number] | null;
  ui_chart_color_rules: MetricColorRule[] | null;
  ui_chart_curve: (typeof CHART_CURVES)[number];
  ui_chart_show_alerts: boolean;
  ui_chart_show_monitors: boolean;
  ui_chart_show_trends: boolean;
  ui_chart_compact_values: boolean;
  ui_chart_y_min: number | null;
  ui_chart_y_max: number | null;
  ui_chart_show_forecast: boolean;
  ui_chart_forecast_horizon: (typeof FORECAST_HORIZONS)[number];
  ui_chart_forecast_model: (typeof FORECAST_MODELS)[number];
  ui_value_unit: string | null;
  ui_chart_value: ChartValue;
  ui_chart_time_range: (typeof TIME_RANGES)[number];
  ui_chart_interval: (typeof CHART_INTERVALS)[number];
  ui_chart_custom_range_start_at: string | null;
  ui_chart_custom_range_end_at: string | null;
  ui_chart_max_series: number;
  created_at: string;
  updated_at: string;
  backfill_percent: number;
  backfill_total_count: number;
  backfill_completed_count: number;
  backfill_completed_at: string | null;
  backfill_started_at: string | null;
  compact_percent: number;
  compact_total_count: number;
  compact_completed_count: number;
  compact_started_at: string | null;
  /**
   * Internal: incremented by every change that invalidates stored history (a new view, grouping,
   * filter, timestamp, value or unique field, null handling); rollups built under an older revision
   * are rebuilt. Starts at 1.
   */
  definition_revision: number;
  /**
   * Why the rollups set `status` to `error` (a worker failure building its partials, a failed
   * backfill); null or absent otherwise. Also logged. Shown as `error_message` (a Sluice addition).
   */
  error_message?: string | null;
  /**
   * Series the metric may register (1..MAX_SERIES_LIMIT, series-limit.ts); new series past it fold
   * into `__other__`. Set at creation (the body's, else `SLUICE_MAX_SERIES_PER_METRIC`); absent on a
   * metric stored before limits existed (the default applies).
   */
  series_limit?: number;
  /** Series registered (kept by each registration; absent until the first one after limits existed). */
  series_count?: number;
  /** When a new series was first folded into `__other__` in this revision (a limit reached); null otherwise. */
  series_limit_reached_at?: string | null;
}

/** The settable definition and display fields of a metric (create and update bodies). */
export type MetricSettings = Omit<
  MetricRecord,
  | 'id'
  | 'team_id'
  | 'project_id'
  | 'deleted_at'
  | 'status'
  | 'created_at'
  | 'updated_at'
  | 'definition_revision'
  | 'backfill_percent'
  | 'backfill_total_count'
  | 'backfill_completed_count'
  | 'backfill_completed_at'
  | 'backfill_started_at'
  | 'compact_percent'
  | 'compact_total_count'
  | 'compact_completed_count'
  | 'compact_started_at'
  | 'series_count'
  | 'series_limit_reached_at'
>;

/** Defaults of every optional setting (the spec shows none; ours, docs/metrics.md). */
export const METRIC_DEFAULTS: Omit<MetricSettings, 'name' | 'view_id'> = {
  group_by: [],
  filters: '',
  timestamp_field: EVENT_TIME_FIELD,
  value_field: null,
  unique_field: null,
  null_handling: 'skip',
  empty_bucket_handling: 'zero',
  group_by_display_fields: null,
  backfill_strategy: 'newest_first',
  ui_chart_type: 'line',
  ui_chart_color_mode: 'by_series',
  ui_chart_color_base: null,
  ui_chart_color_rules: null,
  ui_chart_curve: 'linear',
  ui_chart_show_alerts: true,
  ui_chart_show_monitors: true,
  ui_chart_show_trends: false,
  ui_chart_compact_values: true,
  ui_chart_y_min: null,
  ui_chart_y_max: null,
  ui_chart_show_forecast: false,
  ui_chart_forecast_horizon: 'next_30_days',
  ui_chart_forecast_model: 'auto',
  ui_value_unit: null,
  ui_chart_value: 'count',
  ui_chart_time_range: 'last_24_hours',
  ui_chart_interval: 'auto',
  ui_chart_custom_range_start_at: null,
  ui_chart_custom_range_end_at: null,
  ui_chart_max_series: 10,
};

/** Fields whose change invalidates stored history: the metric is rebuilt (status back to initializing). */
export const REBUILD_FIELDS = [
  'view_id',
  'group_by',
  'filters',
  'timestamp_field',
  'value_field',
  'unique_field',
] as const satisfies ReadonlyArray<keyof MetricRecord>;

/**
 * Progress fields as a run not yet planned has them (spec: `backfill_total_count` "seeded as 1 before
 * the run is planned"; compact total "0 until that pass starts").
 */
export function progressSeeds(): Pick<
  MetricRecord,
  | 'backfill_percent'
  | 'backfill_total_count'
  | 'backfill_completed_count'
  | 'backfill_completed_at'
  | 'backfill_started_at'
  | 'compact_percent'
  | 'compact_total_count'
  | 'compact_completed_count'
  | 'compact_started_at'
> {
  return {
    backfill_percent: 0,
    backfill_total_count: 1,
    backfill_completed_count: 0,
    backfill_completed_at: null,
    backfill_started_at: null,
    compact_percent: 0,
    compact_total_count: 0,
    compact_completed_count: 0,
    compact_started_at: null,
  };
}

/** One series of a metric: one combination of its group_by values (spec: Metric series). */
export interface MetricSeriesRecord {
  id: string;
  metric_id: string;
  /** Opaque, stable for the life of the metric. */
  hash: string;
  dimensions: Record<string, unknown>;
  display_values: Record<string, unknown> | null;
  display_label: string | null;
  first_seen_at: string;
  last_seen_at: string;
  last_value: number | null;
  last_value_at: string | null;
  color: string | null;
  pinned_at: string | null;
}
