import { invalidField, notFound } from '../../errors.js';
import type { ProjectRecord } from '../../catalog/records.js';
import type { IdKind } from '../../ids.js';
import type { FetchJobs } from '../../pull/fetch-jobs.js';
import type { ScheduledFetchRecord } from '../../pull/records.js';
import type { Services } from '../../services.js';
import { listRoute } from '../http/list-route.js';
import type { ListOrder, ListQuery } from '../http/pagination.js';
import { defineRoute, type JsonSchema, type RouteDef } from '../http/route.js';
import { params } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';
import { requireSource } from '../sources/routes.js';
import { fetchListFilters } from './schemas.js';

type ProjectParams = { project_id: string };
type FetchListQuery = ListQuery & { status?: string; source_id?: string };

/** What pulls and checks each bring to the eight routes they share in shape (spec api-2, Pulls and Checks). */
export interface FetchJobResource<T extends ScheduledFetchRecord, C extends { source_id: string }, U> {
  noun: 'pull' | 'check';
  idKind: IdKind;
  scope: 'pulls' | 'checks';
  service: {
    jobs: FetchJobs<T>;
    create(project: ProjectRecord, input: C): Promise<T>;
    update(current: T, input: U): Promise<T>;
    pause(current: T): Promise<T>;
    resume(current: T): Promise<T>;
    remove(current: T): Promise<void>;
    test(current: T): Promise<unknown>;
  };
  order: ListOrder<T>;
  createBody: JsonSchema;
  updateBody: JsonSchema;
  /** Listed in the message of an empty update. */
  updateFields: string;
  serialize(record: T): unknown;
}

/** List, get, create, update, delete, pause, resume and test, declared once for pulls and checks. */
export function fetchJobRoutes<T extends ScheduledFetchRecord, C extends { source_id: string }, U extends object>(
  s: Pick<Services, 'projects' | 'sources'>,
  r: FetchJobResource<T, C, U>,
): RouteDef[] {
  const base = `/v1/projects/:project_id/${r.noun}s`;
  const one = `${base}/:${r.noun}_id`;
  type OneParams = ProjectParams & Record<string, string>;
  const oneParams = params({ project_id: 'project', [`${r.noun}_id`]: r.idKind });
  const Noun = r.noun === 'pull' ? 'Pull' : 'Check';
  const find = (teamId: string, p: OneParams): T => {
    const project = requireProject(s, teamId, p.project_id);
    const id = p[`${r.noun}_id`]!;
    const record = r.service.jobs.repo.get(project.id, id);
    if (!record || record.team_id !== project.team_id) throw notFound(`${Noun} ${id} in project ${project.id}`);
    return record;
  };
  const action = (
    name: 'pause' | 'resume' | 'test',
    summary: string,
    fn: (record: T) => Promise<unknown>,
    serialize: boolean,
  ) =>
    defineRoute<unknown, unknown, OneParams>({
      method: 'POST',
      path: `${one}/${name}`,
      scope: `${r.scope}:write`,
      summary,
      schema: { params: oneParams },
      handler: async (ctx) => {
        const out = await fn(find(ctx.principal.teamId, ctx.params));
        return { data: serialize ? r.serialize(out as T) : out };
      },
    });
  return [
    listRoute<T, FetchListQuery, ProjectParams>({
      path: base,
      scope: `${r.scope}:read`,
      summary: `List ${r.noun}s of a project`,
      params: params({ project_id: 'project' }),
      filters: fetchListFilters,
      order: r.order,
      items: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const q = ctx.query;
        return r.service.jobs.repo
          .list(project.id)
          .filter(
            (x) =>
              (q.status === undefined || x.status === q.status) &&
              (q.source_id === undefined || x.source_id === q.source_id),
          );
      },
      serialize: r.serialize,
    }),
    defineRoute<unknown, unknown, OneParams>({
      method: 'GET',
      path: one,
      scope: `${r.scope}:read`,
      summary: `Get a ${r.noun}`,
      schema: { params: oneParams },
      handler: (ctx) => ({ data: r.serialize(find(ctx.principal.teamId, ctx.params)) }),
    }),
    defineRoute<C, unknown, ProjectParams>({
      method: 'POST',
      path: base,
      scope: `${r.scope}:write`,
      summary: `Create a ${r.noun}`,
      schema: { params: params({ project_id: 'project' }), body: r.createBody },
      handler: async (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        requireSource(s, project, ctx.body.source_id, { field: 'body.source_id' });
        return { status: 201, data: r.serialize(await r.service.create(project, ctx.body)) };
      },
    }),
    defineRoute<U, unknown, OneParams>({
      method: 'POST',
      path: one,
      scope: `${r.scope}:write`,
      summary: `Update a ${r.noun}; a run in flight finishes with the old configuration`,
      schema: { params: oneParams, body: r.updateBody },
      handler: async (ctx) => {
        if (Object.keys(ctx.body).length === 0)
          throw invalidField('body', `must contain at least one field to change: ${r.updateFields}`);
        return { data: r.serialize(await r.service.update(find(ctx.principal.teamId, ctx.params), ctx.body)) };
      },
    }),
    defineRoute<unknown, unknown, OneParams>({
      method: 'DELETE',
      path: one,
      scope: `${r.scope}:delete`,
      summary: `Delete a ${r.noun}; what it already wrote stays in the source`,
      schema: { params: oneParams },
      handler: async (ctx) => {
        await r.service.remove(find(ctx.principal.teamId, ctx.params));
        return { data: null };
      },
    }),
    action(
      'pause',
      `Pause a ${r.noun} (only an active one; pausing a paused one changes nothing)`,
      (x) => r.service.pause(x),
      true,
    ),
    action(
      'resume',
      `Resume a ${r.noun}: failure and missed-slot counts start again from zero`,
      (x) => r.service.resume(x),
      true,
    ),
    action(
      'test',
      `Fetch once and show the answer; nothing is written and no health field or schedule changes`,
      (x) => r.service.test(x),
      false,
    ),
  ];
}
