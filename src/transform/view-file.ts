import { createHash } from 'node:crypto';
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

/**
 * The name of a view file made from one input file outside live batches: `<prefix><first
 * sequence>-<hash of the input file's id>.parquet` (`f` backfill, `j` join). Apart from the live
 * batches' `b<sequence>.parquet`, and the same on a rerun, so an uncommitted one is overwritten (or
 * swept at start-up), never doubled.
 */
export function derivedFileName(prefix: 'f' | 'j', input: { id: string; first_seq: number }): string {
  return `${prefix}${input.first_seq}-${createHash('sha256').update(input.id).digest('hex').slice(0, 12)}.parquet`;
}
