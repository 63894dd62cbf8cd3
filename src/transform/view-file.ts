import { createHash } from 'node:crypto';
import { makeData, makeVector, TimestampMillisecond, type Vector } from 'apache-arrow';
import {
  BoolColumn,
  Float64Column,
  Int32Column,
  Int64Column,
  StringColumn,
  tableOf,
  writeInt64,
} from '../schema/columns.js';
import { encodeParquet } from '../schema/parquet-writer.js';
import type { OutputColumn } from './output-schema.js';

/**
 * A view output file (docs/views.md, "Storage"): `__ts` event time (TIMESTAMP ms, UTC), `__seq`
 * the spool sequence of the source entry, `__row` the row within the file, then one column per
 * output field — string VARCHAR, number DOUBLE, boolean BOOLEAN, date TIMESTAMP ms, array VARCHAR
 * holding JSON text, null VARCHAR (always null). Built over typed arrays (schema/columns.ts), as
 * collection files are: building from value arrays was a large share of a view's cost.
 */
export function viewFileBytes(
  ts: ArrayLike<number>,
  seq: ArrayLike<number>,
  columns: readonly OutputColumn[],
): Uint8Array {
  const n = ts.length;
  const tsCol = new Int64Column(n);
  const seqCol = new Int64Column(n);
  const rowCol = new Int32Column(n);
  for (let i = 0; i < n; i++) {
    tsCol.push(ts[i]!);
    seqCol.push(seq[i]!);
    rowCol.push(i);
  }
  const vectors: Record<string, Vector> = {
    __ts: tsCol.timestampVector(),
    __seq: seqCol.vector(),
    __row: rowCol.vector(),
  };
  for (const c of columns) vectors[c.name] = vectorOf(c, n);
  return encodeParquet(tableOf(vectors));
}

function vectorOf(c: OutputColumn, n: number): Vector {
  switch (c.type) {
    case 'number': {
      const col = new Float64Column(n);
      for (const v of c.values) v === null ? col.pushNull() : col.push(v);
      return col.vector();
    }
    case 'date':
      return timestamps(c.values);
    case 'boolean': {
      const col = new BoolColumn(n);
      for (const v of c.values) v === null ? col.pushNull() : col.push(v);
      return col.vector();
    }
    default: {
      const col = new StringColumn(n);
      for (const v of c.values as (string | null)[]) v === null ? col.pushNull() : col.push(v);
      return col.vector();
    }
  }
}

/** Nullable epoch-ms timestamps (UTC). */
function timestamps(values: readonly (number | null)[]): Vector {
  const n = values.length;
  const data = new BigInt64Array(n);
  const words = new Int32Array(data.buffer);
  const bits = new Uint8Array((n + 7) >> 3);
  let nulls = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    if (v === null) {
      nulls++;
      continue;
    }
    bits[i >> 3]! |= 1 << (i & 7);
    writeInt64(words, i, v);
  }
  return makeVector(
    makeData({ type: new TimestampMillisecond('UTC'), length: n, data, nullBitmap: bits, nullCount: nulls }),
  );
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
