import { Bool, Float64, Int32, Int64, TimestampMillisecond, Utf8, vectorFromArray, type Vector } from 'apache-arrow';
import { tableOf } from '../schema/columns.js';
import { encodeParquet } from '../schema/parquet-writer.js';
import type { OutputColumn } from './output-schema.js';

/**
 * A view output file (docs/views.md, "Storage"): `__ts` event time (TIMESTAMP ms, UTC), `__seq`
 * the spool sequence of the source entry, `__row` the row within the file, then one column per
 * output field — string VARCHAR, number DOUBLE, boolean BOOLEAN, date TIMESTAMP ms, array VARCHAR
 * holding JSON text, null VARCHAR (always null).
 */
export function viewFileBytes(ts: ArrayLike<number>, seq: ArrayLike<number>, columns: readonly OutputColumn[]): Uint8Array {
  const n = ts.length;
  const rowIds = new Int32Array(n);
  for (let i = 0; i < n; i++) rowIds[i] = i;
  const seqs = new Array<bigint>(n);
  for (let i = 0; i < n; i++) seqs[i] = BigInt(seq[i]!);
  const vectors: Record<string, Vector> = {
    __ts: vectorFromArray(Array.from(ts), new TimestampMillisecond('UTC')),
    __seq: vectorFromArray(seqs, new Int64()),
    __row: vectorFromArray(Array.from(rowIds), new Int32()),
  };
  for (const c of columns) vectors[c.name] = vectorOf(c);
  return encodeParquet(tableOf(vectors));
}

function vectorOf(c: OutputColumn): Vector {
  switch (c.type) {
    case 'number':
      return vectorFromArray(c.values, new Float64());
    case 'date':
      return vectorFromArray(c.values, new TimestampMillisecond('UTC'));
    case 'boolean':
      return vectorFromArray(c.values, new Bool());
    default:
      return vectorFromArray(c.values as (string | null)[], new Utf8());
  }
}
