import { collectionTotals } from '../../schema/storage-stats.js';
import { ApiError, invalidField, notFound } from '../../errors.js';
import type { CollectionRecord, ProjectRecord, SchemaSettings } from '../../catalog/records.js';
import { destroyCollection } from '../../catalog/purge.js';
import type { Services } from '../../services.js';
import { listRoute, namedResourceOrder } from '../http/list-route.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { assertRestoreFirst, scheduledDeletionRoutes } from '../http/scheduled-deletion.js';
import type { ListQuery } from '../http/pagination.js';
import { parseNullableDateFilter } from '../http/filters.js';
import { params } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';
import { requireSource } from '../sources/routes.js';
import {
  collectionCreateBody,
  collectionListFilters,
  collectionUpdateBody,
  schemaSettingsProperties,
  type CollectionUpdateBody,
} from './schemas.js';

type ProjectParams = { project_id: string };
type CollectionParams = { project_id: string; collection_id: string };
type CollectionListQuery = ListQuery & { source_id?: string; project_id?: string; deleted_at?: string };

const SETTING_KEYS = Object.keys(schemaSettingsProperties) as (keyof SchemaSettings)[];

/** The collection as the API shows it (spec: Collection, every field). */
export function serializeCollection(
  s: Pick<Services, 'collections' | 'projects' | 'schema' | 'sources' | 'views'>,
  c: CollectionRecord,
) {
  return {
    object: 'collection',
    id: c.id,
    source_id: c.source_id,
    project_id: c.project_id,
    source_name: s.sources.get(c.project_id, c.source_id)?.name ?? null,
    slug: c.slug,
    name: c.name,
    ...collectionTotals(s, c.id),
    // Live views reading the collection directly (views of those views read the view, not it).
    views_count: s.views.list(c.project_id).filter((v) => v.collection_id === c.id && v.deleted_at === null).length,
    // Drains do not exist yet: nothing exports a collection.
    drains_count: 0,
    schema_opaque_paths: c.schema_opaque_paths,
    schema_tracked_paths: c.schema_tracked_paths,
    schema_max_depth: c.schema_max_depth,
    schema_nulls: c.schema_nulls,
    schema_optional_keys: c.schema_optional_keys,
    schema_detector: c.schema_detector,
    schema_recurrence_gap_ms: c.schema_recurrence_gap_ms,
    schema_bulk_rows: c.schema_bulk_rows,
    schema_stale_after_ms: c.schema_stale_after_ms,
    schema_identity_limit: c.schema_identity_limit,
    schema_candidate_pool: c.schema_candidate_pool,
    schema_alias_pool: c.schema_alias_pool,
    schema_writer_limit: c.schema_writer_limit,
    schema_unclassified_retention_days: c.schema_unclassified_retention_days,
    deleted_at: c.deleted_at,
    created_at: c.created_at,
    updated_at: c.updated_at,
  };
}

/** A collection of `project`, or 404; a scheduled one answers 404 with a restore hint unless `allowScheduled`. */
export function requireCollection(
  s: Pick<Services, 'collections' | 'sources'>,
  project: ProjectRecord,
  id: string,
  opts: { allowScheduled?: boolean } = {},
): CollectionRecord {
  const c = s.collections.byId(id);
  if (!c || c.project_id !== project.id || c.team_id !== project.team_id || s.collections.destroying.has(c.id))
    throw notFound(`Collection ${id} in project ${project.id}`);
  if (!sourceIsLive(s, c)) {
    // Scheduling a source hides what is under it at once (spec), like a project's.
    throw new ApiError(
      'not_found',
      `Collection ${id} belongs to source ${c.source_id}, which is scheduled for deletion; restore the source with POST /v1/projects/${project.id}/sources/${c.source_id} {"deleted_at": null}`,
    );
  }
  if (c.deleted_at && !opts.allowScheduled) {
    throw new ApiError(
      'not_found',
      `Collection ${id} is scheduled for deletion; restore it with POST /v1/projects/${project.id}/collections/${id} {"deleted_at": null}`,
    );
  }
  return c;
}

/** Whether the collection's source exists and is not scheduled for deletion. */
function sourceIsLive(s: Pick<Services, 'sources'>, c: CollectionRecord): boolean {
  const source = s.sources.byId(c.source_id);
  return source !== undefined && !source.deleted_at;
}

/**
 * Tracked paths are children of opaque paths (spec: "children of opaque paths that stay part of
 * identity"): each must extend an opaque path by at least one segment.
 */
export function assertTrackedUnderOpaque(
  next: Pick<SchemaSettings, 'schema_opaque_paths' | 'schema_tracked_paths'>,
  body: Pick<CollectionUpdateBody, 'schema_tracked_paths'>,
): void {
  const under = (t: string[]) =>
    next.schema_opaque_paths.some((o) => t.length > o.length && o.every((seg, i) => seg === t[i]));
  next.schema_tracked_paths.forEach((t, i) => {
    if (under(t)) return;
    if (body.schema_tracked_paths !== undefined) {
      throw invalidField(
        `body.schema_tracked_paths[${i}]`,
        `(${JSON.stringify(t)}) must lie inside one of schema_opaque_paths`,
      );
    }
    throw invalidField(
      'body.schema_opaque_paths',
      `would leave tracked path ${JSON.stringify(t)} outside every opaque path; send schema_tracked_paths without it too`,
    );
  });
}

export function collectionRoutes(s: Services): RouteDef[] {
  const base = '/v1/projects/:project_id/collections';
  const one = `${base}/:collection_id`;
  const collectionParams = params({ project_id: 'project', collection_id: 'collection' });
  return [
    listRoute<CollectionRecord, CollectionListQuery, ProjectParams>({
      path: base,
      scope: 'sources:read',
      summary: 'List collections of a project',
      params: params({ project_id: 'project' }),
      filters: collectionListFilters,
      order: namedResourceOrder(),
      items: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const q = ctx.query;
        const deleted = parseNullableDateFilter('deleted_at', q.deleted_at);
        const pool =
          q.source_id !== undefined
            ? s.collections.list(q.source_id).filter((c) => c.project_id === project.id)
            : s.collections.listByProject(project.id);
        return pool.filter(
          (c) =>
            deleted(c.deleted_at) &&
            (q.project_id === undefined || q.project_id === c.project_id) &&
            sourceIsLive(s, c),
        );
      },
      serialize: (c) => serializeCollection(s, c),
    }),
    defineRoute<unknown, unknown, CollectionParams>({
      method: 'GET',
      path: one,
      scope: 'sources:read',
      summary: 'Get a collection',
      schema: { params: collectionParams },
      handler: (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        return {
          data: serializeCollection(
            s,
            requireCollection(s, project, ctx.params.collection_id, { allowScheduled: true }),
          ),
        };
      },
    }),
    defineRoute<{ name: string; slug?: string; source_id: string }, unknown, ProjectParams>({
      method: 'POST',
      path: base,
      scope: 'sources:write',
      summary: 'Create a collection in a source',
      schema: { params: params({ project_id: 'project' }), body: collectionCreateBody },
      handler: async (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const source = requireSource(s, project, ctx.body.source_id, { field: 'body.source_id' });
        const created = await s.collections.create(source, {
          name: ctx.body.name,
          ...(ctx.body.slug !== undefined ? { slug: ctx.body.slug } : {}),
        });
        return { status: 201, data: serializeCollection(s, created) };
      },
    }),
    defineRoute<CollectionUpdateBody, unknown, CollectionParams>({
      method: 'POST',
      path: one,
      scope: 'sources:write',
      summary: 'Update the name or schema rules of a collection, or restore it',
      schema: { params: collectionParams, body: collectionUpdateBody },
      handler: async (ctx) => {
        const b = ctx.body;
        // A no-op would still move updated_at (tripping other writers' expected_updated_at); say so instead.
        if (Object.keys(b).every((k) => k === 'expected_updated_at')) {
          throw invalidField(
            'body',
            'must contain at least one field to change: name, deleted_at or a schema_* rule (expected_updated_at alone changes nothing)',
          );
        }
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const current = requireCollection(s, project, ctx.params.collection_id, { allowScheduled: true });
        const updated = await s.collections.update(current.source_id, current.id, (cur) => {
          // Checked inside the transaction, so no change can slip in between check and write.
          if (b.expected_updated_at !== undefined && Date.parse(b.expected_updated_at) !== Date.parse(cur.updated_at)) {
            throw new ApiError(
              'conflict',
              `The collection changed since ${b.expected_updated_at} (updated_at is now ${cur.updated_at}); read it again and retry`,
              {
                details: [
                  { field: 'body.expected_updated_at', message: `does not match updated_at ${cur.updated_at}` },
                ],
              },
            );
          }
          assertRestoreFirst('collection', cur, b);
          const patch: Partial<CollectionRecord> = {};
          if (b.name !== undefined) patch.name = b.name;
          if (b.deleted_at === null) patch.deleted_at = null;
          for (const k of SETTING_KEYS) if (b[k] !== undefined) Object.assign(patch, { [k]: b[k] });
          assertTrackedUnderOpaque({ ...cur, ...patch }, b);
          return patch;
        });
        if (!updated) throw notFound(`Collection ${current.id}`);
        // New identity rules re-key now, so schema_count (here and in every read) is current.
        await s.schema.rulesChanged(updated);
        return { data: serializeCollection(s, updated) };
      },
    }),
    ...scheduledDeletionRoutes<CollectionRecord, CollectionParams>(s, {
      noun: 'collection',
      path: one,
      scope: 'sources:delete',
      params: collectionParams,
      beneath: 'its records, schema versions and files',
      find: (ctx) =>
        requireCollection(s, requireProject(s, ctx.principal.teamId, ctx.params.project_id), ctx.params.collection_id, {
          allowScheduled: true,
        }),
      markDeleted: (c, at) => s.collections.update(c.source_id, c.id, () => ({ deleted_at: at })),
      destroy: (c) => destroyCollection(s, c),
      serialize: (c) => serializeCollection(s, c),
    }),
  ];
}
