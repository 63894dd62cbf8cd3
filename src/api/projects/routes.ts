import { iso } from '../../clock.js';
import { projectStorageGb } from '../../schema/storage-stats.js';
import { ApiError, invalidField, notFound } from '../../errors.js';
import type { ProjectRecord } from '../../catalog/records.js';
import { destroyProject } from '../../catalog/purge.js';
import type { Services } from '../../services.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { listRoute } from '../http/list-route.js';
import { assertRestoreFirst, scheduledDeletionRoutes } from '../http/scheduled-deletion.js';
import { integer, isoDateString, object, params, restoreOnly, text } from '../http/schemas.js';

type ProjectParams = { project_id: string };

const createBody = object({ name: text(1, 60), start_at: isoDateString }, ['name']);
const updateBody = object({
  name: text(1, 60),
  start_at: isoDateString,
  late_data_window_minutes: integer(0, 129600),
  deleted_at: restoreOnly,
});

/** The project as the API shows it (spec: Project). */
export function serializeProject(s: Services, p: ProjectRecord) {
  const team = s.accounts.getTeam(p.team_id);
  return {
    object: 'project',
    id: p.id,
    team_id: p.team_id,
    team_name: team?.name ?? '',
    trial_expires_at: team?.promo_expires_at ?? null,
    name: p.name,
    start_at: p.start_at,
    created_at: p.created_at,
    updated_at: p.updated_at,
    deleted_at: p.deleted_at,
    last_activity_at: s.activity.lastActivityAt(p.id),
    late_data_window_minutes: p.late_data_window_minutes,
    server_endpoint: s.config.publicUrl,
    queued_server_count: p.queued_server_count,
    storage_gb: projectStorageGb(s, p.id),
    billing_period_server_months: 0,
    billing_updated_at: null,
  };
}

/** A project of the caller's team, or 404 (another team's project is indistinguishable from none). */
export function requireProject(
  s: Pick<Services, 'projects'>,
  teamId: string,
  projectId: string,
  opts: { allowScheduled?: boolean } = {},
): ProjectRecord {
  const project = s.projects.get(teamId, projectId);
  if (!project) throw notFound(`Project ${projectId}`);
  if (project.deleted_at && !opts.allowScheduled) {
    throw new ApiError(
      'not_found',
      `Project ${projectId} is scheduled for deletion; restore it with POST /v1/projects/${projectId} {"deleted_at": null}`,
    );
  }
  return project;
}

export function projectRoutes(s: Services): RouteDef[] {
  return [
    listRoute<ProjectRecord>({
      path: '/v1/projects',
      scope: 'projects:read',
      summary: 'List projects',
      order: {
        fields: { created_at: (p) => p.created_at, name: (p) => p.name.toLowerCase() },
        defaultOrderBy: 'name',
        defaultSort: 'desc',
        sortWhenNeither: 'asc',
      },
      items: (ctx) => s.projects.list(ctx.principal.teamId).filter((p) => !p.deleted_at),
      serialize: (p) => serializeProject(s, p),
    }),
    defineRoute<unknown, unknown, ProjectParams>({
      method: 'GET',
      path: '/v1/projects/:project_id',
      scope: 'projects:read',
      summary: 'Get a project',
      schema: { params: params({ project_id: 'project' }) },
      handler: (ctx) => ({
        data: serializeProject(
          s,
          requireProject(s, ctx.principal.teamId, ctx.params.project_id, { allowScheduled: true }),
        ),
      }),
    }),
    defineRoute<{ name: string; start_at?: string }>({
      method: 'POST',
      path: '/v1/projects',
      scope: 'projects:write',
      summary: 'Create a project',
      schema: { body: createBody },
      handler: async (ctx) => ({
        status: 201,
        data: serializeProject(s, await s.projects.create(ctx.principal.teamId, ctx.body)),
      }),
    }),
    defineRoute<
      { name?: string; start_at?: string; late_data_window_minutes?: number; deleted_at?: null },
      unknown,
      ProjectParams
    >({
      method: 'POST',
      path: '/v1/projects/:project_id',
      scope: 'projects:write',
      summary: 'Update or restore a project',
      schema: { params: params({ project_id: 'project' }), body: updateBody },
      handler: async (ctx) => {
        const { teamId } = ctx.principal;
        const b = ctx.body;
        // A no-op would still move updated_at; say what is missing instead.
        if (Object.keys(b).length === 0)
          throw invalidField(
            'body',
            'must contain at least one field to change: name, start_at, late_data_window_minutes or deleted_at',
          );
        const current = requireProject(s, teamId, ctx.params.project_id, { allowScheduled: true });
        assertRestoreFirst('project', current, b);
        const updated = await s.projects.update(teamId, current.id, () => ({
          ...(b.name !== undefined ? { name: b.name } : {}),
          ...(b.start_at !== undefined ? { start_at: iso(Date.parse(b.start_at)) } : {}),
          ...(b.late_data_window_minutes !== undefined ? { late_data_window_minutes: b.late_data_window_minutes } : {}),
          ...(b.deleted_at === null ? { deleted_at: null } : {}),
        }));
        if (!updated) throw notFound(`Project ${current.id}`);
        return { data: serializeProject(s, updated) };
      },
    }),
    ...scheduledDeletionRoutes<ProjectRecord, ProjectParams>(s, {
      noun: 'project',
      path: '/v1/projects/:project_id',
      scope: 'projects:delete',
      params: params({ project_id: 'project' }),
      beneath: 'every source, collection and record beneath it',
      find: (ctx) => requireProject(s, ctx.principal.teamId, ctx.params.project_id, { allowScheduled: true }),
      markDeleted: (p, at) => s.projects.update(p.team_id, p.id, () => ({ deleted_at: at })),
      destroy: (p) => destroyProject(s, p),
      serialize: (p) => serializeProject(s, p),
    }),
  ];
}
