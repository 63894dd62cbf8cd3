import { ApiError } from '../../errors.js';
import type { FileReader } from '../../schema/file-reader.js';
import type { Pagination } from '../../http/envelope.js';
import { RawJson } from '../http/raw-json.js';
import type { ListQuery } from '../http/pagination.js';

/** Query of GET .../docs: standard pagination plus version and time-range filters. */
export type DocsQuery = ListQuery & { schema_version_id?: string; start_at?: string; end_at?: string };

interface DocCursor {
  /** sort the cursor was issued under */
  s: 'asc' | 'desc';
  t: number;
  q: number;
  r: number;
}

/** Documents nested deeper than this are returned as their JSON text (the envelope could not nest them). */
export const MAX_RENDERED_DEPTH = 512;

function encode(c: DocCursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function decode(raw: string, field: 'after' | 'before', sort: 'asc' | 'desc'): DocCursor {
  const invalid = (why: string) =>
    new ApiError('request_invalid_cursor', `query.${field} ${why}`, {
      details: [{ field: `query.${field}`, message: why }],
    });
  let c: Partial<DocCursor>;
  try {
    c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Partial<DocCursor>;
  } catch {
    throw invalid('is not a cursor this API issued; pass pagination.next_cursor or prev_cursor unchanged');
  }
  if (
    typeof c !== 'object' ||
    c === null ||
    (c.s !== 'asc' && c.s !== 'desc') ||
    ![c.t, c.q, c.r].every((n) => typeof n === 'number' && Number.isFinite(n))
  ) {
    throw invalid('is not a cursor this API issued; pass pagination.next_cursor or prev_cursor unchanged');
  }
  if (c.s !== sort) throw invalid(`was issued for sort=${c.s}; repeat the request with that sort`);
  return c as DocCursor;
}

/** Max nesting depth of a JSON text (a byte scan; strings skipped). */
function depthOf(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) max = depth;
    } else if (c === 125 || c === 93) depth--;
  }
  return max;
}

/**
 * A stored document's JSON text in the response: the record exactly as sent (its bytes, never
 * parsed and re-serialized, so `1e400`, 30-digit integers and key order survive). Text that is not
 * valid JSON (a record the front should have refused) or nested too deep becomes a JSON string.
 */
function render(doc: string): string {
  if (doc.length > MAX_RENDERED_DEPTH * 2 && depthOf(doc) > MAX_RENDERED_DEPTH) return JSON.stringify(doc);
  try {
    // Validation only: the parsed value is dropped, the text is what is returned.
    JSON.parse(doc);
    return doc;
  } catch {
    return JSON.stringify(doc);
  }
}

/** A file the docs query may read, with its event-time range (from its manifest). */
export interface DocFile {
  path: string;
  minTs: number;
  maxTs: number;
}

/** Files read per DuckDB query while walking towards a full page. */
const FILES_PER_QUERY = 32;

/**
 * One page of documents, newest first by default, with keyset cursors over (event time, seq, row).
 * Files are visited in the page's time order and the walk stops as soon as no remaining file can
 * hold a row that belongs on the page, so a page costs the few newest files, not the collection.
 */
export async function listDocs(
  reader: FileReader,
  filter: {
    files: DocFile[];
    versionIds?: string[] | undefined;
    shapeHashes?: string[] | undefined;
    startMs?: number | undefined;
    endMs?: number | undefined;
  },
  q: DocsQuery,
): Promise<{ data: RawJson; pagination: Pagination }> {
  if (q.after && q.before) {
    throw new ApiError('request_validation_failed', 'query.after and query.before are mutually exclusive; send one', {
      details: [{ field: 'query.before', message: 'cannot be combined with after' }],
    });
  }
  const sort = q.sort ?? 'desc';
  const after = q.after ? decode(q.after, 'after', sort) : undefined;
  const before = q.before ? decode(q.before, 'before', sort) : undefined;
  // The direction rows are scanned in: the page order, reversed when paging backwards.
  const scanDesc = (sort === 'desc') !== (before !== undefined);
  const boundary = after ?? before;
  // Files entirely on the far side of the cursor cannot contribute.
  let files = filter.files.filter((f) => !boundary || (scanDesc ? f.minTs <= boundary.t : f.maxTs >= boundary.t));
  files = files.sort((a, b) => (scanDesc ? b.maxTs - a.maxTs : a.minTs - b.minTs));
  const want = q.limit + 1;
  const cmp = (x: { tsMs: number; seq: number; row: number }, y: { tsMs: number; seq: number; row: number }) =>
    (x.tsMs - y.tsMs || x.seq - y.seq || x.row - y.row) * (scanDesc ? -1 : 1);
  let rows: Awaited<ReturnType<FileReader['docs']>> = [];
  for (let i = 0; i < files.length; i += FILES_PER_QUERY) {
    const chunk = files.slice(i, i + FILES_PER_QUERY);
    if (rows.length >= want) {
      const worst = rows[want - 1]!.tsMs;
      const best = scanDesc ? chunk[0]!.maxTs : chunk[0]!.minTs;
      if (scanDesc ? best < worst : best > worst) break;
    }
    const got = await reader.docs({
      paths: chunk.map((f) => f.path),
      ...(filter.versionIds ? { versionIds: filter.versionIds } : {}),
      ...(filter.shapeHashes ? { shapeHashes: filter.shapeHashes } : {}),
      ...(filter.startMs !== undefined ? { startMs: filter.startMs } : {}),
      ...(filter.endMs !== undefined ? { endMs: filter.endMs } : {}),
      limit: want,
      sort: scanDesc ? 'desc' : 'asc',
      ...(boundary ? { after: { ts: boundary.t, seq: boundary.q, row: boundary.r } } : {}),
    });
    rows = [...rows, ...got].sort(cmp).slice(0, want);
  }
  const more = rows.length > q.limit;
  let page = rows.slice(0, q.limit);
  if (before) page = page.reverse();
  const cursor = (r: { tsMs: number; seq: number; row: number }) => encode({ s: sort, t: r.tsMs, q: r.seq, r: r.row });
  const hasNext = before ? true : more;
  const hasPrev = before ? more : after !== undefined;
  return {
    data: new RawJson(`[${page.map((r) => render(r.doc)).join(',')}]`),
    pagination: {
      next_cursor: hasNext && page.length > 0 ? cursor(page[page.length - 1]!) : null,
      prev_cursor: hasPrev && page.length > 0 ? cursor(page[0]!) : null,
      limit: q.limit,
    },
  };
}
