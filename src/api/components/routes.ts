import { ApiError, invalidField, notFound } from '../../errors.js';
import { idSchema } from '../../ids.js';
import { CARD_SIZES, type ComponentRecord, type PageRecord } from '../../catalog/pages.js';
import type { MetricRecord } from '../../rollup/metric-records.js';
import type { Services } from '../../services.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { integer, object, params } from '../http/schemas.js';
import { requirePage } from '../pages/routes.js';
import { serializeComponent } from '../pages/serialize.js';

type PageParams = { project_id: string; page_id: string };
type ComponentParams = PageParams & { component_id: string };
type ComponentBody = {
  metric_id?: string;
  ui_sort_index?: number;
  ui_card_size?: ComponentRecord['ui_card_size'];
  page_id?: string;
};

const fields = {
  metric_id: idSchema('metric'),
  ui_sort_index: integer(-1_000_000, 1_000_000),
  ui_card_size: {
    enum: [...CARD_SIZES],
    errorHint: `must be one of ${CARD_SIZES.join(', ')} (the share of the page width)`,
  },
};
const createBody = object(
  { ...fields, page_id: { type: 'string', maxLength: 64, errorHint: 'must be the id of the page in the path' } },
  ['metric_id'],
);
const updateBody = object(fields);

/**
 * The metric a component shows: one of the page's own project, live (spec: "the metric must belong
 * to the same project as the page (also for a changed metric_id)"). Another project's metric, an
 * unknown one and one scheduled for deletion are all 400 naming `body.metric_id`.
 */
function requirePageMetric(s: Pick<Services, 'metrics'>, page: PageRecord, metricId: string): MetricRecord {
  const metric = s.metrics.get(page.project_id, metricId);
  if (!metric)
    throw invalidField(
      'body.metric_id',
      `names no metric of project ${page.project_id} (the page's project): a component shows a metric of its page's project`,
    );
  if (metric.deleted_at)
    throw invalidField('body.metric_id', `names metric ${metricId}, which is scheduled for deletion; restore it first`);
  return metric;
}

function requireComponent(s: Pick<Services, 'pages'>, page: PageRecord, id: string): ComponentRecord {
  const c = s.pages.components.get(page.id, id);
  if (!c) throw notFound(`Component ${id} on page ${page.id}`);
  return c;
}

/** Spec: Components — create, update (reorder, resize, another metric), delete. */
export function componentRoutes(s: Pick<Services, 'metrics' | 'pageEvents' | 'pages' | 'projects'>): RouteDef[] {
  const base = '/v1/projects/:project_id/pages/:page_id/components';
  const one = `${base}/:component_id`;
  const componentParams = params({ project_id: 'project', page_id: 'page', component_id: 'component' });
  return [
    defineRoute<ComponentBody & { metric_id: string }, unknown, PageParams>({
      method: 'POST',
      path: base,
      scope: 'pages:write',
      summary: 'Place a metric on a page',
      schema: { params: params({ project_id: 'project', page_id: 'page' }), body: createBody },
      handler: async (ctx) => {
        const { page } = requirePage(s, ctx.principal.teamId, ctx.params);
        const b = ctx.body;
        if (b.page_id !== undefined && b.page_id !== page.id)
          throw invalidField('body.page_id', `must be the page in the path (${page.id}) or left out`);
        requirePageMetric(s, page, b.metric_id);
        const c = await s.pages.addComponent(page, {
          metric_id: b.metric_id,
          ...(b.ui_card_size ? { ui_card_size: b.ui_card_size } : {}),
          ...(b.ui_sort_index !== undefined ? { ui_sort_index: b.ui_sort_index } : {}),
        });
        s.pageEvents.publish(page.id, 'page');
        return { status: 201, data: serializeComponent(s, page, c) };
      },
    }),
    defineRoute<ComponentBody, unknown, ComponentParams>({
      method: 'POST',
      path: one,
      scope: 'pages:write',
      summary: 'Move, resize or change the metric of a component',
      schema: { params: componentParams, body: updateBody },
      handler: async (ctx) => {
        const b = ctx.body;
        if (Object.keys(b).length === 0)
          throw invalidField(
            'body',
            'must contain at least one field to change: metric_id, ui_sort_index or ui_card_size',
          );
        const { page } = requirePage(s, ctx.principal.teamId, ctx.params);
        const current = requireComponent(s, page, ctx.params.component_id);
        if (b.metric_id !== undefined) requirePageMetric(s, page, b.metric_id);
        const next = await s.pages.updateComponent(current, {
          ...(b.metric_id !== undefined ? { metric_id: b.metric_id } : {}),
          ...(b.ui_card_size !== undefined ? { ui_card_size: b.ui_card_size } : {}),
          ...(b.ui_sort_index !== undefined ? { ui_sort_index: b.ui_sort_index } : {}),
        });
        if (!next) throw notFound(`Component ${current.id} on page ${page.id}`);
        s.pageEvents.publish(page.id, 'page');
        const data = serializeComponent(s, page, next);
        if (!data) throw new ApiError('conflict', `The metric of component ${next.id} was deleted meanwhile`);
        return { data };
      },
    }),
    defineRoute<unknown, unknown, ComponentParams>({
      method: 'DELETE',
      path: one,
      scope: 'pages:write',
      summary: 'Remove a component from its page (the metric stays)',
      schema: { params: componentParams },
      handler: async (ctx) => {
        const { page } = requirePage(s, ctx.principal.teamId, ctx.params);
        await s.pages.removeComponent(requireComponent(s, page, ctx.params.component_id));
        s.pageEvents.publish(page.id, 'page');
        return { data: null };
      },
    }),
  ];
}
