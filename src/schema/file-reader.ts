import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { ApiError } from '../errors.js';

/**
 * The one boundary to DuckDB for reading collection files: documents newest first with a keyset
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

const quote = (s: string) => `'${s.replace(/'/g, "''")}'`;

export class FileReader {
  private constructor(private readonly conn: DuckDBConnection, private readonly instance: DuckDBInstance) {}

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
    if (q.versionIds) byVersion.push(q.versionIds.length ? `_sluice_version IN (${q.versionIds.map(quote).join(',')})` : 'false');
    if (q.shapeHashes && q.shapeHashes.length) byVersion.push(`_sluice_shape IN (${q.shapeHashes.map(quote).join(',')})`);
    if (byVersion.length) where.push(`(${byVersion.join(' OR ')})`);
    if (q.startMs !== undefined) where.push(`epoch_ms(_sluice_ts) >= ${Math.floor(q.startMs)}`);
    if (q.endMs !== undefined) where.push(`epoch_ms(_sluice_ts) < ${Math.floor(q.endMs)}`);
    const tuple = '(epoch_ms(_sluice_ts), _sluice_seq, _sluice_row)';
    const pos = (p: { ts: number; seq: number; row: number }) => `(${Math.floor(p.ts)}, ${Math.floor(p.seq)}, ${Math.floor(p.row)})`;
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
    const out = rows.map((r) => ({ doc: String(r[0]), tsMs: Number(r[1]), seq: Number(r[2]), row: Number(r[3]), versionId: r[4] === null ? null : String(r[4]) }));
    return backwards ? out.reverse() : out;
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

async function guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError('server_error', `DuckDB failed to ${what}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
}
