import { createHash } from 'node:crypto';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { BatchResult } from '../../src/pipeline/process-batch.js';

/**
 * What differential tests of the batch processor compare: each batch's file summaries and every
 * row of its files read back through DuckDB.
 */

/** A batch's files as their manifests see them. */
export const fileSummary = (r: BatchResult) =>
  r.files.map((f) => ({
    kind: f.kind,
    path: f.path,
    rows: f.rows,
    docBytes: f.docBytes,
    counts: f.counts,
    minTs: f.minTs,
    maxTs: f.maxTs,
  }));

/**
 * A DuckDB value as text that tells -0 from 0, a null from the string "null", a number from a
 * string. Long strings are shown by their start, length and SHA-256 (exact, but a failure stays readable).
 */
function cell(x: unknown): string {
  if (x === null) return 'NULL';
  if (typeof x === 'string')
    return x.length <= 160
      ? 's:' + x
      : `s:${x.slice(0, 80)}… (${x.length} chars, sha256 ${createHash('sha256').update(x).digest('hex')})`;
  if (typeof x === 'number') return 'n:' + (Object.is(x, -0) ? '-0' : String(x));
  if (typeof x === 'boolean') return 'b:' + String(x);
  if (typeof x === 'bigint') return 'i:' + String(x);
  return 'o:' + String(x);
}

/** Every row of the Parquet files at `paths`, in spool order, each as one line of named cells. */
export async function readFileRows(conn: DuckDBConnection, paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    const reader = await conn.runAndReadAll(
      `SELECT * FROM read_parquet('${p.replace(/'/g, "''")}') ORDER BY _sluice_seq, _sluice_row`,
    );
    const names = reader.columnNames();
    for (const row of reader.getRows()) out.push(JSON.stringify(names.map((n, i) => [n, cell(row[i])])));
  }
  return out;
}
