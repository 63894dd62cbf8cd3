import { DuckDBInstance, listValue, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { ApiError } from '../errors.js';
import { duckdbQuerySeconds } from '../self-metrics/registry.js';

/**
 * The one boundary to DuckDB for reading collection and view files: rows newest first with a keyset
 * cursor over (event time, spool sequence, row). DuckDB failures become catalogue errors with cause.
 */

export interface DocRow {
  doc: string;
  tsMs: number;
  seq: number;
  row: number;
  versionId: string | null;
}

export interface DocQuery {
  /** Absolute Parquet paths to read. */
  paths: string[];
  /** Keep only rows of these versions (merged ids included by the caller); undefined: all. */
  versionIds?: string[];
  /** Keep only rows of these shapes (unclassified files linked to a version). */
  shapeHashes?: string[];
  startMs?: number;
  endMs?: number;
  limit: number;
  sort: 'asc' | 'desc';
  /** Rows strictly after this position in `sort` order. */
  after?: { ts: number; seq: number; row: number };
  /** Rows strictly before this position in `sort` order (the previous page). */
  before?: { ts: number; seq: number; row: number };
}

/** Where a view row sits in the order of view records: event time, spool sequence, row, file. */
export interface ViewRowPosition {
  ts: number;
  seq: number;
  row: number;
  /** Absolute path of the file. */
  path: string;
}

/** A row of a view file: its position and its output columns (internal `__` columns left out). */
export interface ViewRow extends ViewRowPosition {
  /**
   * Column name → value: strings, numbers (BIGINTs in the safe range as numbers), booleans, null;
   * timestamps as epoch milliseconds.
   */
  values: Record<string, unknown>;
}

export interface ViewRowQuery {
  /** Absolute Parquet paths to read. */
  paths: string[];
  startMs?: number;
  endMs?: number;
  limit: number;
  /** Scan order; `after` keeps rows strictly past the position in this order. */
  desc: boolean;
  after?: ViewRowPosition;
}

const quote = (s: string) => `'${s.replace(/'/g, "''")}'`;

export class FileReader {
  private constructor(
    private readonly conn: DuckDBConnection,
    private readonly instance: DuckDBInstance,
  ) {}

  static async open(): Promise<FileReader> {
    return guard('open', async () => {
      const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
      return new FileReader(await instance.connect(), instance);
    });
  }

  /** Documents matching `q`, in the order of `q.sort` (for `before`, still returned in `q.sort` order). */
  async docs(q: DocQuery): Promise<DocRow[]> {
    if (q.paths.length === 0) return [];
    const where: string[] = [];
    const byVersion: string[] = [];
    if (q.versionIds)
      byVersion.push(q.versionIds.length ? `_sluice_version IN (${q.versionIds.map(quote).join(',')})` : 'false');
    if (q.shapeHashes && q.shapeHashes.length)
      byVersion.push(`_sluice_shape IN (${q.shapeHashes.map(quote).join(',')})`);
    if (byVersion.length) where.push(`(${byVersion.join(' OR ')})`);
    if (q.startMs !== undefined) where.push(`epoch_ms(_sluice_ts) >= ${Math.floor(q.startMs)}`);
    if (q.endMs !== undefined) where.push(`epoch_ms(_sluice_ts) < ${Math.floor(q.endMs)}`);
    const tuple = '(epoch_ms(_sluice_ts), _sluice_seq, _sluice_row)';
    const pos = (p: { ts: number; seq: number; row: number }) =>
      `(${Math.floor(p.ts)}, ${Math.floor(p.seq)}, ${Math.floor(p.row)})`;
    const desc = q.sort === 'desc';
    // Going backwards reverses the scan, then the page is put back in order.
    const backwards = q.before !== undefined;
    const scanDesc = backwards ? !desc : desc;
    if (q.after) where.push(`${tuple} ${desc ? '<' : '>'} ${pos(q.after)}`);
    if (q.before) where.push(`${tuple} ${desc ? '>' : '<'} ${pos(q.before)}`);
    const dir = scanDesc ? 'DESC' : 'ASC';
    const sql =
      `SELECT _sluice_doc, epoch_ms(_sluice_ts) AS ts, _sluice_seq, _sluice_row, _sluice_version FROM read_parquet([${q.paths.map(quote).join(',')}], union_by_name = true)` +
      (where.length ? ` WHERE ${where.join(' AND ')}` : '') +
      ` ORDER BY ts ${dir}, _sluice_seq ${dir}, _sluice_row ${dir} LIMIT ${Math.floor(q.limit)}`;
    const rows = await guard('read collection files', async () => (await this.conn.runAndReadAll(sql)).getRows());
    const out = rows.map((r) => ({
      doc: String(r[0]),
      tsMs: Number(r[1]),
      seq: Number(r[2]),
      row: Number(r[3]),
      versionId: r[4] === null ? null : String(r[4]),
    }));
    return backwards ? out.reverse() : out;
  }

  /**
   * Rows of view files (columns `__ts`, `__seq`, `__row`, then output fields) in (time, seq, row,
   * file) order. Every value is a bound parameter; the SQL text is fixed.
   */
  async viewRows(q: ViewRowQuery): Promise<ViewRow[]> {
    if (q.paths.length === 0) return [];
    const values: DuckDBValue[] = [listValue(q.paths)];
    const bind = (v: DuckDBValue) => `$${values.push(v)}`;
    const where: string[] = [];
    if (q.startMs !== undefined) where.push(`epoch_ms(__ts) >= ${bind(Math.floor(q.startMs))}`);
    if (q.endMs !== undefined) where.push(`epoch_ms(__ts) < ${bind(Math.floor(q.endMs))}`);
    const dir = q.desc ? 'DESC' : 'ASC';
    if (q.after) {
      const a = q.after;
      where.push(
        `(epoch_ms(__ts), __seq, __row, __file) ${q.desc ? '<' : '>'} (${bind(Math.floor(a.ts))}, ${bind(Math.floor(a.seq))}, ${bind(Math.floor(a.row))}, ${bind(a.path)})`,
      );
    }
    const sql =
      `SELECT epoch_ms(__ts) AS __ts_ms, * FROM read_parquet($1, filename = '__file', union_by_name = true)` +
      (where.length ? ` WHERE ${where.join(' AND ')}` : '') +
      ` ORDER BY __ts_ms ${dir}, __seq ${dir}, __row ${dir}, __file ${dir} LIMIT ${bind(Math.floor(q.limit))}`;
    const reader = await guard('read view files', () => this.conn.runAndReadAll(sql, values));
    const names = reader.columnNames();
    return reader.getRows().map((r) => {
      const row: ViewRow = { ts: 0, seq: 0, row: 0, path: '', values: {} };
      names.forEach((name, i) => {
        const v = r[i];
        if (name === '__ts_ms') row.ts = Number(v);
        else if (name === '__seq') row.seq = Number(v);
        else if (name === '__row') row.row = Number(v);
        else if (name === '__file') row.path = String(v);
        else if (!name.startsWith('__')) row.values[name] = plain(v);
      });
      return row;
    });
  }

  close(): void {
    try {
      this.conn.closeSync();
      this.instance.closeSync();
    } catch {
      // Closing twice or after a failed open is harmless.
    }
  }
}

/** A DuckDB value as plain JSON-able data: timestamps to epoch ms, integers to numbers. */
function plain(v: unknown): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'object') {
    const t = v as { micros?: unknown; millis?: unknown; nanos?: unknown };
    if (typeof t.micros === 'bigint') return floorDiv(t.micros, 1000n);
    if (typeof t.millis === 'bigint') return Number(t.millis);
    if (typeof t.nanos === 'bigint') return floorDiv(t.nanos, 1_000_000n);
  }
  return String(v);
}

/** a / b rounded down (BigInt division truncates towards zero; times before 1970 must not move up). */
function floorDiv(a: bigint, b: bigint): number {
  const q = a / b;
  return Number(a % b < 0n ? q - 1n : q);
}

async function guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const end = duckdbQuerySeconds.startTimer({ operation: what });
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError('server_error', `DuckDB failed to ${what}: ${(err as Error)?.message ?? String(err)}`, {
      cause: err,
    });
  } finally {
    end();
  }
}
