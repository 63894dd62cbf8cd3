import { ApiError, invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import type { MappingPolicyInput, ViewChange } from '../../transform/view-catalog.js';
import type { OutputField, TransformMode, ViewJoinClause, ViewRecord } from '../../transform/view-records.js';
import { listRoute } from '../http/list-route.js';
import type { ListOrder, ListQuery } from '../http/pagination.js';
import { listQuerySchema } from '../http/pagination.js';
import { parseNullableDateFilter } from '../http/filters.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { scheduledDeletionRoutes } from '../http/scheduled-deletion.js';
import { params } from '../http/schemas.js';
import { requireCollection } from '../collections/routes.js';
import { requireProject } from '../projects/routes.js';
import { assertAliasFree, assertKeyField, assertOutputSchema, assertScript, requireView } from './checks.js';
import { listViewRecords, type RecordsQuery } from './records.js';
import { recordsQueryFilters, viewCreateBody, viewJoinBody, viewListFilters, viewUpdateBody } from './schemas.js';
import { serializeView } from './serialize.js';
import { viewTransformRoutes } from './transform-routes.js';

type ProjectParams = { project_id: string };
type ViewParams = { project_id: string; view_id: string };
type ViewListQuery = ListQuery & {
  project_id?: string;
  collection_id?: string;
  parent_view_id?: string;
  deleted_at?: string;
};

interface CreateBody {
  name: string;
  output_schema?: OutputField[];
  hint?: string | null;
  mapping_policy?: MappingPolicyInput;
  project_id?: string;
  collection_id?: string;
  parent_view_id?: string;
  transform_script?: string;
  transform_mode?: TransformMode;
}

interface JoinBody {
  name: string;
  project_id?: string;
  base_view_id: string;
  joins: Array<
    Partial<ViewJoinClause> & Pick<ViewJoinClause, 'lookup_view_id' | 'alias' | 'base_field' | 'lookup_field'>
  >;
  output_schema?: OutputField[];
  transform_script?: string;
  hint?: string | null;
}

/** Spec: views list `order_by` created_at (default), name, updated_at; `sort` default asc. */
const viewOrder: ListOrder<ViewRecord> = {
  fields: { created_at: (v) => v.created_at, name: (v) => v.name.toLowerCase(), updated_at: (v) => v.updated_at },
  defaultOrderBy: 'created_at',
  defaultSort: 'asc',
};

/** `project_id` in a body is optional and, when sent, must name the project of the path. */
function assertBodyProject(bodyProject: string | undefined, projectId: string): void {
  if (bodyProject !== undefined && bodyProject !== projectId)
    throw invalidField('body.project_id', `must be ${projectId} (the project in the path) or be omitted`);
}

export function viewRoutes(s: Services): RouteDef[] {
  const base = '/v1/projects/:project_id/views';
  const one = `${base}/:view_id`;
  const viewParams = params({ project_id: 'project', view_id: 'view' });
  return [
    listRoute<ViewRecord, ViewListQuery, ProjectParams>({
      path: base,
      scope: 'views:read',
      summary: 'List views of a project',
      params: params({ project_id: 'project' }),
      filters: viewListFilters,
      order: viewOrder,
      items: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const q = ctx.query;
        const deleted = parseNullableDateFilter('deleted_at', q.deleted_at);
        return s.views
          .list(project.id)
          .filter((v) => deleted(v.deleted_at))
          .filter(
            (v) =>
              (q.project_id === undefined || v.project_id === q.project_id) &&
              (q.collection_id === undefined || v.collection_id === q.collection_id) &&
              (q.parent_view_id === undefined || v.parent_view_id === q.parent_view_id),
          );
      },
      serialize: (v) => serializeView(s, v),
    }),
    defineRoute<unknown, unknown, ViewParams>({
      method: 'GET',
      path: one,
      scope: 'views:read',
      summary: 'Get a view',
      schema: { params: viewParams },
      handler: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        return { data: serializeView(s, requireView(s, project, ctx.params.view_id, { allowScheduled: true })) };
      },
    }),
    defineRoute<CreateBody, unknown, ProjectParams>({
      method: 'POST',
      path: base,
      scope: 'views:write',
      summary: 'Create a view of a collection or of another view, with its first transform',
      schema: { params: params({ project_id: 'project' }), body: viewCreateBody },
      handler: async (ctx) => {
        const b = ctx.body;
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        assertBodyProject(b.project_id, project.id);
        if ((b.collection_id === undefined) === (b.parent_view_id === undefined)) {
          const both = b.collection_id !== undefined;
          const message = both
            ? 'cannot be combined with parent_view_id: a view reads one collection or one view'
            : 'or parent_view_id is required: exactly one says what the view reads';
          throw new ApiError('request_validation_failed', `body.collection_id ${message}`, {
            details: [
              { field: 'body.collection_id', message },
              {
                field: 'body.parent_view_id',
                message: both ? 'cannot be combined with collection_id' : 'or collection_id is required',
              },
            ],
          });
        }
        assertScript(b.transform_script);
        assertOutputSchema(b.output_schema);
        const reads =
          b.collection_id !== undefined
            ? { collection: requireCollection(s, project, b.collection_id) }
            : { parent: requireView(s, project, b.parent_view_id!, { field: 'body.parent_view_id' }) };
        const view = await s.views.create(project, {
          name: b.name,
          reads,
          ...(b.output_schema !== undefined ? { output_schema: b.output_schema } : {}),
          ...(b.hint !== undefined ? { hint: b.hint } : {}),
          ...(b.mapping_policy !== undefined ? { mapping_policy: b.mapping_policy } : {}),
          ...(b.transform_script !== undefined ? { transform_script: b.transform_script } : {}),
          ...(b.transform_mode !== undefined ? { transform_mode: b.transform_mode } : {}),
        });
        return { status: 201, data: serializeView(s, view) };
      },
    }),
    defineRoute<JoinBody, unknown, ProjectParams>({
      method: 'POST',
      path: `${base}/join`,
      scope: 'views:write',
      summary: 'Create a join view: a base view enriched with the latest record of lookup views',
      schema: { params: params({ project_id: 'project' }), body: viewJoinBody },
      handler: async (ctx) => {
        const b = ctx.body;
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        assertBodyProject(b.project_id, project.id);
        assertScript(b.transform_script);
        assertOutputSchema(b.output_schema);
        const baseView = requireView(s, project, b.base_view_id, { field: 'body.base_view_id' });
        const seen = new Map<string, number>();
        const joins: ViewJoinClause[] = b.joins.map((j, i) => {
          const at = `body.joins[${i}]`;
          const first = seen.get(j.alias);
          if (first !== undefined)
            throw invalidField(
              `${at}.alias`,
              `"${j.alias}" is already used by joins[${first}]; aliases must be unique`,
            );
          seen.set(j.alias, i);
          assertAliasFree(baseView, j.alias, `${at}.alias`);
          const lookup = requireView(s, project, j.lookup_view_id, { field: `${at}.lookup_view_id` });
          assertKeyField(baseView, j.base_field, `${at}.base_field`, 'base');
          assertKeyField(lookup, j.lookup_field, `${at}.lookup_field`, 'lookup');
          return {
            alias: j.alias,
            lookup_view_id: lookup.id,
            join_type: j.join_type ?? 'left',
            base_field: j.base_field,
            lookup_field: j.lookup_field,
            match_strategy: 'latest',
            priority: j.priority ?? 0,
          };
        });
        const view = await s.views.createJoin(project, {
          name: b.name,
          base: baseView,
          joins,
          ...(b.output_schema !== undefined ? { output_schema: b.output_schema } : {}),
          ...(b.hint !== undefined ? { hint: b.hint } : {}),
          ...(b.transform_script !== undefined ? { transform_script: b.transform_script } : {}),
        });
        return { status: 201, data: serializeView(s, view) };
      },
    }),
    defineRoute<ViewChange, unknown, ViewParams>({
      method: 'POST',
      path: one,
      scope: 'views:write',
      summary: 'Update a view, or restore it',
      schema: { params: viewParams, body: viewUpdateBody },
      handler: async (ctx) => {
        const b = ctx.body;
        if (Object.keys(b).length === 0) {
          throw invalidField(
            'body',
            'must contain at least one field to change: name, hint, output_schema, mapping_policy, transform_mode, view_transform_id or deleted_at',
          );
        }
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const current = requireView(s, project, ctx.params.view_id, { allowScheduled: true });
        assertOutputSchema(b.output_schema);
        return { data: serializeView(s, await s.views.update(project.id, current.id, b)) };
      },
    }),
    ...scheduledDeletionRoutes<ViewRecord, ViewParams>(s, {
      noun: 'view',
      path: one,
      scope: 'views:delete',
      params: viewParams,
      beneath: 'its transforms, versions, waiting shapes and files (and views scheduled for deletion reading it)',
      find: (ctx) =>
        requireView(s, requireProject(s, ctx.principal.teamId, ctx.params.project_id), ctx.params.view_id, {
          allowScheduled: true,
        }),
      markDeleted: (v) => s.views.scheduleDelete(v),
      destroy: (v) => s.views.destroy(v),
      serialize: (v) => serializeView(s, v),
    }),
    defineRoute<unknown, RecordsQuery, ViewParams>({
      method: 'GET',
      path: `${one}/records`,
      scope: 'views:read',
      summary: "List a view's records, newest first",
      schema: { params: viewParams, query: listQuerySchema([], recordsQueryFilters) },
      handler: async (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const view = requireView(s, project, ctx.params.view_id);
        const page = await listViewRecords(
          await s.schema.fileReader(),
          { dir: s.views.viewDir(view), fields: view.output_schema, files: s.views.store.filesOf(view.id) },
          ctx.query,
        );
        if (page.missing.length === 0) return { data: page.data, pagination: page.pagination };
        s.log.warn(
          { view_id: view.id, files: page.missing },
          'view output files named by manifests are missing on disk; records listed without them',
        );
        const message = `OK; ${page.missing.length} output file${page.missing.length === 1 ? '' : 's'} of view ${view.id} missing on disk ${page.missing.length === 1 ? 'was' : 'were'} skipped (${page.missing.join(', ')}): their records are not listed`;
        return { data: page.data, pagination: page.pagination, message };
      },
    }),
    ...viewTransformRoutes(s),
  ];
}
