import type { ScopeRequirement } from '../../auth/scopes.js';
import { defineRoute, type JsonSchema, type RequestContext, type RouteDef } from './route.js';
import { listQuerySchema, paginate, type ListOrder, type ListQuery } from './pagination.js';

/**
 * A list endpoint, declared once: the standard parameters plus the endpoint's filters, `order_by`
 * limited to the fields `order` can sort by, keyset pagination, and each item serialised.
 */
export interface ListRoute<T extends { id: string }, Q extends ListQuery, P> {
  path: string;
  scope: ScopeRequirement | 'authenticated';
  summary: string;
  params?: JsonSchema;
  /** Query parameters beyond the standard ones. */
  filters?: Record<string, JsonSchema>;
  order: ListOrder<T>;
  /** Route flags passed through (who may list: sessions in no team, teams scheduled for deletion). */
  access?: Pick<RouteDef, 'allowNoTeam' | 'allowWhenTeamDeleted'>;
  /** Every item the caller may see that matches the filters (pagination happens here). */
  items(ctx: RequestContext<unknown, Q, P>): T[];
  serialize(item: T): unknown;
}

export function listRoute<T extends { id: string }, Q extends ListQuery = ListQuery, P = Record<string, string>>(
  def: ListRoute<T, Q, P>,
): RouteDef {
  return defineRoute<unknown, Q, P>({
    method: 'GET',
    path: def.path,
    scope: def.scope,
    summary: def.summary,
    ...def.access,
    schema: {
      ...(def.params ? { params: def.params } : {}),
      query: listQuerySchema(Object.keys(def.order.fields), def.filters),
    },
    handler: (ctx) => {
      const page = paginate(def.items(ctx), ctx.query, def.order);
      return { data: page.data.map((item) => def.serialize(item)), pagination: page.pagination };
    },
  });
}

/** The order of sources and collections: `created_at`, `name` (case-insensitive), `updated_at`; default name ascending. */
export function namedResourceOrder<
  T extends { id: string; name: string; created_at: string; updated_at: string },
>(): ListOrder<T> {
  return {
    fields: { created_at: (x) => x.created_at, name: (x) => x.name.toLowerCase(), updated_at: (x) => x.updated_at },
    defaultOrderBy: 'name',
    defaultSort: 'asc',
  };
}
