import type { FileReader, ViewRow } from '../schema/file-reader.js';
import type { OutputField } from './output-schema.js';
import { outputRow } from './output-row.js';
import type { ViewInput } from './view-stage.js';

/**
 * Reading a committed view file back as records (docs/views.md, "Storage"): what a view of a view's
 * backfill and a join view read of their input views.
 */

/** Every row of one view file (`rows` from its manifest), in (time, sequence, row) order. */
export function readViewFile(reader: FileReader, path: string, rows: number): Promise<ViewRow[]> {
  return reader.viewRows({ paths: [path], limit: rows + 1, desc: false });
}

/**
 * Rows as a transform's input: each the output row of `fields` (as the records endpoint shows it),
 * or `records[i]` when given (a join's enriched rows), with the row's event time and sequence.
 * Files keep neither receive times nor schema versions: `ctx.received_at` reads the event time and
 * `ctx.schema_version` is null.
 */
export function viewRowsInput(
  rows: readonly ViewRow[],
  fields: readonly OutputField[],
  records?: readonly Record<string, unknown>[],
): ViewInput {
  const n = rows.length;
  const texts = new Array<string>(n);
  for (let i = 0; i < n; i++) texts[i] = JSON.stringify(records ? records[i] : outputRow(fields, rows[i]!.values));
  const ts = Float64Array.from(rows, (r) => r.ts);
  return {
    texts,
    ts,
    received: ts.slice(),
    seq: Float64Array.from(rows, (r) => r.seq),
    versions: new Array<string | null>(n).fill(null),
  };
}
