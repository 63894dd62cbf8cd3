import { DuckDBDataChunk, type DuckDBConnection, type DuckDBType, type DuckDBValue } from '@duckdb/node-api';

/**
 * Reading and writing DuckDB rows a column vector at a time. `getRows()` builds an array and a
 * JavaScript value per cell (a string decoded per VARCHAR), and an appender crosses into native code
 * once per value; a data chunk holds up to 2,048 rows whose numeric columns are typed arrays copied
 * in or out once. The compactor reads and writes hundreds of thousands of rows a pass through these.
 */

/** The rows DuckDB puts in one data chunk (its standard vector size). */
export const CHUNK_ROWS = 2048;

/** Runs `sql` and hands each result chunk to `onChunk` in order (read its vectors; do not keep them). */
export async function readChunks(
  conn: DuckDBConnection,
  sql: string,
  params: unknown[],
  types: DuckDBType[],
  onChunk: (chunk: DuckDBDataChunk) => Promise<void> | void,
): Promise<void> {
  const result = await conn.run(sql, params as never, types as never);
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) return;
    await onChunk(chunk);
  }
}

/**
 * Appends `count` rows to `table` (inside the caller's transaction: a rollback drops them), each
 * filled by `fill` into a reused row array (values as the column types take them: numbers, bigints,
 * strings, `{ bytes }` for BLOB, null), written to the table a chunk of CHUNK_ROWS at a time.
 */
export async function appendColumns<T>(
  conn: DuckDBConnection,
  table: string,
  types: DuckDBType[],
  items: Iterable<T>,
  count: number,
  fill: (item: T, row: unknown[]) => void,
): Promise<void> {
  if (count === 0) return;
  const appender = await conn.createAppender(table);
  const row: unknown[] = new Array(types.length).fill(null);
  const it = items[Symbol.iterator]();
  let left = count;
  while (left > 0) {
    const n = Math.min(CHUNK_ROWS, left);
    const chunk = DuckDBDataChunk.create(types, n);
    const vectors = types.map((_, c) => chunk.getColumnVector(c));
    for (let i = 0; i < n; i++) {
      const next = it.next();
      if (next.done) throw new Error(`appendColumns: ${count} rows promised, ${count - left + i} given`);
      fill(next.value, row);
      for (let c = 0; c < vectors.length; c++) vectors[c]!.setItem(i, row[c] as DuckDBValue);
    }
    for (const v of vectors) v.flush();
    appender.appendDataChunk(chunk);
    left -= n;
    // Between chunks, the event loop breathes: a pass writes tens of thousands of rows.
    await new Promise<void>((r) => setImmediate(r));
  }
  appender.closeSync();
}
