import { sourceTotals } from '../../schema/storage-stats.js';
import { ApiError, invalidField, notFound } from '../../errors.js';
import type { ProjectRecord, SourceRecord } from '../../catalog/records.js';
import { destroySource } from '../../catalog/purge.js';
import type { Services } from '../../services.js';
import { listRoute, namedResourceOrder } from '../http/list-route.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { assertRestoreFirst, scheduledDeletionRoutes } from '../http/scheduled-deletion.js';
import type { ListQuery } from '../http/pagination.js';
import { filterParamSchema, parseNullableDateFilter } from '../http/filters.js';
import { idSchema } from '../../ids.js';
import { object, params, restoreOnly, text } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';

type ProjectParams = { project_id: string };
type SourceParams = { project_id: string; source_id: string };
type SourceListQuery = ListQuery & { project_id?: string; deleted_at?: string };

const createBody = object(
  {
    name: text(1, 128),
    project_id: { type: 'string', errorHint: 'is ignored (the path names the project) but must be a string' },
  },
  ['name'],
);
const updateBody = object({ name: text(1, 128), deleted_at: restoreOnly });

/** The source as the API shows it (spec: Source). */
export function serializeSource(s: Pick<Services, 'collections' | 'projects' | 'schema'>, src: SourceRecord) {
  return {
    object: 'source',
    id: src.id,
    project_id: src.project_id,
    project_name: s.projects.get(src.team_id, src.project_id)?.name ?? '',
    name: src.name,
    ...sourceTotals(s, src.id),
    collections_count: s.collections.list(src.id).filter((c) => !c.deleted_at).length,
    deleted_at: src.deleted_at,
    created_at: src.created_at,
    updated_at: src.updated_at,
  };
}

/**
 * A source of `project` (which the caller's team owns), or 404. A scheduled source answers 404
 * with a hint to restore it unless `allowScheduled`.
 */
/**
 * A source of `project`, or 404; a scheduled one answers 404 with a restore hint unless
 * `allowScheduled`. `field` names the request field the id came from (in the error's details).
 */
export function requireSource(
  s: Pick<Services, 'sources'>,
  project: ProjectRecord,
  sourceId: string,
  opts: { allowScheduled?: boolean; field?: string } = {},
): SourceRecord {
  const missing = (message: string) =>
    new ApiError('not_found', message, opts.field ? { details: [{ field: opts.field, message }] } : {});
  const source = s.sources.get(project.id, sourceId);
  if (!source || source.team_id !== project.team_id)
    throw missing(`Source ${sourceId} in project ${project.id} not found`);
  if (source.deleted_at && !opts.allowScheduled) {
    throw missing(
      `Source ${sourceId} is scheduled for deletion; restore it with POST /v1/projects/${project.id}/sources/${sourceId} {"deleted_at": null}`,
    );
  }
  return source;
}

export function sourceRoutes(s: Services): RouteDef[] {
  const base = '/v1/projects/:project_id/sources';
  const one = `${base}/:source_id`;
  const sourceParams = params({ project_id: 'project', source_id: 'source' });
  return [
    listRoute<SourceRecord, SourceListQuery, ProjectParams>({
      path: base,
      scope: 'sources:read',
      summary: 'List sources of a project',
      params: params({ project_id: 'project' }),
      filters: { project_id: idSchema('project'), deleted_at: filterParamSchema },
      order: namedResourceOrder(),
      items: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const deleted = parseNullableDateFilter('deleted_at', ctx.query.deleted_at);
        // `project_id` is redundant with the path; a different value matches nothing.
        return s.sources
          .list(project.id)
          .filter(
            (src) =>
              deleted(src.deleted_at) &&
              (ctx.query.project_id === undefined || ctx.query.project_id === src.project_id),
          );
      },
      serialize: (x) => serializeSource(s, x),
    }),
    defineRoute<unknown, unknown, SourceParams>({
      method: 'GET',
      path: one,
      scope: 'sources:read',
      summary: 'Get a source',
      schema: { params: sourceParams },
      handler: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        return { data: serializeSource(s, requireSource(s, project, ctx.params.source_id, { allowScheduled: true })) };
      },
    }),
    defineRoute<{ name: string }, unknown, ProjectParams>({
      method: 'POST',
      path: base,
      scope: 'sources:write',
      summary: 'Create a source',
      schema: { params: params({ project_id: 'project' }), body: createBody },
      handler: async (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        return { status: 201, data: serializeSource(s, await s.sources.create(project, { name: ctx.body.name })) };
      },
    }),
    defineRoute<{ name?: string; deleted_at?: null }, unknown, SourceParams>({
      method: 'POST',
      path: one,
      scope: 'sources:write',
      summary: 'Update or restore a source',
      schema: { params: sourceParams, body: updateBody },
      handler: async (ctx) => {
        const b = ctx.body;
        // A no-op would still move updated_at; say what is missing instead.
        if (Object.keys(b).length === 0)
          throw invalidField('body', 'must contain at least one field to change: name or deleted_at');
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const current = requireSource(s, project, ctx.params.source_id, { allowScheduled: true });
        assertRestoreFirst('source', current, b);
        // Restoring a source whose name a live source took meanwhile answers 409; send a new `name` with it.
        const updated = await s.sources.update(project.id, current.id, () => ({
          ...(b.name !== undefined ? { name: b.name } : {}),
          ...(b.deleted_at === null ? { deleted_at: null } : {}),
        }));
        if (!updated) throw notFound(`Source ${current.id}`);
        return { data: serializeSource(s, updated) };
      },
    }),
    ...scheduledDeletionRoutes<SourceRecord, SourceParams>(s, {
      noun: 'source',
      path: one,
      scope: 'sources:delete',
      params: sourceParams,
      beneath: 'its collections, ingest keys, records and files',
      find: (ctx) =>
        requireSource(s, requireProject(s, ctx.principal.teamId, ctx.params.project_id), ctx.params.source_id, {
          allowScheduled: true,
        }),
      markDeleted: (src, at) => s.sources.update(src.project_id, src.id, () => ({ deleted_at: at })),
      destroy: (src) => destroySource(s, src),
      serialize: (src) => serializeSource(s, src),
    }),
  ];
}
