import { notFound } from '../../errors.js';
import { idSchema } from '../../ids.js';
import { maskedIngestKey } from '../../catalog/ingest-keys.js';
import { INGEST_KEY_STATUSES, type IngestKeyRecord, type SourceRecord } from '../../catalog/records.js';
import type { Services } from '../../services.js';
import { listRoute } from '../http/list-route.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import type { ListQuery } from '../http/pagination.js';
import { filterParamSchema, parseFilter } from '../http/filters.js';
import { object, params } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';
import { requireSource } from '../sources/routes.js';

type SourceParams = { project_id: string; source_id: string };
type KeyParams = SourceParams & { ingest_key_id: string };
type KeyListQuery = ListQuery & { status?: string; project_id?: string; source_id?: string };

const createBody = object({
  source_id: { type: 'string', errorHint: 'is ignored (the path names the source) but must be a string' },
});

/** The ingest address for a secret (docs/architecture.md, "Fixed contracts": `<public base>/ingest?key=<secret>`). */
export function ingestUrl(s: Pick<Services, 'config'>, secret: string): string {
  return `${s.config.publicUrl}/ingest?key=${secret}`;
}

/**
 * The ingest key as the API shows it (spec: Ingest key). `secret` is given only in the creation
 * response; afterwards `key` and `url` carry the masked key (`pik_…` + last four characters).
 */
export function serializeIngestKey(
  s: Pick<Services, 'activity' | 'config'>,
  key: IngestKeyRecord,
  source: SourceRecord | undefined,
  secret?: string,
) {
  const shown = secret ?? maskedIngestKey(key);
  return {
    object: 'ingest_key',
    id: key.id,
    source_id: key.source_id,
    source_name: source?.name ?? null,
    url: ingestUrl(s, shown),
    // Verified custom ingest domains add entries here once domains exist.
    custom_urls: [] as string[],
    key: shown,
    status: key.status,
    created_at: key.created_at,
    last_used_at: s.activity.lastActivityAt(key.id),
  };
}

export function ingestKeyRoutes(
  s: Pick<Services, 'activity' | 'config' | 'ingestKeys' | 'projects' | 'sources'>,
): RouteDef[] {
  const base = '/v1/projects/:project_id/sources/:source_id/ingest_keys';
  const one = `${base}/:ingest_key_id`;
  const sourceParams = params({ project_id: 'project', source_id: 'source' });
  const keyParams = params({ project_id: 'project', source_id: 'source', ingest_key_id: 'ingestKey' });
  // The source must be live and belong to the caller's team (another team's answers 404).
  const liveSource = (teamId: string, p: SourceParams) =>
    requireSource(s, requireProject(s, teamId, p.project_id), p.source_id);
  const requireKey = (source: SourceRecord, id: string) => {
    const key = s.ingestKeys.get(source.id, id);
    if (!key) throw notFound(`Ingest key ${id} of source ${source.id}`);
    return key;
  };
  return [
    listRoute<IngestKeyRecord, KeyListQuery, SourceParams>({
      path: base,
      scope: 'ingest_keys:read',
      summary: 'List the ingest keys of a source',
      params: sourceParams,
      filters: { status: filterParamSchema, project_id: idSchema('project'), source_id: idSchema('source') },
      order: {
        fields: { created_at: (k) => k.created_at, status: (k) => k.status },
        defaultOrderBy: 'created_at',
        defaultSort: 'desc',
      },
      serialize: (k) => serializeIngestKey(s, k, s.sources.get(k.project_id, k.source_id)),
      items: (ctx) => {
        const source = liveSource(ctx.principal.teamId, ctx.params);
        const q = ctx.query;
        const status =
          q.status === undefined ? () => true : parseFilter('status', q.status, 'enum', INGEST_KEY_STATUSES);
        // project_id and source_id repeat the path; a different value matches nothing.
        return s.ingestKeys
          .list(source.id)
          .filter(
            (k) =>
              status(k.status) &&
              (q.project_id === undefined || q.project_id === k.project_id) &&
              (q.source_id === undefined || q.source_id === k.source_id),
          );
      },
    }),
    defineRoute<unknown, unknown, KeyParams>({
      method: 'GET',
      path: one,
      scope: 'ingest_keys:read',
      summary: 'Get an ingest key (the key itself is masked)',
      schema: { params: keyParams },
      handler: (ctx) => {
        const source = liveSource(ctx.principal.teamId, ctx.params);
        return { data: serializeIngestKey(s, requireKey(source, ctx.params.ingest_key_id), source) };
      },
    }),
    defineRoute<unknown, unknown, SourceParams>({
      method: 'POST',
      path: base,
      scope: 'ingest_keys:write',
      summary: 'Create an ingest key; the full key and url are returned only in this response',
      schema: { params: sourceParams, body: createBody },
      handler: async (ctx) => {
        const source = liveSource(ctx.principal.teamId, ctx.params);
        const { key, secret } = await s.ingestKeys.create(source);
        return { status: 201, data: serializeIngestKey(s, key, source, secret) };
      },
    }),
    defineRoute<unknown, unknown, KeyParams>({
      method: 'DELETE',
      path: one,
      scope: 'ingest_keys:delete',
      summary: 'Delete an ingest key; ingest with it stops at once',
      schema: { params: keyParams },
      handler: async (ctx) => {
        const source = liveSource(ctx.principal.teamId, ctx.params);
        const key = requireKey(source, ctx.params.ingest_key_id);
        await s.ingestKeys.destroy(key);
        await s.activity.forget(key.id);
        return { data: null };
      },
    }),
  ];
}
