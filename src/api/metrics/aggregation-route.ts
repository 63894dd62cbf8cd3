import type { Services } from '../../services.js';
import { horizonTime } from '../../rollup/fits/index.js';
import type { MetricRecord } from '../../rollup/metric-records.js';
import { aggregationJsonParts } from '../../rollup/aggregation/aggregation-json.js';
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
      const sealBefore = (completeThrough: number) => sealPoint(s, metric, completeThrough);
      // Written as text (as bytes when sealed buckets bring theirs): JSON.stringify of the records' objects cost more than the rest of the answer.
      return { data: new RawJson(aggregationJsonParts(await answerAggregation({ reader: s.rollups, metric, registry, view: { id: metric.view_id, name: view?.name ?? metric.view_id }, now, horizonTime, sealBefore }, req))) };
    },
  });
}

/** Minutes kept between the seal point and what live data can reach: a batch leased before the view's watermark last moved may still land there. */
const SEAL_MARGIN_MS = 2 * 60_000;

/**
 * Where a metric's sealed buckets end (docs/metrics.md, "Sealed buckets"): behind its watermark by the
 * project's late data window, and behind the point before which a live event is late for its view
 * (late-data.ts `lateBefore`), less a margin. Only a guess that keeps the cache useful: a write that
 * lands behind it anyway drops what was cached (sealed-cells.ts).
 */
function sealPoint(s: Services, metric: MetricRecord, completeThrough: number): number {
  const window = (s.projects.byId(metric.project_id)?.late_data_window_minutes ?? 0) * 60_000;
  const view = s.views.store.byId(metric.view_id);
  const late = view ? s.lateData.lateBefore(view.id, window / 60_000, s.spool.oldestReceivedAt(view.root_collection_id)) : undefined;
  const t = Math.min(completeThrough - window, late ?? Infinity) - SEAL_MARGIN_MS;
  return Math.floor(t / 60_000) * 60_000;
}
