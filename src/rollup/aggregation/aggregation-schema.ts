import {
  CHART_INTERVALS,
  EMPTY_BUCKET_HANDLINGS,
  FORECAST_MODELS,
  NULL_HANDLINGS,
  TIME_RANGES,
} from '../metric-records.js';
import { AGGREGATION_LIMITS } from './buckets.js';
import type { JsonSchema } from '../../http/json-schema.js';
import { integer, isoDateString, object } from '../../http/schemas.js';

/** The aggregation query as the query string carries it, after ajv's coercion. */
export interface AggregationQuery {
  coverage_mode?: 'strict' | 'observed';
  start_at?: string;
  end_at?: string;
  time_range?: (typeof TIME_RANGES)[number];
  interval?: (typeof CHART_INTERVALS)[number];
  timezone?: string;
  page_id?: string;
  normalize?: boolean;
  values?: string;
  empty_bucket_handling?: (typeof EMPTY_BUCKET_HANDLINGS)[number];
  null_handling?: (typeof NULL_HANDLINGS)[number];
  max_series?: number;
  series?: string;
  regression?: 'none' | (typeof FORECAST_MODELS)[number];
  forecast_at?: string;
}

const list = (what: string): JsonSchema => ({
  type: 'string',
  minLength: 1,
  maxLength: 8192,
  errorHint: `must be a comma-separated list of ${what}`,
});

/**
 * Shapes of the aggregation parameters (spec: Metrics, "Aggregation query parameters"; `values`,
 * `empty_bucket_handling`, `null_handling` and `regression` are ours). What depends on the metric or
 * on several parameters — names in `values` and `series`, the zone, start before end — is checked
 * by rollup/aggregation/aggregation-query.ts.
 */
export const aggregationQuerySchema: JsonSchema = object({
  coverage_mode: { enum: ['strict', 'observed'] },
  start_at: isoDateString,
  end_at: isoDateString,
  time_range: { enum: [...TIME_RANGES] },
  interval: { enum: [...CHART_INTERVALS] },
  timezone: {
    type: 'string',
    minLength: 1,
    maxLength: 64,
    errorHint: 'must be an IANA time zone name, e.g. Europe/Berlin or UTC',
  },
  page_id: { type: 'string', minLength: 1, maxLength: 64, errorHint: 'must be a page id' },
  normalize: { type: 'boolean', errorHint: 'must be true or false' },
  values: list(
    'chart values (count, sum, average, min, max, last, cumulative_sum, cumulative_count, p50, p95, p99, count_unique)',
  ),
  empty_bucket_handling: { enum: [...EMPTY_BUCKET_HANDLINGS] },
  null_handling: { enum: [...NULL_HANDLINGS] },
  max_series: integer(1, AGGREGATION_LIMITS.maxSeries),
  series: list(`series hashes (at most ${AGGREGATION_LIMITS.seriesFilter})`),
  regression: { enum: ['none', ...FORECAST_MODELS] },
  forecast_at: isoDateString,
});
