import { ApiError, notFound } from '../../errors.js';
import type { LateDataFileRecord } from '../../rollup/late-data.js';
import type { Services } from '../../services.js';
import { listRoute } from '../http/list-route.js';
import type { ListOrder, ListQuery } from '../http/pagination.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { params } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';

type ProjectParams = { project_id: string };
type FileParams = ProjectParams & { late_data_file_id: string };

/** Spec: `order_by` created_at (default) or min_event_at; `sort` default asc (ours, as other lists). */
const lateOrder: ListOrder<LateDataFileRecord> = {
  fields: { created_at: (f) => f.created_at, min_event_at: (f) => f.min_event_at },
  defaultOrderBy: 'created_at',
  defaultSort: 'asc',
};

/** The late data file as the API shows it (spec: Late data file), with its view's current name. */
export function serializeLateDataFile(s: Pick<Services, 'views'>, f: LateDataFileRecord) {
  return {
    object: 'late_data_file',
    id: f.id,
    view_id: f.view_id,
    view_name: s.views.store.byId(f.view_id)?.name ?? null,
    excluded_count: f.excluded_count,
    min_event_at: f.min_event_at,
    max_event_at: f.max_event_at,
    exclusion_below: f.exclusion_below,
    refold_queued_at: f.refold_queued_at,
    refolded_at: f.refolded_at,
    created_at: f.created_at,
  };
}

export function lateDataRoutes(s: Services): RouteDef[] {
  const base = '/v1/projects/:project_id/late_data';
  return [
    listRoute<LateDataFileRecord, ListQuery & { refolded?: boolean }, ProjectParams>({
      path: base,
      scope: 'projects:read',
      summary: 'List late data files of a project',
      params: params({ project_id: 'project' }),
      filters: {
        refolded: {
          type: 'boolean',
          errorHint: 'must be true (files already folded back) or false (files still excluded)',
        },
      },
      order: lateOrder,
      items: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const want = ctx.query.refolded;
        return s.lateData.list(project.id).filter((f) => want === undefined || (f.refolded_at !== null) === want);
      },
      serialize: (f) => serializeLateDataFile(s, f),
    }),
    defineRoute<unknown, unknown, FileParams>({
      method: 'POST',
      path: `${base}/:late_data_file_id/re_backfill`,
      scope: 'projects:write',
      summary: 'Fold a late data file back into the metrics of its view',
      schema: { params: params({ project_id: 'project', late_data_file_id: 'lateDataFile' }) },
      handler: async (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const id = ctx.params.late_data_file_id;
        const queued = await s.store.transaction(() => {
          const f = s.lateData.get(project.id, id);
          if (!f) throw notFound(`Late data file ${id} in project ${project.id}`);
          if (f.refolded_at !== null)
            throw new ApiError(
              'conflict',
              `Late data file ${id} was folded back at ${f.refolded_at}; its events are in the charts already`,
            );
          // Asking again while queued changes nothing: the events fold back once.
          if (f.refold_queued_at !== null) return f;
          const next = { ...f, refold_queued_at: new Date(s.clock.now()).toISOString() };
          s.lateData.stagePut(next);
          return next;
        });
        s.lateRefold?.kick();
        return { data: serializeLateDataFile(s, queued) };
      },
    }),
  ];
}
