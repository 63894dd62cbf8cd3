import { ApiError, notFound, type FieldIssue } from '../../errors.js';
import type { Services } from '../../services.js';
import { TIME_RANGES, type MetricRecord } from '../../rollup/metric-records.js';
import { resolveTimeRange, type TimeRange } from '../../rollup/aggregation/time-range.js';
import { isTimeZone } from '../../rollup/aggregation/zoned-time.js';
import type { AlertRecord } from '../../monitor/monitor-records.js';
import { idSchema } from '../../ids.js';
import { listRoute } from '../http/list-route.js';
import type { ListOrder, ListQuery } from '../http/pagination.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { isoDateString, params } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';
import { requireMetric } from '../metrics/routes.js';
import { serializeAlert } from '../monitors/serialize.js';

type MetricParams = { project_id: string; metric_id: string };
type AlertListQuery = ListQuery & {
  metric_id?: string;
  monitor_id?: string;
  is_open?: 'true' | 'false' | '1' | '0';
  time_range?: TimeRange;
  timezone?: string;
  page_id?: string;
  start_at?: string;
  end_at?: string;
};

/** Spec: `order_by` created_at (the only one); `sort` default desc. */
const alertOrder: ListOrder<AlertRecord> = {
  fields: { created_at: (a) => a.created_at },
  defaultOrderBy: 'created_at',
  defaultSort: 'desc',
};

/**
 * The window an alerts list covers (spec: Alerts rules): `start_at` and `end_at`, else `time_range`
 * (in `timezone`), else the metric's saved chart range; with `page_id` the page's saved custom range
 * stands for the metric's (as the aggregation's `page_id` does).
 */
export function alertWindow(
  q: AlertListQuery,
  metric: MetricRecord,
  now: number,
  earliest: number | null,
  pageRange: (pageId: string) => { start: number; end: number } | null,
): { start: number; end: number } {
  const issues: FieldIssue[] = [];
  const tz = q.timezone ?? 'UTC';
  if (!isTimeZone(tz))
    issues.push({
      field: 'query.timezone',
      message: `has "${tz}", which is not an IANA time zone name; use e.g. Europe/Berlin or UTC`,
    });
  if ((q.start_at === undefined) !== (q.end_at === undefined)) {
    const missing = q.start_at === undefined ? 'start_at' : 'end_at';
    issues.push({
      field: `query.${missing}`,
      message: `is required with ${missing === 'start_at' ? 'end_at' : 'start_at'}: send both, or neither and a time_range`,
    });
  }
  if (q.start_at !== undefined && q.end_at !== undefined && Date.parse(q.start_at) >= Date.parse(q.end_at))
    issues.push({ field: 'query.end_at', message: 'must be after start_at' });
  if (issues.length)
    throw new ApiError(
      'request_validation_failed',
      `Invalid alert window: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`,
      { details: issues },
    );
  // A page's saved range stands for the metric's (404 naming query.page_id when no such page exists).
  const pageCustom = q.page_id !== undefined ? pageRange(q.page_id) : undefined;
  if (q.start_at !== undefined && q.end_at !== undefined)
    return { start: Date.parse(q.start_at), end: Date.parse(q.end_at) };
  const range = q.time_range ?? metric.ui_chart_time_range;
  const custom =
    pageCustom !== undefined
      ? pageCustom
      : metric.ui_chart_custom_range_start_at && metric.ui_chart_custom_range_end_at
        ? {
            start: Date.parse(metric.ui_chart_custom_range_start_at),
            end: Date.parse(metric.ui_chart_custom_range_end_at),
          }
        : null;
  const r = resolveTimeRange(range, { now, timeZone: tz, custom, earliest });
  if (!r) {
    const message =
      'is "custom" but the metric has no saved custom range; send start_at and end_at, or another time_range';
    throw new ApiError('request_validation_failed', `query.time_range ${message}`, {
      details: [{ field: 'query.time_range', message }],
    });
  }
  return { start: r.start, end: r.end };
}

/** A period overlaps [start, end) when it opened before the end and had not ended by the start. */
export function overlaps(a: Pick<AlertRecord, 'created_at' | 'ended_at'>, start: number, end: number): boolean {
  return Date.parse(a.created_at) < end && (a.ended_at === null || Date.parse(a.ended_at) >= start);
}

export function alertRoutes(
  s: Pick<Services, 'aggregation' | 'clock' | 'metrics' | 'monitors' | 'projects'>,
): RouteDef[] {
  return [
    listRoute<AlertRecord, AlertListQuery, MetricParams>({
      path: '/v1/projects/:project_id/metrics/:metric_id/alerts',
      scope: 'alerts:read',
      summary: "List a metric's alerts whose firing period overlaps a window",
      params: params({ project_id: 'project', metric_id: 'metric' }),
      filters: {
        metric_id: idSchema('metric'),
        monitor_id: idSchema('monitor'),
        is_open: { enum: ['true', 'false', '1', '0'], errorHint: 'must be true, false, 1 or 0' },
        time_range: { enum: [...TIME_RANGES] },
        timezone: {
          type: 'string',
          minLength: 1,
          maxLength: 64,
          errorHint: 'must be an IANA time zone name, e.g. Europe/Berlin or UTC',
        },
        page_id: { type: 'string', minLength: 1, maxLength: 64 },
        start_at: isoDateString,
        end_at: isoDateString,
      },
      order: alertOrder,
      items: (ctx) => {
        const q = ctx.query;
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const metric = requireMetric(s, project, ctx.params.metric_id, { allowScheduled: true });
        if (q.metric_id !== undefined && q.metric_id !== metric.id) {
          throw new ApiError(
            'request_validation_failed',
            `query.metric_id must be the metric of the path (${metric.id}) or left out`,
            { details: [{ field: 'query.metric_id', message: 'must be the metric of the path' }] },
          );
        }
        const all = s.monitors.store.alertsOfMetric(metric.id);
        const earliest = all.reduce<number | null>(
          (min, a) => Math.min(min ?? Infinity, Date.parse(a.created_at)),
          null,
        );
        const { start, end } = alertWindow(q, metric, s.clock.now(), earliest, (pageId) =>
          s.aggregation.pageCustomRange(metric, pageId),
        );
        const open = q.is_open === undefined ? undefined : q.is_open === 'true' || q.is_open === '1';
        return all.filter(
          (a) =>
            overlaps(a, start, end) &&
            (q.monitor_id === undefined || a.monitor_id === q.monitor_id) &&
            (open === undefined || (a.ended_at === null) === open),
        );
      },
      serialize: serializeAlert,
    }),
    defineRoute<unknown, unknown, { project_id: string; alert_id: string }>({
      method: 'GET',
      path: '/v1/projects/:project_id/alerts/:alert_id',
      scope: 'alerts:read',
      summary: 'Get an alert (ended_at null: still firing)',
      schema: { params: params({ project_id: 'project', alert_id: 'alert' }) },
      handler: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const a = s.monitors.store.alert(ctx.params.alert_id);
        if (!a || a.project_id !== project.id) throw notFound(`Alert ${ctx.params.alert_id} in project ${project.id}`);
        return { data: serializeAlert(a) };
      },
    }),
  ];
}
