import { VARCHAR } from '@duckdb/node-api';
import type { OutputColumn, OutputField } from '../transform/output-schema.js';
import { quoteIdent } from './filter-expression.js';
import { duck, type RollupStore } from './rollup-store.js';

/**
 * A view file read back into the column form the worker's view stage hands the partials builder:
 * `__ts` as epoch ms and one OutputColumn per wanted field (dates as epoch ms, arrays as JSON
 * text). A field the file does not have (it predates the field) reads as all null. Names are
 * quoted identifiers from the view's schema; the path is a bound parameter.
 */
export async function readViewFileColumns(
  store: RollupStore,
  path: string,
  fields: readonly OutputField[],
): Promise<{ ts: Float64Array; columns: OutputColumn[] }> {
  const schema = await duck('read a view file schema', () =>
    store.reader.runAndReadAll('SELECT name FROM parquet_schema($1)', [path], [VARCHAR]),
  );
  const present = new Set(schema.getRows().map((r) => String(r[0])));
  const select = fields.map((f) => {
    if (!present.has(f.name)) return 'NULL';
    const c = quoteIdent(f.name);
    if (f.type === 'date') return `epoch_ms(${c})::DOUBLE`;
    if (f.type === 'number') return `${c}::DOUBLE`;
    if (f.type === 'boolean') return c;
    return `${c}::VARCHAR`;
  });
  const sql = `SELECT epoch_ms(__ts)::DOUBLE${select.map((s) => `, ${s}`).join('')} FROM read_parquet($1) ORDER BY __seq, __row`;
  const reader = await duck('read a view file', () => store.reader.runAndReadAll(sql, [path], [VARCHAR]));
  const cols = reader.getColumnsJS() as unknown[][];
  const ts = Float64Array.from((cols[0] ?? []) as number[]);
  const columns = fields.map(
    (f, i) =>
      ({
        name: f.name,
        type: f.type,
        values: (cols[i + 1] ?? new Array(ts.length).fill(null)) as never,
      }) as OutputColumn,
  );
  return { ts, columns };
}
