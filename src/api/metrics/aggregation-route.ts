import type { Services } from '../../services.js';
import { horizonTime } from '../../rollup/fits/index.js';
import type { MetricRecord } from '../../rollup/metric-records.js';
import { aggregationJson } from '../../rollup/aggregation/aggregation-json.js';
import { answerAggregation } from '../../rollup/aggregation/run-aggregation.js';
import { RawJson } from '../http/raw-json.js';
import { defineRoute, type JsonSchema, type RouteDef } from '../http/route.js';
import { parseAggregationQuery } from './aggregation-query.js';
import { aggregationQuerySchema, type AggregationQuery } from './aggregation-schema.js';

type MetricParams = { project_id: string; metric_id: string };

/**
 * GET .../metrics/:metric_id/aggregation (spec: TimeseriesAggregation; docs/metrics.md,
 * "Aggregation"). The query and its window are checked in full before the rollups are asked, so a
 * bad query is a 400 even while they are unavailable (503).
 */
export function aggregationRoute(s: Services, path: string, params: JsonSchema, find: (teamId: string, p: MetricParams) => MetricRecord): RouteDef {
  return defineRoute<unknown, AggregationQuery, MetricParams>({
    method: 'GET',
    path: `${path}/aggregation`,
    scope: 'metrics:read',
    summary: "A metric's time series: chart values per bucket and series, with trends and forecasts",
    schema: { params, query: aggregationQuerySchema },
    handler: async (ctx) => {
      const metric = find(ctx.principal.teamId, ctx.params);
      const registry = s.metrics.store.seriesView(metric);
      const now = s.clock.now();
      const known = { has: (hash: string) => registry.get(hash) !== undefined };
      const req = parseAggregationQuery(ctx.query, metric, known, now);
      const view = s.views.get(metric.project_id, metric.view_id);
      // Written as text: JSON.stringify of the records' objects cost more than the rest of the answer.
      return { data: new RawJson(aggregationJson(await answerAggregation({ reader: s.rollups, metric, registry, view: { id: metric.view_id, name: view?.name ?? metric.view_id }, now, horizonTime }, req))) };
    },
  });
}
