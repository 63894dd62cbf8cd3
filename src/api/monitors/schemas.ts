import { idSchema } from '../../ids.js';
import { CHART_VALUES } from '../../rollup/metric-records.js';
import {
  ALERT_MODES,
  CONDITION_TYPES,
  MONITOR_LIMITS,
  MONITOR_SCOPES,
  MONITOR_STATUSES,
  OPERATORS,
} from '../../monitor/monitor-records.js';
import type { JsonSchema } from '../http/route.js';
import { object, text } from '../http/schemas.js';

/** Request schemas of the monitor endpoints; the rules between fields are in monitor/monitor-rules.ts. */

const nullableInteger = (min: number, max: number): JsonSchema => ({
  type: ['integer', 'null'],
  minimum: min,
  maximum: max,
  errorHint: `must be an integer from ${min} to ${max}, or null`,
});
const filterMap: JsonSchema = {
  type: 'object',
  maxProperties: 10,
  additionalProperties: {
    type: 'array',
    minItems: 1,
    maxItems: MONITOR_LIMITS.filterValues,
    items: { type: 'string', maxLength: 1024 },
    errorHint: `must be an array of 1 to ${MONITOR_LIMITS.filterValues} dimension values (strings; "null" matches a null value)`,
  },
  errorHint: 'must map group_by fields to arrays of dimension values',
};

const settings: Record<string, JsonSchema> = {
  name: text(MONITOR_LIMITS.nameMin, MONITOR_LIMITS.nameMax),
  description: {
    type: ['string', 'null'],
    maxLength: MONITOR_LIMITS.description,
    errorHint: `must be a string of at most ${MONITOR_LIMITS.description} characters, or null`,
  },
  chart_value: { enum: [...CHART_VALUES] },
  scope: { enum: [...MONITOR_SCOPES] },
  time_window_minutes: nullableInteger(1, MONITOR_LIMITS.windowMinutes),
  condition_type: { enum: [...CONDITION_TYPES] },
  operator: { enum: [...OPERATORS] },
  // JSON has no NaN or Infinity; a number too large for a double (1e999) is refused by the parser's check below.
  threshold_value: {
    type: ['number', 'null'],
    minimum: -Number.MAX_VALUE,
    maximum: Number.MAX_VALUE,
    errorHint: 'must be a finite number, or null',
  },
  sustained_minutes: {
    type: ['number', 'null'],
    exclusiveMinimum: 0,
    maximum: MONITOR_LIMITS.sustainedMinutes,
    errorHint: `must be a number of minutes above 0 and at most ${MONITOR_LIMITS.sustainedMinutes}, or null`,
  },
  schedule_cron: {
    type: 'string',
    minLength: 1,
    maxLength: MONITOR_LIMITS.cronLength,
    errorHint: `must be a five-field UTC cron expression of 1 to ${MONITOR_LIMITS.cronLength} characters`,
  },
  alert_mode: { enum: [...ALERT_MODES] },
  expires_at: {
    type: ['string', 'null'],
    format: 'date-time',
    errorHint: 'must be an ISO 8601 date-time, e.g. 2026-01-31T12:00:00Z, or null',
  },
  series_filters: {
    anyOf: [object({ include: filterMap, exclude: filterMap }), { type: 'null' }],
    errorHint: 'must be an object {"include"?: {field: [values]}, "exclude"?: {field: [values]}}, or null',
  },
  min_occurrences: nullableInteger(1, MONITOR_LIMITS.minOccurrences),
  occurrence_window_minutes: nullableInteger(1, MONITOR_LIMITS.occurrenceWindowMinutes),
  metric_id: idSchema('metric'),
  notification_channel_ids: {
    type: 'array',
    maxItems: 10,
    uniqueItems: true,
    items: idSchema('notificationChannel'),
    errorHint: 'must be an array of at most 10 distinct notification channel ids',
  },
  notify_repeat_minutes: nullableInteger(1, 10_080),
};

/** Create and preview (spec: every field optional). */
export const monitorCreateBody = object({
  ...settings,
  status: {
    enum: ['active', 'paused'],
    errorHint: 'must be "active" or "paused" ("disabled" is set only by the service)',
  },
});

/** Preview accepts the create body and `backtest_days` (docs/monitors.md, "Backtest"). */
export const monitorPreviewBody = object({
  ...settings,
  status: { enum: ['active', 'paused'] },
  backtest_days: { type: 'integer', minimum: 1, maximum: 30, errorHint: 'must be an integer from 1 to 30' },
});

/** Update: any setting; `status` changes only through pause and resume. */
export const monitorUpdateBody = object({
  ...settings,
  status: { not: {}, errorHint: 'cannot be changed by an update; use POST …/pause or …/resume' },
});

export const monitorListFilters: Record<string, JsonSchema> = {
  metric_id: idSchema('metric'),
  status: { enum: [...MONITOR_STATUSES] },
};
