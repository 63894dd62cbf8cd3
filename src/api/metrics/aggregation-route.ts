import type { Services } from '../../services.js';
import type { MetricRecord } from '../../rollup/metric-records.js';
import { RawJson } from '../http/raw-json.js';
import { defineRoute, type JsonSchema, type RouteDef } from '../http/route.js';
import { aggregationQuerySchema, type AggregationQuery } from '../../rollup/aggregation/aggregation-schema.js';

type MetricParams = { project_id: string; metric_id: string };

/**
 * GET .../metrics/:metric_id/aggregation (spec: TimeseriesAggregation; docs/metrics.md,
 * "Aggregation"): an adapter over `s.aggregation` (rollup/aggregation/aggregation-service.ts), which
 * checks the query in full before the rollups are asked, so a bad query is a 400 even while they are
 * unavailable (503).
 */
export function aggregationRoute(
  s: Pick<Services, 'aggregation'>,
  path: string,
  params: JsonSchema,
  find: (teamId: string, p: MetricParams) => MetricRecord,
): RouteDef {
  return defineRoute<unknown, AggregationQuery, MetricParams>({
    method: 'GET',
    path: `${path}/aggregation`,
    scope: 'metrics:read',
    summary: "A metric's time series: chart values per bucket and series, with trends and forecasts",
    schema: { params, query: aggregationQuerySchema },
    // Written as text (as bytes when sealed buckets bring theirs): JSON.stringify of the records' objects cost more than the rest of the answer.
    handler: async (ctx) => ({
      data: new RawJson(await s.aggregation.answerJson(find(ctx.principal.teamId, ctx.params), ctx.query)),
    }),
  });
}
