import { idSchema } from '../../ids.js';
import {
  BACKFILL_STRATEGIES,
  CHART_COLOR_MODES,
  CHART_COLORS,
  CHART_CURVES,
  CHART_INTERVALS,
  CHART_TYPES,
  CHART_VALUES,
  COLOR_RULE_OPERATORS,
  EMPTY_BUCKET_HANDLINGS,
  FORECAST_HORIZONS,
  FORECAST_MODELS,
  METRIC_LIMITS,
  NULL_HANDLINGS,
  TIME_RANGES,
} from '../../rollup/metric-records.js';
import { MAX_SERIES_LIMIT } from '../../rollup/series-limit.js';
import type { JsonSchema } from '../http/route.js';
import { filterParamSchema } from '../http/filters.js';
import { integer, object, restoreOnly, text } from '../http/schemas.js';

/** Request schemas of the metric endpoints; checks against the view are in rollup/metric-definition.ts. */

const fieldName = text(1, METRIC_LIMITS.fieldName);
const nullableFieldName: JsonSchema = {
  type: ['string', 'null'],
  minLength: 1,
  maxLength: METRIC_LIMITS.fieldName,
  errorHint: `must be a view output field name (1 to ${METRIC_LIMITS.fieldName} characters), or null`,
};
const nullableDate: JsonSchema = {
  type: ['string', 'null'],
  format: 'date-time',
  errorHint: 'must be an ISO 8601 date-time, e.g. 2026-01-31T12:00:00Z, or null',
};
const nullableNumber: JsonSchema = { type: ['number', 'null'], errorHint: 'must be a number or null' };
const bool: JsonSchema = { type: 'boolean' };
export const COLOR_PATTERN = `^(${CHART_COLORS.join('|')}|#[0-9a-fA-F]{6})$`;
const color: JsonSchema = {
  type: 'string',
  pattern: COLOR_PATTERN,
  errorHint: `must be one of ${CHART_COLORS.join(', ')} or a #rrggbb hex color`,
};

const colorRule = object({ operator: { enum: [...COLOR_RULE_OPERATORS] }, value: { type: 'number' }, color }, [
  'operator',
  'value',
  'color',
]);

/** Every setting, for create (name and view_id required) and update (all optional). */
const settings: Record<string, JsonSchema> = {
  name: text(1, METRIC_LIMITS.name),
  view_id: idSchema('view'),
  group_by: {
    type: 'array',
    maxItems: METRIC_LIMITS.groupBy,
    items: fieldName,
    errorHint: `must be an array of at most ${METRIC_LIMITS.groupBy} view output field names`,
  },
  filters: { type: 'string', errorHint: 'must be a filter expression string ("" for none; docs/metrics-filters.md)' },
  timestamp_field: fieldName,
  value_field: nullableFieldName,
  unique_field: nullableFieldName,
  null_handling: { enum: [...NULL_HANDLINGS] },
  empty_bucket_handling: { enum: [...EMPTY_BUCKET_HANDLINGS] },
  group_by_display_fields: {
    type: ['object', 'null'],
    maxProperties: METRIC_LIMITS.groupBy,
    additionalProperties: fieldName,
    errorHint: 'must map group_by fields to the view output fields that label them, or be null',
  },
  backfill_strategy: { enum: [...BACKFILL_STRATEGIES] },
  ui_chart_type: { enum: [...CHART_TYPES] },
  ui_chart_color_mode: { enum: [...CHART_COLOR_MODES] },
  ui_chart_color_base: { enum: [...CHART_COLORS, null] },
  ui_chart_color_rules: {
    type: ['array', 'null'],
    maxItems: METRIC_LIMITS.colorRules,
    items: colorRule,
    errorHint: `must be an array of at most ${METRIC_LIMITS.colorRules} rules {"operator", "value", "color"}, or null`,
  },
  ui_chart_curve: { enum: [...CHART_CURVES] },
  ui_chart_show_alerts: bool,
  ui_chart_show_monitors: bool,
  ui_chart_show_trends: bool,
  ui_chart_compact_values: bool,
  ui_chart_y_min: nullableNumber,
  ui_chart_y_max: nullableNumber,
  ui_chart_show_forecast: bool,
  ui_chart_forecast_horizon: { enum: [...FORECAST_HORIZONS] },
  ui_chart_forecast_model: { enum: [...FORECAST_MODELS] },
  ui_value_unit: {
    type: ['string', 'null'],
    maxLength: METRIC_LIMITS.unit,
    errorHint: `must be a string of at most ${METRIC_LIMITS.unit} characters, or null`,
  },
  ui_chart_value: { enum: [...CHART_VALUES] },
  ui_chart_time_range: { enum: [...TIME_RANGES] },
  ui_chart_interval: { enum: [...CHART_INTERVALS] },
  ui_chart_custom_range_start_at: nullableDate,
  ui_chart_custom_range_end_at: nullableDate,
  ui_chart_max_series: integer(1, METRIC_LIMITS.maxSeries),
  // Ours (docs/metrics.md, "Series limits"): new series past it fold into `__other__`.
  series_limit: integer(1, MAX_SERIES_LIMIT),
  series_count: { not: {}, errorHint: 'is read-only: the rollups count the series they register' },
  series_limit_reached_at: {
    not: {},
    errorHint: 'is read-only: the rollups set it when a new series folds into __other__',
  },
  // Named so the answer says why rather than "unknown field".
  ui_chart_family: { not: {}, errorHint: 'is read-only: it follows ui_chart_type (docs/metrics.md)' },
  status: { not: {}, errorHint: 'is read-only: the service sets it' },
};

export const metricCreateBody = object(settings, ['name', 'view_id']);

export const metricUpdateBody = object({ ...settings, deleted_at: restoreOnly });

export const metricListFilters = {
  view_id: idSchema('view'),
  deleted_at: filterParamSchema,
};

export const seriesUpdateBody = object({
  color: {
    anyOf: [color, { type: 'null' }],
    errorHint: `must be one of ${CHART_COLORS.join(', ')}, a #rrggbb hex color, or null`,
  },
  pinned: bool,
});

/** POST .../backfill (body optional): the order to backfill in, kept as the metric's `backfill_strategy`. */
export const backfillBody = object({ strategy: { enum: [...BACKFILL_STRATEGIES] } });
