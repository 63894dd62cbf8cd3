import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ApiError } from '../../errors.js';
import type { FileReader, ViewRow } from '../../schema/file-reader.js';
import { outputRow } from '../../transform/output-row.js';
import type { OutputField, ViewFileManifest } from '../../transform/view-records.js';
import type { Pagination } from '../../http/envelope.js';
import type { ListQuery, Sort } from '../http/pagination.js';

/** Query of GET .../views/:view_id/records: standard pagination plus a time range. */
export type RecordsQuery = ListQuery & { start_at?: string; end_at?: string };

/** A records cursor: the sort it was issued under and the boundary row (time, seq, row, file). */
interface RecordCursor {
  s: Sort;
  t: number;
  q: number;
  r: number;
  /** manifest id (file path relative to the view's directory) */
  f: string;
}

/** Files read per DuckDB query while walking towards a full page. */
const FILES_PER_QUERY = 32;

function encode(c: RecordCursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function decode(raw: string, field: 'after' | 'before', sort: Sort): RecordCursor {
  const invalid = (why: string) =>
    new ApiError('request_invalid_cursor', `query.${field} ${why}`, {
      details: [{ field: `query.${field}`, message: why }],
    });
  let c: Partial<RecordCursor>;
  try {
    c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Partial<RecordCursor>;
  } catch {
    throw invalid('is not a cursor this API issued; pass pagination.next_cursor or prev_cursor unchanged');
  }
  if (
    typeof c !== 'object' ||
    c === null ||
    (c.s !== 'asc' && c.s !== 'desc') ||
    typeof c.f !== 'string' ||
    ![c.t, c.q, c.r].every((n) => typeof n === 'number' && Number.isFinite(n))
  ) {
    throw invalid('is not a cursor this API issued; pass pagination.next_cursor or prev_cursor unchanged');
  }
  if (c.s !== sort) throw invalid(`was issued for sort=${c.s}; repeat the request with that sort`);
  return c as RecordCursor;
}

/**
 * One page of a view's records, newest first by default, with keyset cursors over (event time,
 * spool sequence, row, file). Files are visited in the page's time order and the walk stops once no
 * remaining file can hold a row of the page. `missing`: manifest ids of visited files not on disk
 * (skipped).
 */
export async function listViewRecords(
  reader: FileReader,
  view: { dir: string; fields: readonly OutputField[]; files: readonly ViewFileManifest[] },
  q: RecordsQuery,
): Promise<{ data: Record<string, unknown>[]; pagination: Pagination; missing: string[] }> {
  if (q.after && q.before) {
    throw new ApiError('request_validation_failed', 'query.after and query.before are mutually exclusive; send one', {
      details: [{ field: 'query.before', message: 'cannot be combined with after' }],
    });
  }
  const startMs = q.start_at ? Date.parse(q.start_at) : undefined;
  const endMs = q.end_at ? Date.parse(q.end_at) : undefined;
  if (startMs !== undefined && endMs !== undefined && startMs >= endMs) {
    throw new ApiError('request_validation_failed', 'query.start_at must be before query.end_at', {
      details: [{ field: 'query.start_at', message: 'must be before end_at' }],
    });
  }
  const sort = q.sort ?? 'desc';
  const after = q.after ? decode(q.after, 'after', sort) : undefined;
  const before = q.before ? decode(q.before, 'before', sort) : undefined;
  // Paging backwards scans the other way, then puts the page back in order.
  const scanDesc = (sort === 'desc') !== (before !== undefined);
  const boundary = after ?? before;
  const files = view.files
    .filter((m) => (startMs === undefined || m.max_ts >= startMs) && (endMs === undefined || m.min_ts < endMs))
    .filter((m) => !boundary || (scanDesc ? m.min_ts <= boundary.t : m.max_ts >= boundary.t))
    .sort((a, b) => (scanDesc ? b.max_ts - a.max_ts : a.min_ts - b.min_ts));
  const want = q.limit + 1;
  const dirSign = scanDesc ? -1 : 1;
  const cmp = (x: ViewRow, y: ViewRow) =>
    dirSign * (x.ts - y.ts || x.seq - y.seq || x.row - y.row || (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
  let rows: ViewRow[] = [];
  const missing: string[] = [];
  for (let i = 0; i < files.length; i += FILES_PER_QUERY) {
    // A file its manifest names but the disk lost (removed by hand, a disk fault) is skipped and
    // reported, so the rest of the view stays readable.
    const chunk = files
      .slice(i, i + FILES_PER_QUERY)
      .filter((m) => existsSync(join(view.dir, m.id)) || (missing.push(m.id), false));
    if (chunk.length === 0) continue;
    if (rows.length >= want) {
      const worst = rows[want - 1]!.ts;
      const best = scanDesc ? chunk[0]!.max_ts : chunk[0]!.min_ts;
      if (scanDesc ? best < worst : best > worst) break;
    }
    const got = await reader.viewRows({
      paths: chunk.map((m) => join(view.dir, m.id)),
      ...(startMs !== undefined ? { startMs } : {}),
      ...(endMs !== undefined ? { endMs } : {}),
      limit: want,
      desc: scanDesc,
      ...(boundary
        ? { after: { ts: boundary.t, seq: boundary.q, row: boundary.r, path: join(view.dir, boundary.f) } }
        : {}),
    });
    rows = [...rows, ...got].sort(cmp).slice(0, want);
  }
  const more = rows.length > q.limit;
  let page = rows.slice(0, q.limit);
  if (before) page = page.reverse();
  const prefix = view.dir.length + 1;
  const cursor = (r: ViewRow) => encode({ s: sort, t: r.ts, q: r.seq, r: r.row, f: r.path.slice(prefix) });
  const hasNext = before ? true : more;
  const hasPrev = before ? more : after !== undefined;
  return {
    data: page.map((r) => outputRow(view.fields, r.values)),
    pagination: {
      next_cursor: hasNext && page.length > 0 ? cursor(page[page.length - 1]!) : null,
      prev_cursor: hasPrev && page.length > 0 ? cursor(page[0]!) : null,
      limit: q.limit,
    },
    missing,
  };
}
