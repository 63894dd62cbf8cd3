import { join } from 'node:path';
import { ApiError, notFound } from '../../errors.js';
import { idSchema } from '../../ids.js';
import type { CollectionRecord } from '../../catalog/records.js';
import type { Services } from '../../services.js';
import { rulesOf } from '../../schema/rules.js';
import type { SchemaVersionRecord } from '../../schema/versions.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { listQuerySchema, paginate, type ListQuery } from '../http/pagination.js';
import { integer, isoDateString, object, params } from '../http/schemas.js';
import { pathList } from '../collections/schemas.js';
import { assertTrackedUnderOpaque, requireCollection } from '../collections/routes.js';
import { requireProject } from '../projects/routes.js';
import { listDocs, type DocsQuery } from './docs.js';

type CollectionParams = { project_id: string; collection_id: string };
type VersionParams = CollectionParams & { schema_version_id: string };

const collectionParams = params({ project_id: 'project', collection_id: 'collection' });

/** A schema version as the API shows it (documented in docs/schema.md). */
export function serializeSchemaVersion(v: SchemaVersionRecord) {
  return {
    object: 'collection_schema_version',
    id: v.id,
    collection_id: v.collection_id,
    project_id: v.project_id,
    version: v.version,
    state: v.state,
    signature_hash: v.signature_hash,
    signature: v.signature,
    fields: v.fields,
    row_count: v.row_count,
    shape_count: v.shape_count,
    first_seen_at: v.first_seen_at,
    last_seen_at: v.last_seen_at,
    settled_at: v.settled_at,
    settled_by: v.settled_by,
    stale_at: v.stale_at,
    created_at: v.created_at,
    updated_at: v.updated_at,
  };
}

function collectionOf(
  s: Pick<Services, 'collections' | 'projects' | 'sources'>,
  teamId: string,
  p: CollectionParams,
): CollectionRecord {
  const project = requireProject(s, teamId, p.project_id);
  return requireCollection(s, project, p.collection_id);
}

const settleBody = object(
  { state: { enum: ['settled'], errorHint: 'must be "settled" (the only state a version can be moved to by hand)' } },
  ['state'],
);
const previewBody = object({
  schema_opaque_paths: pathList,
  schema_tracked_paths: pathList,
  schema_max_depth: integer(1, 10),
});

export function schemaRoutes(
  s: Pick<Services, 'collections' | 'projects' | 'schema' | 'sources' | 'viewGeneration'>,
): RouteDef[] {
  const base = '/v1/projects/:project_id/collections/:collection_id';
  return [
    defineRoute<unknown, ListQuery & { state?: SchemaVersionRecord['state'] }, CollectionParams>({
      method: 'GET',
      path: `${base}/schemas`,
      scope: 'sources:read',
      summary: "List a collection's schema versions",
      schema: {
        params: collectionParams,
        query: listQuerySchema([], {
          state: { enum: ['candidate', 'settled', 'stale'], errorHint: 'must be candidate, settled or stale' },
        }),
      },
      handler: async (ctx) => {
        const c = collectionOf(s, ctx.principal.teamId, ctx.params);
        const versions = (await s.schema.listVersions(c)).filter(
          (v) => !ctx.query.state || v.state === ctx.query.state,
        );
        const page = paginate(versions, ctx.query, {
          fields: { version: (v) => v.version },
          defaultOrderBy: 'version',
          defaultSort: 'desc',
        });
        return { data: page.data.map(serializeSchemaVersion), pagination: page.pagination };
      },
    }),
    defineRoute<{ state: 'settled' }, unknown, VersionParams>({
      method: 'POST',
      path: `${base}/schemas/:schema_version_id`,
      scope: 'sources:write',
      summary: 'Settle a schema version by hand',
      schema: {
        params: params({ project_id: 'project', collection_id: 'collection', schema_version_id: 'schemaVersion' }),
        body: settleBody,
      },
      handler: async (ctx) => {
        const c = collectionOf(s, ctx.principal.teamId, ctx.params);
        const settled = await s.schema.settle(c, ctx.params.schema_version_id);
        // Auto views may be waiting for this version to settle.
        s.viewGeneration?.kick();
        return { data: serializeSchemaVersion(settled) };
      },
    }),
    defineRoute<unknown, unknown, CollectionParams>({
      method: 'GET',
      path: `${base}/schema_report`,
      scope: 'sources:read',
      summary: "Report on a collection's shapes under its current rules",
      schema: { params: collectionParams },
      handler: async (ctx) => ({ data: await s.schema.report(collectionOf(s, ctx.principal.teamId, ctx.params)) }),
    }),
    defineRoute<
      { schema_opaque_paths?: string[][]; schema_tracked_paths?: string[][]; schema_max_depth?: number },
      unknown,
      CollectionParams
    >({
      method: 'POST',
      path: `${base}/schema_preview`,
      scope: 'sources:write',
      summary: 'Preview the effect of other identity rules; nothing is changed',
      schema: { params: collectionParams, body: previewBody },
      handler: async (ctx) => {
        const c = collectionOf(s, ctx.principal.teamId, ctx.params);
        const current = rulesOf(c);
        const b = ctx.body;
        const rules = {
          opaquePaths: b.schema_opaque_paths ?? current.opaquePaths,
          trackedPaths: b.schema_tracked_paths ?? current.trackedPaths,
          maxDepth: b.schema_max_depth ?? current.maxDepth,
        };
        // The same rule the update enforces: a preview describes an update that could be applied.
        assertTrackedUnderOpaque(
          { schema_opaque_paths: rules.opaquePaths, schema_tracked_paths: rules.trackedPaths },
          b,
        );
        return { data: await s.schema.report(c, rules) };
      },
    }),
    defineRoute<unknown, DocsQuery, CollectionParams>({
      method: 'GET',
      path: `${base}/docs`,
      scope: 'sources:read',
      summary: "List a collection's documents as sent, newest first",
      schema: {
        params: collectionParams,
        query: listQuerySchema([], {
          schema_version_id: idSchema('schemaVersion'),
          start_at: isoDateString,
          end_at: isoDateString,
        }),
      },
      handler: async (ctx) => {
        const c = collectionOf(s, ctx.principal.teamId, ctx.params);
        const q = ctx.query;
        let versionIds: string[] | undefined;
        let shapeHashes: string[] | undefined;
        if (q.schema_version_id) {
          const book = await s.schema.book(c);
          const v = book.current(q.schema_version_id);
          if (!v) throw notFound(`Schema version ${q.schema_version_id} in collection ${c.id}`);
          // The version plus every version a re-key merged into it.
          versionIds = [...book.versions.values()].filter((x) => book.current(x.id)?.id === v.id).map((x) => x.id);
          const ids = new Set(versionIds);
          // Linked shapes under their current hash and the hashes they had before a re-key (their
          // earlier `_unclassified` files carry those).
          shapeHashes = [...book.shapes.values()]
            .filter((sh) => sh.version_id !== null && ids.has(sh.version_id))
            .flatMap((sh) => [sh.id, ...(sh.former_ids ?? [])]);
        }
        const startMs = q.start_at ? Date.parse(q.start_at) : undefined;
        const endMs = q.end_at ? Date.parse(q.end_at) : undefined;
        if (startMs !== undefined && endMs !== undefined && startMs >= endMs) {
          throw new ApiError('request_validation_failed', 'query.start_at must be before query.end_at', {
            details: [{ field: 'query.start_at', message: 'must be before end_at' }],
          });
        }
        const dir = s.schema.filesDir(c);
        const files = s.schema
          .manifests(c.id)
          .filter((m) => (startMs === undefined || m.max_ts >= startMs) && (endMs === undefined || m.min_ts < endMs))
          .filter(
            (m) =>
              !versionIds ||
              m.kind === 'mixed' ||
              (m.version_id !== null && versionIds.includes(m.version_id)) ||
              (m.shape_hash !== null && shapeHashes!.includes(m.shape_hash)),
          )
          .map((m) => ({ path: join(dir, m.id), minTs: m.min_ts, maxTs: m.max_ts }));
        return listDocs(await s.schema.fileReader(), { files, versionIds, shapeHashes, startMs, endMs }, q);
      },
    }),
  ];
}
