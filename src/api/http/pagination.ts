import { ApiError } from '../../errors.js';
import type { Pagination } from '../../http/envelope.js';
import type { JsonSchema } from './route.js';

export type Sort = 'asc' | 'desc';
type SortValue = string | number | null;

/** The standard list parameters after validation. */
export interface ListQuery {
  limit: number;
  after?: string;
  before?: string;
  sort?: Sort;
  order_by?: string;
}

/** How one endpoint orders its list: allowed `order_by` fields with their value getters, and defaults. */
export interface ListOrder<T> {
  fields: Record<string, (item: T) => SortValue>;
  defaultOrderBy: string;
  defaultSort: Sort;
  /** The projects rule: the sort when neither `sort` nor `order_by` is given. */
  sortWhenNeither?: Sort;
}

/**
 * JSON Schema for the standard list parameters plus an endpoint's own filters. `after`/`before`
 * exclusivity is checked by `paginate` so the message can say exactly that.
 */
export function listQuerySchema(orderBy: string[], filters: Record<string, JsonSchema> = {}): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: 200, default: 25 },
      after: { type: 'string', minLength: 1, maxLength: 512 },
      before: { type: 'string', minLength: 1, maxLength: 512 },
      sort: { enum: ['asc', 'desc'] },
      ...(orderBy.length ? { order_by: { enum: orderBy } } : {}),
      ...filters,
    },
  };
}

interface CursorBody {
  /** order_by the cursor was made under */
  o: string;
  s: Sort;
  /** sort value and id of the boundary item */
  v: SortValue;
  i: string;
}

function encodeCursor(c: CursorBody): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function decodeCursor(raw: string, field: 'after' | 'before'): CursorBody {
  const invalid = () =>
    new ApiError(
      'request_invalid_cursor',
      `query.${field} is not a cursor this API issued; pass pagination.next_cursor or prev_cursor unchanged`,
      { details: [{ field: `query.${field}`, message: 'is not a valid cursor' }] },
    );
  if (!/^[A-Za-z0-9_-]+$/.test(raw)) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const c = parsed as Partial<CursorBody>;
  const okValue = c.v === null || typeof c.v === 'string' || typeof c.v === 'number';
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    typeof c.o !== 'string' ||
    (c.s !== 'asc' && c.s !== 'desc') ||
    !okValue ||
    typeof c.i !== 'string'
  )
    throw invalid();
  return c as CursorBody;
}

function compareValues(a: SortValue, b: SortValue): number {
  if (a === b) return 0;
  if (a === null) return -1; // nulls first in ascending order
  if (b === null) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const sa = String(a);
  const sb = String(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/**
 * Keyset pagination over (sort value, id). A cursor names the boundary item's position rather than
 * an offset, so pages stay correct when items are inserted or deleted between requests.
 */
export function paginate<T extends { id: string }>(
  items: T[],
  query: ListQuery,
  order: ListOrder<T>,
): { data: T[]; pagination: Pagination } {
  if (query.after && query.before) {
    throw new ApiError('request_validation_failed', 'query.after and query.before are mutually exclusive; send one', {
      details: [{ field: 'query.before', message: 'cannot be combined with after' }],
    });
  }
  const orderBy = query.order_by ?? order.defaultOrderBy;
  const sort: Sort =
    query.sort ?? (query.order_by === undefined && order.sortWhenNeither ? order.sortWhenNeither : order.defaultSort);
  const get = order.fields[orderBy];
  if (!get) throw new Error(`order_by ${orderBy} has no getter`);
  const dir = sort === 'asc' ? 1 : -1;
  const cmp = (av: SortValue, aid: string, bv: SortValue, bid: string) =>
    dir * (compareValues(av, bv) || (aid < bid ? -1 : aid > bid ? 1 : 0));

  const rows = items.map((item) => ({ item, v: get(item) }));
  rows.sort((a, b) => cmp(a.v, a.item.id, b.v, b.item.id));

  const limit = query.limit;
  let start = 0;
  let end = rows.length;
  const raw = query.after ?? query.before;
  if (raw) {
    const field = query.after ? 'after' : 'before';
    const c = decodeCursor(raw, field);
    if (c.o !== orderBy || c.s !== sort) {
      throw new ApiError(
        'request_invalid_cursor',
        `query.${field} was issued for order_by=${c.o} sort=${c.s}; repeat the request with those values`,
        {
          details: [{ field: `query.${field}`, message: `was issued for order_by=${c.o} sort=${c.s}` }],
        },
      );
    }
    // First row strictly after the boundary (binary search over the sorted rows).
    let lo = 0;
    let hi = rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const r = rows[mid]!;
      if (cmp(r.v, r.item.id, c.v, c.i) <= 0) lo = mid + 1;
      else hi = mid;
    }
    if (query.after) {
      start = lo;
      end = Math.min(rows.length, start + limit);
    } else {
      // Rows strictly before the boundary: those before the first row >= boundary.
      const boundaryIncluded = lo > 0 && cmp(rows[lo - 1]!.v, rows[lo - 1]!.item.id, c.v, c.i) === 0;
      end = boundaryIncluded ? lo - 1 : lo;
      start = Math.max(0, end - limit);
    }
  } else {
    end = Math.min(rows.length, limit);
  }

  const page = rows.slice(start, end);
  const cursorOf = (r: { item: T; v: SortValue }) => encodeCursor({ o: orderBy, s: sort, v: r.v, i: r.item.id });
  return {
    data: page.map((r) => r.item),
    pagination: {
      next_cursor: end < rows.length && page.length > 0 ? cursorOf(page[page.length - 1]!) : null,
      prev_cursor: start > 0 && page.length > 0 ? cursorOf(page[0]!) : null,
      limit,
    },
  };
}
