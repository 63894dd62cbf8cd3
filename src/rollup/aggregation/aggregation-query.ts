import type { FieldIssue } from '../../errors.js';
import { timestampMs } from '../../timestamp.js';
import { AGGREGATION_LIMITS } from './buckets.js';
import type { AggregationRequest } from './run-aggregation.js';
import { isTimeZone } from './zoned-time.js';
import { CHART_VALUES, VALUE_FIELD_CHART_VALUES, type ChartValue, type MetricRecord } from '../metric-records.js';
import { OTHER_SERIES, TOTAL_SERIES } from '../rollup-types.js';
import { assertValid } from '../../http/validation.js';
import type { AggregationQuery } from './aggregation-schema.js';

/** A comma list's entries, trimmed, blanks dropped. */
function entries(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Text from the query shown back in a message: quoted, and cut so a huge value stays readable. */
function shown(text: string): string {
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
}

function parseValues(q: AggregationQuery, metric: MetricRecord, issues: FieldIssue[]): ChartValue[] {
  if (q.values === undefined) return [metric.ui_chart_value];
  const names = entries(q.values);
  const field = 'query.values';
  const unknown = names.filter((n) => !(CHART_VALUES as readonly string[]).includes(n));
  if (names.length === 0)
    issues.push({ field, message: `names no chart value; use one or more of ${CHART_VALUES.join(', ')}` });
  if (unknown.length)
    issues.push({
      field,
      message: `has unknown ${unknown.map(shown).join(', ')}; use one or more of ${CHART_VALUES.join(', ')}`,
    });
  const values = names.filter((n): n is ChartValue => (CHART_VALUES as readonly string[]).includes(n));
  const repeated = values.filter((v, i) => values.indexOf(v) !== i);
  if (repeated.length)
    issues.push({ field, message: `lists ${[...new Set(repeated)].join(', ')} more than once; list each value once` });
  const needValue = values.filter((v) => VALUE_FIELD_CHART_VALUES.has(v));
  if (needValue.length && metric.value_field === null) {
    issues.push({
      field,
      message: `asks for ${needValue.join(', ')}, which need a value_field, and this metric has none: set value_field on the metric, or ask for count, cumulative_count${metric.unique_field ? ', count_unique' : ''}`,
    });
  }
  if (values.includes('count_unique') && metric.unique_field === null) {
    issues.push({
      field,
      message:
        'asks for count_unique, which needs a unique_field, and this metric has none: set unique_field on the metric, or ask for another value',
    });
  }
  return values;
}

function parseSeries(
  q: AggregationQuery,
  metric: MetricRecord,
  knownHashes: Pick<ReadonlySet<string>, 'has'>,
  issues: FieldIssue[],
): string[] | null {
  if (q.series === undefined) return null;
  const hashes = [...new Set(entries(q.series))];
  const field = 'query.series';
  if (hashes.length === 0) issues.push({ field, message: 'names no series; list series hashes, or leave series out' });
  if (hashes.length > AGGREGATION_LIMITS.seriesFilter)
    issues.push({ field, message: `lists ${hashes.length} series; at most ${AGGREGATION_LIMITS.seriesFilter}` });
  // `__other__` names the series folded at ingest past the series limit, once the metric has them.
  const folded = metric.series_limit_reached_at != null;
  const unknown = hashes.filter((h) => h !== TOTAL_SERIES && !(folded && h === OTHER_SERIES) && !knownHashes.has(h));
  if (unknown.length) {
    issues.push({
      field,
      message: `has unknown series ${unknown.slice(0, 5).map(shown).join(', ')}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ''}: use hashes from GET /v1/projects/${metric.project_id}/metrics/${metric.id}/series (or ${TOTAL_SERIES})`,
    });
  }
  return hashes;
}

/** An instant parameter, or NaN (with an issue) when it is not one from 1970 on. */
function instant(name: string, raw: string | undefined, issues: FieldIssue[]): number | undefined {
  if (raw === undefined) return undefined;
  const ms = timestampMs(raw);
  if (Number.isNaN(ms))
    issues.push({
      field: `query.${name}`,
      message: `has ${shown(raw)}, which is not an ISO 8601 date-time from 1970 on (e.g. 2026-01-31T12:00:00Z)`,
    });
  return ms;
}

/**
 * The request a query asks for, every default taken from the metric (docs/metrics.md,
 * "Aggregation"). Every problem is reported at once as 400 `request_validation_failed` naming
 * `query.<param>`. `page_id` is not looked at here: the service resolves it (aggregation-service.ts).
 * Text never goes further than comparisons with known names, so SQL-looking text is only ever an
 * unknown name.
 */
export function parseAggregationQuery(
  q: AggregationQuery,
  metric: MetricRecord,
  knownHashes: Pick<ReadonlySet<string>, 'has'>,
  now: number,
): AggregationRequest {
  const issues: FieldIssue[] = [];
  const values = parseValues(q, metric, issues);
  const series = parseSeries(q, metric, knownHashes, issues);
  const timeZone = q.timezone ?? 'UTC';
  if (!isTimeZone(timeZone))
    issues.push({
      field: 'query.timezone',
      message: `has ${shown(timeZone)}, which is not an IANA time zone name; use e.g. Europe/Berlin, America/New_York or UTC`,
    });

  const start = instant('start_at', q.start_at, issues);
  const end = instant('end_at', q.end_at, issues);
  if ((start === undefined) !== (end === undefined)) {
    const [missing, given] = start === undefined ? ['start_at', 'end_at'] : ['end_at', 'start_at'];
    issues.push({
      field: `query.${missing}`,
      message: `is required with ${given}: send both, or neither and a time_range`,
    });
  } else if (start !== undefined && end !== undefined && !Number.isNaN(start) && !Number.isNaN(end) && end <= start) {
    issues.push({ field: 'query.end_at', message: `must be after start_at (${q.start_at} to ${q.end_at} is empty)` });
  }
  const forecastAt = instant('forecast_at', q.forecast_at, issues);
  if (forecastAt !== undefined && !Number.isNaN(forecastAt) && forecastAt <= now) {
    issues.push({
      field: 'query.forecast_at',
      message: `must be in the future (now is ${new Date(now).toISOString()})`,
    });
  }
  assertValid(issues);

  return {
    coverage: q.coverage_mode ?? 'strict',
    window: {
      explicit: start !== undefined && end !== undefined ? { start, end } : null,
      timeRange: q.time_range ?? metric.ui_chart_time_range,
      interval: q.interval ?? metric.ui_chart_interval,
      timeZone,
    },
    normalize: q.normalize ?? true,
    values,
    emptyHandling: q.empty_bucket_handling ?? metric.empty_bucket_handling,
    nullHandling: q.null_handling ?? metric.null_handling,
    maxSeries: q.max_series ?? metric.ui_chart_max_series,
    series,
    regression: q.regression ?? (metric.ui_chart_show_trends ? metric.ui_chart_forecast_model : 'none'),
    forecastAt: forecastAt ?? null,
  };
}
