import { invalidField, notFound } from '../../errors.js';
import type { ProjectRecord } from '../../catalog/records.js';
import type { Services } from '../../services.js';
import type { MetricRecord } from '../../rollup/metric-records.js';
import type { MonitorChange, MonitorInput } from '../../monitor/monitor-catalog.js';
import type { MonitorRecord } from '../../monitor/monitor-records.js';
import { previewMonitor } from '../../monitor/preview.js';
import { listRoute } from '../http/list-route.js';
import type { ListOrder, ListQuery } from '../http/pagination.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { object, params } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';
import { requireMetric } from '../metrics/routes.js';
import { monitorCreateBody, monitorListFilters, monitorPreviewBody, monitorUpdateBody } from './schemas.js';
import { serializeMonitor } from './serialize.js';

type ProjectParams = { project_id: string };
type MetricParams = ProjectParams & { metric_id: string };
type MonitorParams = MetricParams & { monitor_id: string };
type MonitorListQuery = ListQuery & { metric_id?: string; status?: MonitorRecord['status'] };

/** Spec: `order_by` name (default) or created_at; `sort` default asc. */
const monitorOrder: ListOrder<MonitorRecord> = {
  fields: { name: (m) => m.name.toLowerCase(), created_at: (m) => m.created_at },
  defaultOrderBy: 'name',
  defaultSort: 'asc',
};

/** A monitor of `metric`, or 404. */
export function requireMonitor(
  s: Pick<Services, 'monitors'>,
  project: ProjectRecord,
  metricId: string,
  id: string,
): MonitorRecord {
  const m = s.monitors.get(project.id, id);
  if (!m || m.metric_id !== metricId) throw notFound(`Monitor ${id} of metric ${metricId}`);
  return m;
}

export function monitorRoutes(s: Services): RouteDef[] {
  const flat = '/v1/projects/:project_id/monitors';
  const nested = '/v1/projects/:project_id/metrics/:metric_id/monitors';
  const one = `${nested}/:monitor_id`;
  const metricParams = params({ project_id: 'project', metric_id: 'metric' });
  const monitorParams = params({ project_id: 'project', metric_id: 'metric', monitor_id: 'monitor' });
  const full = (m: MonitorRecord) => serializeMonitor(m, s.monitors.recentAlerts(m), s.monitors.statesOf(m.id));
  const metricOf = (teamId: string, p: MetricParams) => {
    const project = requireProject(s, teamId, p.project_id);
    return { project, metric: requireMetric(s, project, p.metric_id) };
  };
  const find = (teamId: string, p: MonitorParams) => {
    const project = requireProject(s, teamId, p.project_id);
    // A monitor whose metric is scheduled for deletion can still be read, paused and deleted.
    const metric = requireMetric(s, project, p.metric_id, { allowScheduled: true });
    return { project, metric, monitor: requireMonitor(s, project, metric.id, p.monitor_id) };
  };
  const bodyMetric = (metric: MetricRecord, body: { metric_id?: string }) => {
    if (body.metric_id !== undefined && body.metric_id !== metric.id)
      throw invalidField('body.metric_id', `must be the metric of the path (${metric.id}) or left out`);
  };
  const checkChannels = (project: ProjectRecord, body: { notification_channel_ids?: string[] }) =>
    body.notification_channel_ids?.forEach((id, i) => {
      if (!s.notifier.get(project.id, id))
        throw invalidField(
          `body.notification_channel_ids[${i}]`,
          `names no notification channel of this project (${id})`,
        );
    });
  const filterList = (items: MonitorRecord[], q: MonitorListQuery) =>
    items.filter(
      (m) =>
        (q.metric_id === undefined || m.metric_id === q.metric_id) && (q.status === undefined || m.status === q.status),
    );
  const action = (name: 'pause' | 'resume', summary: string) =>
    defineRoute<unknown, unknown, MonitorParams>({
      method: 'POST',
      path: `${one}/${name}`,
      scope: 'monitors:write',
      summary,
      schema: { params: monitorParams },
      handler: async (ctx) => {
        const { metric, monitor } = find(ctx.principal.teamId, ctx.params);
        const out = name === 'pause' ? await s.monitors.pause(monitor) : await s.monitors.resume(monitor, metric);
        return { data: full(out) };
      },
    });
  return [
    listRoute<MonitorRecord, MonitorListQuery, ProjectParams>({
      path: flat,
      scope: 'monitors:read',
      summary: 'List the monitors of a project',
      params: params({ project_id: 'project' }),
      filters: monitorListFilters,
      order: monitorOrder,
      items: (ctx) =>
        filterList(s.monitors.list(requireProject(s, ctx.principal.teamId, ctx.params.project_id).id), ctx.query),
      serialize: full,
    }),
    listRoute<MonitorRecord, MonitorListQuery, MetricParams>({
      path: nested,
      scope: 'monitors:read',
      summary: 'List the monitors of a metric',
      params: metricParams,
      filters: { status: monitorListFilters.status! },
      order: monitorOrder,
      items: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const metric = requireMetric(s, project, ctx.params.metric_id, { allowScheduled: true });
        return filterList(s.monitors.list(project.id), { ...ctx.query, metric_id: metric.id });
      },
      serialize: full,
    }),
    defineRoute<MonitorInput, unknown, MetricParams>({
      method: 'POST',
      path: nested,
      scope: 'monitors:write',
      summary: 'Create a monitor: a condition on the metric, evaluated on a cron schedule',
      schema: { params: metricParams, body: monitorCreateBody },
      handler: async (ctx) => {
        const { project, metric } = metricOf(ctx.principal.teamId, ctx.params);
        bodyMetric(metric, ctx.body);
        checkChannels(project, ctx.body);
        return { status: 201, data: full(await s.monitors.create(project, metric, ctx.body)) };
      },
    }),
    defineRoute<MonitorInput & { backtest_days?: number }, { backtest?: string }, MetricParams>({
      method: 'POST',
      path: `${nested}/preview`,
      scope: 'monitors:read',
      summary: "Preview a monitor on the metric's data now: the verdict of each series (nothing saved, no alerts)",
      schema: {
        params: metricParams,
        body: monitorPreviewBody,
        query: object({
          backtest: {
            type: 'string',
            pattern: '^([1-9]|[12][0-9]|30)d$',
            errorHint: 'must be a number of days from 1 to 30 followed by d, e.g. 7d',
          },
        }),
      },
      handler: async (ctx) => {
        const { metric } = metricOf(ctx.principal.teamId, ctx.params);
        const { backtest_days: bodyDays, ...body } = ctx.body;
        bodyMetric(metric, body);
        const queryDays = ctx.query.backtest === undefined ? undefined : Number(ctx.query.backtest.slice(0, -1));
        if (bodyDays !== undefined && queryDays !== undefined && bodyDays !== queryDays)
          throw invalidField('query.backtest', 'differs from body.backtest_days; send one');
        return {
          data: await previewMonitor(
            { aggregation: s.aggregation, metrics: s.metrics, now: s.clock.now() },
            metric,
            body,
            bodyDays ?? queryDays,
          ),
        };
      },
    }),
    defineRoute<unknown, unknown, MonitorParams>({
      method: 'GET',
      path: one,
      scope: 'monitors:read',
      summary: 'Get a monitor with its recent alerts and every series state',
      schema: { params: monitorParams },
      handler: (ctx) => ({ data: full(find(ctx.principal.teamId, ctx.params).monitor) }),
    }),
    defineRoute<MonitorChange, unknown, MonitorParams>({
      method: 'POST',
      path: one,
      scope: 'monitors:write',
      summary: "Update a monitor's settings (a changed condition ends its open alerts and restarts its series states)",
      schema: { params: monitorParams, body: monitorUpdateBody },
      handler: async (ctx) => {
        if (Object.keys(ctx.body).length === 0) throw invalidField('body', 'must contain at least one field to change');
        const { project, metric, monitor } = find(ctx.principal.teamId, ctx.params);
        checkChannels(project, ctx.body);
        return { data: full(await s.monitors.update(monitor, metric, ctx.body)) };
      },
    }),
    action(
      'pause',
      'Pause a monitor: it stops evaluating and its open alerts end (pausing a paused monitor changes nothing)',
    ),
    action('resume', 'Resume a paused or disabled monitor: it evaluates again from its next slot'),
    defineRoute<unknown, unknown, MonitorParams>({
      method: 'DELETE',
      path: one,
      scope: 'monitors:delete',
      summary: 'Delete a monitor; its open alerts end now and its alerts stay listed',
      schema: { params: monitorParams },
      handler: async (ctx) => {
        await s.monitors.remove(find(ctx.principal.teamId, ctx.params).monitor);
        return { data: null };
      },
    }),
  ];
}
