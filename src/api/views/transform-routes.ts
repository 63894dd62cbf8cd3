import { ApiError, notFound } from '../../errors.js';
import type { Services } from '../../services.js';
import type {
  ViewDeferralRecord,
  ViewRecord,
  ViewTransformRecord,
  ViewVersionRecord,
} from '../../transform/view-records.js';
import type { DeferralDecisionInput, TransformChange } from '../../transform/view-transforms.js';
import { listRoute } from '../http/list-route.js';
import type { ListOrder, ListQuery } from '../http/pagination.js';
import { parseNullableDateFilter } from '../http/filters.js';
import { defineRoute, type RequestContext, type RouteDef } from '../http/route.js';
import { params } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';
import { assertScript, requireView } from './checks.js';
import { inspectShape } from '../../transform/shape-inspection.js';
import {
  decisionBody,
  deferralListFilters,
  transformCreateBody,
  transformUpdateBody,
  versionListFilters,
} from './schemas.js';
import { serializeDeferral, serializeHint, serializeTransform, serializeVersion, serializeView } from './serialize.js';

type ViewParams = { project_id: string; view_id: string };
type TransformParams = ViewParams & { transform_id: string };
type VersionParams = ViewParams & { version_id: string };
type DeferralParams = ViewParams & { deferral_id: string };

const byCreation = <T extends { created_at: string }>(): ListOrder<T> => ({
  fields: { created_at: (x) => x.created_at },
  defaultOrderBy: 'created_at',
  defaultSort: 'asc',
});

/**
 * Transforms, versions, waiting shapes and regeneration of one view. Reads work on views scheduled
 * for deletion too; writes answer 409 on them until they are restored.
 */
export function viewTransformRoutes(
  s: Pick<Services, 'collections' | 'metrics' | 'projects' | 'schema' | 'views'>,
): RouteDef[] {
  const one = '/v1/projects/:project_id/views/:view_id';
  const viewParams = params({ project_id: 'project', view_id: 'view' });
  const transformParams = params({ project_id: 'project', view_id: 'view', transform_id: 'viewTransform' });
  const versionParams = params({ project_id: 'project', view_id: 'view', version_id: 'viewVersion' });
  const deferralParams = params({ project_id: 'project', view_id: 'view', deferral_id: 'viewDeferral' });
  const viewOf = (ctx: RequestContext<unknown, unknown, ViewParams>): ViewRecord =>
    requireView(s, requireProject(s, ctx.principal.teamId, ctx.params.project_id), ctx.params.view_id, {
      allowScheduled: true,
    });
  const transformOf = (view: ViewRecord, id: string): ViewTransformRecord => {
    const t = s.views.transforms.get(view.id, id);
    if (!t) throw notFound(`Transform ${id} of view ${view.id}`);
    return t;
  };
  const deferralOf = (view: ViewRecord, id: string): ViewDeferralRecord => {
    const d = s.views.transforms.deferral(view.id, id);
    if (!d) throw notFound(`Waiting shape ${id} of view ${view.id}`);
    return d;
  };

  return [
    // ── Transforms ──────────────────────────────────────────────────────────
    listRoute<ViewTransformRecord, ListQuery, ViewParams>({
      path: `${one}/transforms`,
      scope: 'views:read',
      summary: 'List the transforms of a view',
      params: viewParams,
      order: byCreation(),
      items: (ctx) => s.views.transforms.list(viewOf(ctx).id),
      serialize: serializeTransform,
    }),
    defineRoute<{ transform_script?: string; max_read_depth?: number | null }, unknown, ViewParams>({
      method: 'POST',
      path: `${one}/transforms`,
      scope: 'views:write',
      summary: 'Add a transform to a view (with a script it serves at once; without, one is generated)',
      schema: { params: viewParams, body: transformCreateBody },
      handler: async (ctx) => {
        const view = viewOf(ctx);
        assertScript(ctx.body.transform_script);
        return { status: 201, data: serializeTransform(await s.views.transforms.create(view, ctx.body)) };
      },
    }),
    defineRoute<unknown, unknown, TransformParams>({
      method: 'GET',
      path: `${one}/transforms/:transform_id`,
      scope: 'views:read',
      summary: 'Get a transform of a view',
      schema: { params: transformParams },
      handler: (ctx) => ({ data: serializeTransform(transformOf(viewOf(ctx), ctx.params.transform_id)) }),
    }),
    defineRoute<TransformChange, unknown, TransformParams>({
      method: 'POST',
      path: `${one}/transforms/:transform_id`,
      scope: 'views:write',
      summary: "Change a transform's script, read depth, or disable / enable it",
      schema: { params: transformParams, body: transformUpdateBody },
      handler: async (ctx) => {
        if (Object.keys(ctx.body).length === 0) {
          throw new ApiError(
            'request_validation_failed',
            'body must contain at least one field to change: transform_script, status or max_read_depth',
            { details: [{ field: 'body', message: 'must contain at least one field to change' }] },
          );
        }
        const view = viewOf(ctx);
        transformOf(view, ctx.params.transform_id);
        assertScript(ctx.body.transform_script);
        return { data: serializeTransform(await s.views.transforms.update(view, ctx.params.transform_id, ctx.body)) };
      },
    }),
    defineRoute<unknown, unknown, TransformParams>({
      method: 'DELETE',
      path: `${one}/transforms/:transform_id`,
      scope: 'views:delete',
      summary: 'Remove a transform (a view keeps at least one)',
      schema: { params: transformParams },
      handler: async (ctx) => {
        const view = viewOf(ctx);
        transformOf(view, ctx.params.transform_id);
        await s.views.transforms.remove(view, ctx.params.transform_id);
        return { data: null };
      },
    }),
    defineRoute<unknown, unknown, TransformParams>({
      method: 'POST',
      path: `${one}/transforms/:transform_id/generate`,
      scope: 'views:write',
      summary: 'Queue a newly generated script for a transform',
      schema: { params: transformParams },
      handler: async (ctx) => {
        const view = viewOf(ctx);
        transformOf(view, ctx.params.transform_id);
        return { data: serializeTransform(await s.views.transforms.generate(view, ctx.params.transform_id)) };
      },
    }),
    defineRoute<unknown, unknown, TransformParams>({
      method: 'POST',
      path: `${one}/transforms/:transform_id/rebackfill`,
      scope: 'views:write',
      summary: "Reprocess the view's stored input with the transform's current script",
      schema: { params: transformParams },
      handler: async (ctx) => {
        const view = viewOf(ctx);
        transformOf(view, ctx.params.transform_id);
        return { data: serializeTransform(await s.views.transforms.rebackfill(view, ctx.params.transform_id)) };
      },
    }),
    defineRoute<unknown, unknown, ViewParams>({
      method: 'POST',
      path: `${one}/regenerate`,
      scope: 'views:write',
      summary: 'Generate every script of the view again (mapping_generation moves on)',
      schema: { params: viewParams },
      handler: async (ctx) => ({ data: serializeView(s, await s.views.transforms.regenerate(viewOf(ctx))) }),
    }),
    // ── Versions ────────────────────────────────────────────────────────────
    listRoute<ViewVersionRecord, ListQuery & { transform_id?: string }, ViewParams>({
      path: `${one}/versions`,
      scope: 'views:read',
      summary: 'List the source schema versions a view maps, with the script covering each',
      params: viewParams,
      filters: versionListFilters,
      order: {
        fields: { created_at: (v) => v.created_at, version: (v) => v.version },
        defaultOrderBy: 'version',
        defaultSort: 'asc',
      },
      items: (ctx) =>
        s.views.transforms
          .versions(viewOf(ctx).id)
          .filter((v) => ctx.query.transform_id === undefined || v.transform_id === ctx.query.transform_id),
      serialize: serializeVersion,
    }),
    defineRoute<unknown, unknown, VersionParams>({
      method: 'GET',
      path: `${one}/versions/:version_id`,
      scope: 'views:read',
      summary: 'Get a view version',
      schema: { params: versionParams },
      handler: (ctx) => {
        const view = viewOf(ctx);
        const v = s.views.transforms.version(view.id, ctx.params.version_id);
        if (!v) throw notFound(`Version ${ctx.params.version_id} of view ${view.id}`);
        return { data: serializeVersion(v) };
      },
    }),
    // ── Waiting shapes ──────────────────────────────────────────────────────
    listRoute<ViewDeferralRecord, ListQuery & { reason?: string; resolved_at?: string }, ViewParams>({
      path: `${one}/deferrals`,
      scope: 'views:read',
      summary: 'List the event shapes waiting for a transform (and those resolved)',
      params: viewParams,
      filters: deferralListFilters,
      order: {
        fields: { created_at: (d) => d.created_at, last_deferred_at: (d) => d.last_deferred_at },
        defaultOrderBy: 'last_deferred_at',
        defaultSort: 'desc',
      },
      items: (ctx) => {
        const q = ctx.query;
        const resolved =
          q.resolved_at === undefined ? () => true : parseNullableDateFilter('resolved_at', q.resolved_at);
        return s.views.transforms
          .deferrals(viewOf(ctx).id)
          .filter((d) => (q.reason === undefined || d.reason === q.reason) && resolved(d.resolved_at));
      },
      serialize: serializeDeferral,
    }),
    defineRoute<unknown, unknown, DeferralParams>({
      method: 'GET',
      path: `${one}/deferrals/:deferral_id`,
      scope: 'views:read',
      summary: 'Get a waiting shape',
      schema: { params: deferralParams },
      handler: (ctx) => ({ data: serializeDeferral(deferralOf(viewOf(ctx), ctx.params.deferral_id)) }),
    }),
    defineRoute<unknown, unknown, DeferralParams>({
      method: 'GET',
      path: `${one}/deferrals/:deferral_id/hint`,
      scope: 'views:read',
      summary: 'Get the question the service asks about a waiting shape',
      schema: { params: deferralParams },
      handler: (ctx) => {
        const d = deferralOf(viewOf(ctx), ctx.params.deferral_id);
        if (d.hint_question === null)
          throw new ApiError(
            'not_found',
            `Waiting shape ${d.id} has no question pending; hints are asked when generation cannot decide a mapping alone`,
          );
        // The question stays on the shape as history; once it no longer waits, nothing is asked.
        if (d.resolved_at !== null)
          throw new ApiError(
            'not_found',
            `Waiting shape ${d.id} no longer waits (resolved at ${d.resolved_at}, reason ${d.reason}); its question was answered`,
          );
        return { data: serializeHint(d) };
      },
    }),
    defineRoute<unknown, unknown, DeferralParams>({
      method: 'GET',
      path: `${one}/deferrals/:deferral_id/inspection`,
      scope: 'views:read',
      summary: 'Inspect a waiting shape: its paths, what generation makes of it, which transform could serve it',
      schema: { params: deferralParams },
      handler: async (ctx) => {
        const view = viewOf(ctx);
        const d = deferralOf(view, ctx.params.deferral_id);
        const collection = s.collections.byId(view.root_collection_id);
        const versions = collection && d.schema_version !== null ? await s.schema.listVersions(collection) : [];
        const version = versions.find((v) => v.version === d.schema_version) ?? null;
        return {
          data: {
            object: 'view_shape_inspection',
            ...inspectShape(view, d, version, s.views.transforms.list(view.id)),
          },
        };
      },
    }),
    defineRoute<DeferralDecisionInput, unknown, DeferralParams>({
      method: 'POST',
      path: `${one}/deferrals/:deferral_id/decision`,
      scope: 'views:write',
      summary: 'Decide a waiting shape: assign it to a transform, have a script generated, or exclude it',
      schema: { params: deferralParams, body: decisionBody },
      handler: async (ctx) => {
        const view = viewOf(ctx);
        deferralOf(view, ctx.params.deferral_id);
        return { data: serializeDeferral(await s.views.transforms.decide(view, ctx.params.deferral_id, ctx.body)) };
      },
    }),
  ];
}
