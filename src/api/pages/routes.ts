import { iso } from '../../clock.js';
import { ApiError, invalidField, notFound } from '../../errors.js';
import type { PageRecord } from '../../catalog/pages.js';
import type { ProjectRecord } from '../../catalog/records.js';
import type { Services } from '../../services.js';
import { cardData, type TimeRange } from '../../web/card-data.js';
import { listRoute } from '../http/list-route.js';
import type { ListQuery } from '../http/pagination.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { params } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';
import { checkPage, slugOf } from './page-rules.js';
import { pageCreateBody, pageUpdateBody, type PageBody } from './schemas.js';
import { serializePage } from './serialize.js';

type ProjectParams = { project_id: string };
type PageParams = ProjectParams & { page_id: string };
type DomainParams = PageParams & { domain_id: string };

/** A page of the caller's project, or 404. */
export function requirePage(s: Services, teamId: string, p: PageParams): { project: ProjectRecord; page: PageRecord } {
  const project = requireProject(s, teamId, p.project_id);
  const page = s.pages.get(project.id, p.page_id);
  if (!page) throw notFound(`Page ${p.page_id} in project ${project.id}`);
  return { project, page };
}

/** Width the refresh reads each card at: a full-width card on a laptop screen. */
const REFRESH_WIDTH_PX = 1200;

/** The Pages operations (spec: "Pages", listed only; shapes in docs/pages.md). */
export function pageRoutes(s: Services): RouteDef[] {
  const base = '/v1/projects/:project_id/pages';
  const one = `${base}/:page_id`;
  const pageParams = params({ project_id: 'project', page_id: 'page' });
  return [
    listRoute<PageRecord, ListQuery, ProjectParams>({
      path: base,
      scope: 'pages:read',
      summary: 'List pages of a project',
      params: params({ project_id: 'project' }),
      order: {
        fields: { created_at: (p) => p.created_at, name: (p) => p.name.toLowerCase(), slug: (p) => p.slug },
        defaultOrderBy: 'created_at',
        defaultSort: 'asc',
      },
      items: (ctx) => s.pages.list(requireProject(s, ctx.principal.teamId, ctx.params.project_id).id),
      serialize: (p) => serializePage(s, p, { components: false }),
    }),
    defineRoute<unknown, unknown, PageParams>({
      method: 'GET',
      path: one,
      scope: 'pages:read',
      summary: 'Get a page with its components',
      schema: { params: pageParams },
      handler: (ctx) => ({
        data: serializePage(s, requirePage(s, ctx.principal.teamId, ctx.params).page, { components: true }),
      }),
    }),
    defineRoute<PageBody & { name: string }, unknown, ProjectParams>({
      method: 'POST',
      path: base,
      scope: 'pages:write',
      summary: 'Create a page',
      schema: { params: params({ project_id: 'project' }), body: pageCreateBody },
      handler: async (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const b = ctx.body;
        const input = {
          name: b.name,
          slug: b.slug ?? freeSlug(s, project.id, slugOf(b.name)),
          description: b.description ?? null,
          visibility: b.visibility ?? 'private',
          time_range: b.time_range ?? 'last_24_hours',
          custom_range_start_at: b.custom_range_start_at ? iso(Date.parse(b.custom_range_start_at)) : null,
          custom_range_end_at: b.custom_range_end_at ? iso(Date.parse(b.custom_range_end_at)) : null,
          timezone: b.timezone ?? 'UTC',
        } as const;
        checkPage(input, b);
        return { status: 201, data: serializePage(s, await s.pages.create(project, input), { components: true }) };
      },
    }),
    defineRoute<PageBody, unknown, PageParams>({
      method: 'POST',
      path: one,
      scope: 'pages:write',
      summary: 'Update a page',
      schema: { params: pageParams, body: pageUpdateBody },
      handler: async (ctx) => {
        const b = ctx.body;
        if (Object.keys(b).length === 0)
          throw invalidField(
            'body',
            'must contain at least one field to change: name, slug, description, visibility, time_range, custom_range_start_at, custom_range_end_at or timezone',
          );
        const { page } = requirePage(s, ctx.principal.teamId, ctx.params);
        const patch: Partial<PageRecord> = {};
        for (const k of ['name', 'slug', 'description', 'visibility', 'time_range', 'timezone'] as const)
          if (b[k] !== undefined) (patch as Record<string, unknown>)[k] = b[k];
        for (const k of ['custom_range_start_at', 'custom_range_end_at'] as const)
          if (b[k] !== undefined) patch[k] = b[k] === null ? null : iso(Date.parse(b[k]!));
        checkPage({ ...page, ...patch }, b);
        const updated = await s.pages.update(page, () => patch);
        if (!updated) throw notFound(`Page ${page.id}`);
        s.pageEvents.publish(page.id, 'page');
        return { data: serializePage(s, updated, { components: true }) };
      },
    }),
    defineRoute<unknown, unknown, PageParams>({
      method: 'DELETE',
      path: one,
      scope: 'pages:delete',
      summary: 'Delete a page and its components (their metrics stay)',
      schema: { params: pageParams },
      handler: async (ctx) => {
        const { page } = requirePage(s, ctx.principal.teamId, ctx.params);
        await s.pages.destroy(page);
        s.pageEvents.publish(page.id, 'page');
        return { data: null };
      },
    }),
    defineRoute<unknown, unknown, PageParams>({
      method: 'POST',
      path: `${one}/refresh`,
      scope: 'pages:write',
      summary: "Re-read every component's data now; open viewers redraw",
      schema: { params: pageParams },
      handler: async (ctx) => {
        const { page } = requirePage(s, ctx.principal.teamId, ctx.params);
        const components = [];
        for (const c of s.pages.componentsOf(page.id)) {
          const metric = s.metrics.get(page.project_id, c.metric_id);
          if (!metric) continue;
          const widthPx = c.ui_card_size === '1/2' ? REFRESH_WIDTH_PX / 2 : REFRESH_WIDTH_PX;
          try {
            const d = await cardData(s, page, metric, {
              timeRange: page.time_range as TimeRange,
              timeZone: page.timezone,
              widthPx,
            });
            components.push({
              component_id: c.id,
              metric_id: metric.id,
              ok: true,
              interval: d.interval,
              series_count: d.series.length,
              bucket_count: d.times.length,
              complete_through_at: d.complete_through_at,
              error: null,
            });
          } catch (err) {
            // One card that cannot be read (rollups not open, a range the metric cannot answer) does not hide the others.
            const message = err instanceof Error ? err.message : String(err);
            components.push({
              component_id: c.id,
              metric_id: metric.id,
              ok: false,
              interval: null,
              series_count: 0,
              bucket_count: 0,
              complete_through_at: null,
              error: message,
            });
          }
        }
        const updated = await s.pages.update(page, () => ({ refreshed_at: iso(s.clock.now()) }));
        s.pageEvents.publish(page.id, 'data');
        return {
          data: { object: 'page_refresh', page_id: page.id, refreshed_at: updated?.refreshed_at ?? null, components },
        };
      },
    }),
    defineRoute<unknown, unknown, DomainParams>({
      method: 'POST',
      path: `${one}/domains/:domain_id`,
      scope: 'pages:write',
      summary: 'Serve the page at the root of a verified custom domain with purpose pages',
      schema: { params: params({ project_id: 'project', page_id: 'page', domain_id: 'domain' }) },
      handler: (ctx) => {
        const { page } = requirePage(s, ctx.principal.teamId, ctx.params);
        // Custom domains are not part of this server yet (docs/pages.md, "Domains"): no id names one.
        throw domainNotFound(
          ctx.params.domain_id,
          `custom domains are not part of this server yet, so no domain can be attached; the page is served at /p/${page.slug}`,
        );
      },
    }),
    defineRoute<unknown, unknown, DomainParams>({
      method: 'DELETE',
      path: `${one}/domains/:domain_id`,
      scope: 'pages:write',
      summary: 'Stop serving the page on a custom domain',
      schema: { params: params({ project_id: 'project', page_id: 'page', domain_id: 'domain' }) },
      handler: async (ctx) => {
        const { page } = requirePage(s, ctx.principal.teamId, ctx.params);
        const domainId = ctx.params.domain_id;
        if (!page.domain_ids.includes(domainId))
          throw domainNotFound(domainId, `no such domain is attached to page ${page.id}`);
        const updated = await s.pages.update(page, (cur) => ({
          domain_ids: cur.domain_ids.filter((d) => d !== domainId),
        }));
        return { data: updated ? serializePage(s, updated, { components: true }) : null };
      },
    }),
  ];
}

/** 404 `not_found` naming the domain of the path (`params.domain_id`) and why. */
function domainNotFound(domainId: string, why: string): ApiError {
  const message = `names no domain: ${why}`;
  return new ApiError('not_found', `Domain ${domainId} not found: ${why}`, {
    details: [{ field: 'params.domain_id', message }],
  });
}

/**
 * `base`, or `base-2`, `base-3`, … : the first slug no page of the project has and no page holds as
 * its short address, so a name's default slug never conflicts and gets its `/p/<slug>` address.
 */
function freeSlug(s: Services, projectId: string, base: string): string {
  const taken = new Set(s.pages.list(projectId).map((p) => p.slug));
  const free = (slug: string) => !taken.has(slug) && !s.pages.bySlug(slug);
  if (free(base)) return base;
  for (let i = 2; i < 10_000; i++) {
    const candidate = `${base.slice(0, 58)}-${i}`;
    if (free(candidate)) return candidate;
  }
  return `${base.slice(0, 40)}-${Date.now().toString(36)}`;
}
