import { ApiError, notFound } from '../../errors.js';
import type { Services } from '../../services.js';
import type { UnprocessableEntry } from '../../schema/schema-store.js';
import { iso } from '../../clock.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { listQuerySchema, paginate, type ListQuery } from '../http/pagination.js';
import { params } from '../http/schemas.js';
import { requireCollection } from '../collections/routes.js';
import { requireProject } from '../projects/routes.js';

type CollectionParams = { project_id: string; collection_id: string };
type EntryParams = CollectionParams & { seq: string };

/**
 * Spool entries the pipeline set aside (docs/schema.md, "set aside"): listed so nothing is lost
 * from sight, and sent back through the pipeline once the cause is fixed. Not in the spec (which
 * has no such object); designed in docs/schema.md.
 */
function serialize(e: UnprocessableEntry, withBody = false) {
  return {
    object: 'unprocessable_entry',
    seq: e.seq,
    collection_id: e.collection_id,
    received_at: iso(e.received_at),
    records: e.records,
    format: e.format,
    body_bytes: e.body.byteLength,
    error: e.error,
    attempts: e.attempts,
    set_aside_at: e.set_aside_at,
    ...(withBody ? { body: Buffer.from(e.body.buffer, e.body.byteOffset, e.body.byteLength).toString('utf8') } : {}),
  };
}

const entryParams = {
  type: 'object',
  properties: {
    ...(params({ project_id: 'project', collection_id: 'collection' }).properties as Record<string, unknown>),
    seq: {
      type: 'string',
      pattern: '^[1-9][0-9]{0,15}$',
      errorHint: 'must be the sequence number of a set-aside entry',
    },
  },
  required: ['project_id', 'collection_id', 'seq'],
};

export function unprocessableRoutes(
  s: Pick<Services, 'collections' | 'projects' | 'schema' | 'sources' | 'spool'>,
): RouteDef[] {
  const base = '/v1/projects/:project_id/collections/:collection_id/unprocessable';
  const collectionOf = (teamId: string, p: CollectionParams) =>
    requireCollection(s, requireProject(s, teamId, p.project_id), p.collection_id);
  const entryOf = (collectionId: string, seq: string) => {
    const e = s.schema.unprocessable(collectionId).find((x) => x.seq === Number(seq));
    if (!e) throw notFound(`Set-aside entry ${seq} of collection ${collectionId}`);
    return e;
  };
  return [
    defineRoute<unknown, ListQuery, CollectionParams>({
      method: 'GET',
      path: base,
      scope: 'sources:read',
      summary: 'List spool entries the pipeline set aside for a collection',
      schema: { params: params({ project_id: 'project', collection_id: 'collection' }), query: listQuerySchema([]) },
      handler: (ctx) => {
        const c = collectionOf(ctx.principal.teamId, ctx.params);
        const page = paginate(s.schema.unprocessable(c.id), ctx.query, {
          fields: { seq: (e) => e.seq },
          defaultOrderBy: 'seq',
          defaultSort: 'asc',
        });
        return { data: page.data.map((e) => serialize(e)), pagination: page.pagination };
      },
    }),
    defineRoute<unknown, unknown, EntryParams>({
      method: 'GET',
      path: `${base}/:seq`,
      scope: 'sources:read',
      summary: 'Get a set-aside entry with its body as sent',
      schema: { params: entryParams },
      handler: (ctx) => {
        const c = collectionOf(ctx.principal.teamId, ctx.params);
        return { data: serialize(entryOf(c.id, ctx.params.seq), true) };
      },
    }),
    defineRoute<unknown, unknown, EntryParams>({
      method: 'POST',
      path: `${base}/:seq/retry`,
      scope: 'sources:write',
      summary: 'Send a set-aside entry through the pipeline again',
      schema: { params: entryParams },
      handler: async (ctx) => {
        const c = collectionOf(ctx.principal.teamId, ctx.params);
        const e = entryOf(c.id, ctx.params.seq);
        const seq = await s.schema.retryUnprocessable(e, s.spool).catch((err: unknown) => {
          throw err instanceof ApiError
            ? err
            : new ApiError('server_error', 'the entry could not be put back in the spool', { cause: err });
        });
        return { status: 202, data: { object: 'unprocessable_retry', seq: e.seq, spool_seq: seq, records: e.records } };
      },
    }),
  ];
}
