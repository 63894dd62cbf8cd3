import { ApiError, invalidField, notFound } from '../../errors.js';
import type { ProjectRecord } from '../../catalog/records.js';
import type { Services } from '../../services.js';
import type { MetricChange, MetricCreateInput, MetricSeriesChange } from '../../rollup/metric-catalog.js';
import type { MetricRecord, MetricSeriesRecord } from '../../rollup/metric-records.js';
import { listRoute } from '../http/list-route.js';
import type { ListOrder, ListQuery } from '../http/pagination.js';
import { parseNullableDateFilter } from '../http/filters.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { scheduledDeletionRoutes } from '../http/scheduled-deletion.js';
import { params } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';
import { requireView } from '../views/checks.js';
import { aggregationRoute } from './aggregation-route.js';
import { backfillBody, metricCreateBody, metricListFilters, metricUpdateBody, seriesUpdateBody } from './schemas.js';
import { serializeMetric as serializeRecord, serializeSeries } from './serialize.js';

type ProjectParams = { project_id: string };
type MetricParams = { project_id: string; metric_id: string };
type SeriesParams = MetricParams & { series_id: string };
type MetricListQuery = ListQuery & { view_id?: string; deleted_at?: string };

/** Spec: metrics list `order_by` name (the only one, default); `sort` default asc. */
const metricOrder: ListOrder<MetricRecord> = {
  fields: { name: (m) => m.name.toLowerCase() },
  defaultOrderBy: 'name',
  defaultSort: 'asc',
};

/** Series in registration order (ours: the spec does not give the list's parameters). */
const seriesOrder: ListOrder<MetricSeriesRecord> = {
  fields: { first_seen_at: (x) => x.first_seen_at, last_value: (x) => x.last_value },
  defaultOrderBy: 'first_seen_at',
  defaultSort: 'asc',
};

/**
 * A metric of `project`, or 404; one scheduled for deletion answers 404 with a restore hint unless
 * `allowScheduled`.
 */
export function requireMetric(
  s: Pick<Services, 'metrics'>,
  project: ProjectRecord,
  id: string,
  opts: { allowScheduled?: boolean } = {},
): MetricRecord {
  const m = s.metrics.get(project.id, id);
  if (!m) throw notFound(`Metric ${id} in project ${project.id}`);
  if (m.deleted_at && !opts.allowScheduled) {
    throw new ApiError(
      'not_found',
      `Metric ${id} is scheduled for deletion; restore it with POST /v1/projects/${project.id}/metrics/${id} {"deleted_at": null}`,
    );
  }
  return m;
}

export function metricRoutes(s: Services): RouteDef[] {
  const base = '/v1/projects/:project_id/metrics';
  const one = `${base}/:metric_id`;
  const metricParams = params({ project_id: 'project', metric_id: 'metric' });
  // `has_triggered_monitors`: whether an alert of the metric is open now; the node's default series limit for old records.
  const show = (m: MetricRecord) =>
    serializeRecord(m, s.monitors.hasOpenAlerts(m.id), s.metrics.seriesLimits.perMetric);
  const find = (teamId: string, p: MetricParams, opts: { allowScheduled?: boolean } = {}) =>
    requireMetric(s, requireProject(s, teamId, p.project_id), p.metric_id, opts);
  return [
    listRoute<MetricRecord, MetricListQuery, ProjectParams>({
      path: base,
      scope: 'metrics:read',
      summary: 'List metrics of a project',
      params: params({ project_id: 'project' }),
      filters: metricListFilters,
      order: metricOrder,
      items: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const q = ctx.query;
        const deleted = parseNullableDateFilter('deleted_at', q.deleted_at);
        return s.metrics
          .list(project.id)
          .filter((m) => deleted(m.deleted_at) && (q.view_id === undefined || m.view_id === q.view_id));
      },
      serialize: show,
    }),
    defineRoute<unknown, unknown, MetricParams>({
      method: 'GET',
      path: one,
      scope: 'metrics:read',
      summary: 'Get a metric',
      schema: { params: metricParams },
      handler: (ctx) => ({ data: show(find(ctx.principal.teamId, ctx.params, { allowScheduled: true })) }),
    }),
    aggregationRoute(s, one, metricParams, (teamId, p) => find(teamId, p)),
    defineRoute<MetricCreateInput, unknown, ProjectParams>({
      method: 'POST',
      path: base,
      scope: 'metrics:write',
      summary: "Create a metric: a view's records aggregated into time series",
      schema: { params: params({ project_id: 'project' }), body: metricCreateBody },
      handler: async (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        requireView(s, project, ctx.body.view_id, { field: 'body.view_id' });
        return { status: 201, data: show(await s.metrics.create(project, ctx.body)) };
      },
    }),
    defineRoute<MetricChange, unknown, MetricParams>({
      method: 'POST',
      path: one,
      scope: 'metrics:write',
      summary: 'Update a metric, or restore it; a new view, grouping or filter rebuilds its history',
      schema: { params: metricParams, body: metricUpdateBody },
      handler: async (ctx) => {
        const b = ctx.body;
        if (Object.keys(b).length === 0)
          throw invalidField('body', 'must contain at least one field to change (or {"deleted_at": null} to restore)');
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const current = requireMetric(s, project, ctx.params.metric_id, { allowScheduled: true });
        if (b.view_id !== undefined) requireView(s, project, b.view_id, { field: 'body.view_id' });
        return { data: show(await s.metrics.update(project.id, current.id, b)) };
      },
    }),
    ...scheduledDeletionRoutes<MetricRecord, MetricParams>(s, {
      noun: 'metric',
      path: one,
      scope: 'metrics:delete',
      params: metricParams,
      beneath: 'its series',
      find: (ctx) => find(ctx.principal.teamId, ctx.params, { allowScheduled: true }),
      markDeleted: (m) => s.metrics.scheduleDelete(m),
      destroy: (m) => s.metrics.destroy(m),
      serialize: show,
    }),
    defineRoute<{ strategy?: MetricRecord['backfill_strategy'] }, unknown, MetricParams>({
      method: 'POST',
      path: `${one}/backfill`,
      scope: 'metrics:write',
      summary: "Rebuild a metric's history from its view's files (body optional: {strategy})",
      schema: { params: metricParams, body: backfillBody },
      handler: async (ctx) => ({
        data: show(await s.metrics.rebuild(find(ctx.principal.teamId, ctx.params), ctx.body.strategy)),
      }),
    }),
    listRoute<MetricSeriesRecord, ListQuery, MetricParams>({
      path: `${one}/series`,
      scope: 'metrics:read',
      summary: "List a metric's series (value combinations of its group_by fields)",
      params: metricParams,
      order: seriesOrder,
      // From the in-memory registry, already in the requested order (the page's sort is then one pass).
      items: (ctx) => {
        const sorted = s.metrics.store
          .seriesView(find(ctx.principal.teamId, ctx.params))
          .sortedBy(ctx.query.order_by === 'last_value' ? 'last_value' : 'first_seen_at');
        return (ctx.query.sort ?? seriesOrder.defaultSort) === 'desc' ? sorted.reverse() : sorted;
      },
      serialize: serializeSeries,
    }),
    defineRoute<MetricSeriesChange, unknown, SeriesParams>({
      method: 'POST',
      path: `${one}/series/:series_id`,
      scope: 'metrics:write',
      summary: "Change a series' color or pin it",
      schema: {
        params: params({ project_id: 'project', metric_id: 'metric', series_id: 'metricSeries' }),
        body: seriesUpdateBody,
      },
      handler: async (ctx) => {
        if (Object.keys(ctx.body).length === 0) throw invalidField('body', 'must contain color or pinned');
        const metric = find(ctx.principal.teamId, ctx.params);
        return { data: serializeSeries(await s.metrics.updateSeries(metric, ctx.params.series_id, ctx.body)) };
      },
    }),
  ];
}
