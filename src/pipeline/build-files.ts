import type { Vector } from 'apache-arrow';
import { DictColumn, Int32Column, Int64Column, tableOf, Utf8Column } from '../schema/columns.js';
import { encodeParquet } from '../schema/parquet-writer.js';
import type { Assignment } from '../schema/book.js';
import { recordOf, type DecodedRows } from '../records/decode.js';
import { createFieldExtractor, type FieldBuilder } from './field-extractor.js';
import type { FileSpec } from './file-plan.js';
import { refusedReason, type FingerprintedRows } from './fingerprint-stage.js';
import type { FileCounts } from '../schema/schema-store.js';

/**
 * Columns stage: one Arrow table per planned file, built column by column from typed arrays, then
 * encoded as Parquet. Every file carries the same envelope columns (names are reserved: a field
 * whose path starts with `_sluice_` stays in the document only):
 *
 * - `_sluice_seq` (int64) spool sequence number of the request — what a replay removes by;
 * - `_sluice_row` (int32) the record's position in its request;
 * - `_sluice_received_at`, `_sluice_ts` (timestamp ms, UTC) receive time and event time;
 * - `_sluice_version` (string) version id, null when unclassified;
 * - `_sluice_shape` (string) signature hash, `refused:<reason>`, or null past the writer budget;
 * - `_sluice_doc` (string) the record exactly as sent;
 *
 * then one typed column per field of the file's version or shape (file-plan.ts `fieldColumns`),
 * filled by a compiled field extractor (field-extractor.ts).
 */

export const ENVELOPE_COLUMNS = [
  '_sluice_seq',
  '_sluice_row',
  '_sluice_received_at',
  '_sluice_ts',
  '_sluice_version',
  '_sluice_shape',
  '_sluice_doc',
] as const;

/**
 * Bytes of the documents column, reused file after file: the column lives only until its file is
 * encoded (parquet-wasm copies it), and a new buffer per file was memory outside the JS heap that
 * set off full collections in the workers. Buffers past KEEP_DOC_BYTES are not kept.
 */
let docScratch = Buffer.allocUnsafe(0);
const KEEP_DOC_BYTES = 32 << 20;

function docStorage(bytes: number): Buffer | undefined {
  if (bytes > KEEP_DOC_BYTES) return undefined;
  if (docScratch.length < bytes)
    docScratch = Buffer.allocUnsafeSlow(Math.min(KEEP_DOC_BYTES, Math.max(bytes, docScratch.length * 2, 1 << 20)));
  return docScratch;
}

/** One encoded collection file and what its manifest needs. */
export interface BuiltFile {
  spec: FileSpec;
  bytes: Uint8Array;
  rows: number;
  /** Bytes of the documents as sent (the uncompressed size behind storage_gb). */
  docBytes: number;
  minTs: number;
  maxTs: number;
  counts: FileCounts;
}

/**
 * Build and encode every planned file of a batch. `prebuilt` may supply a file's field columns
 * already filled (speculative-fields.ts); other files read their records (recordOf).
 */
export function buildFiles(
  rows: DecodedRows,
  fr: FingerprintedRows,
  files: readonly FileSpec[],
  assign: ReadonlyMap<number, Assignment>,
  prebuilt: (spec: FileSpec) => FieldBuilder[] | null = () => null,
): BuiltFile[] {
  // Rows of each file, in batch order, and each row's key as its position in its file's key list
  // (so the envelope values are looked up once per key, not once per row).
  const slotOfKey = new Map<number, { file: number; slot: number }>();
  files.forEach((f, file) => f.keys.forEach((k, slot) => slotOfKey.set(k, { file, slot })));
  const members = files.map((f) => new Int32Array(f.rows));
  const fill = new Int32Array(files.length);
  const rowSlot = new Int32Array(rows.count);
  for (let r = 0; r < rows.count; r++) {
    const at = slotOfKey.get(fr.keys[r]!);
    if (at === undefined) throw new Error(`row ${r} has no planned file`);
    members[at.file]![fill[at.file]!++] = r;
    rowSlot[r] = at.slot;
  }
  return files.map((spec, fi) => ({
    ...buildOne(rows, rowSlot, spec, members[fi]!.subarray(0, fill[fi]!), assign, prebuilt(spec)),
    counts: countsOf(spec, fr, assign),
  }));
}

/** What a file's rows add to the counts the plan keeps (book.ts `planBatch`). */
function countsOf(spec: FileSpec, fr: FingerprintedRows, assign: ReadonlyMap<number, Assignment>): FileCounts {
  const counts: FileCounts = { versions: {}, shapes: {}, overflow: 0 };
  for (const key of spec.keys) {
    const rows = fr.groups.get(key)?.rows ?? 0;
    if (key < 0) {
      // Refused rows: counted with the overflow (resolver.ts).
      counts.overflow += rows;
      continue;
    }
    const a = assign.get(key);
    if (!a) {
      counts.overflow += rows;
      continue;
    }
    if (a.versionId) counts.versions[a.versionId] = (counts.versions[a.versionId] ?? 0) + rows;
    counts.shapes[a.shapeHash] = (counts.shapes[a.shapeHash] ?? 0) + rows;
  }
  return counts;
}

function buildOne(
  rows: DecodedRows,
  rowSlot: Int32Array,
  spec: FileSpec,
  rowIds: Int32Array,
  assign: ReadonlyMap<number, Assignment>,
  prebuilt: FieldBuilder[] | null,
): Omit<BuiltFile, 'counts'> {
  const n = rowIds.length;
  let docBytes = 0;
  for (let i = 0; i < n; i++) docBytes += rows.end[rowIds[i]!]! - rows.start[rowIds[i]!]!;
  const seq = new Int64Column(n);
  const ordinal = new Int32Column(n);
  const received = new Int64Column(n);
  const ts = new Int64Column(n);
  const version = new DictColumn(n, 0);
  const shape = new DictColumn(n, 1);
  const doc = new Utf8Column(n, docBytes, docStorage(docBytes));
  // Field columns: already filled, or filled here from the records (none to read without columns).
  const fields = prebuilt === null && spec.columns.length > 0 ? createFieldExtractor(spec.columns, n) : null;
  // Envelope values per key of the file: dictionary positions of its version and shape.
  const versionOf = new Int32Array(spec.keys.length);
  const shapeOf = new Int32Array(spec.keys.length);
  spec.keys.forEach((key, slot) => {
    const a = key >= 0 ? assign.get(key) : undefined;
    versionOf[slot] = version.indexOf(spec.kind === 'overflow' ? null : (a?.versionId ?? null));
    shapeOf[slot] = shape.indexOf(
      key < 0 ? refusedReason(key) : spec.kind === 'overflow' ? null : (a?.shapeHash ?? null),
    );
  });
  let minTs = Infinity;
  let maxTs = -Infinity;
  for (let i = 0; i < n; i++) {
    const r = rowIds[i]!;
    const entry = rows.entries[rows.entry[r]!]!;
    seq.push(entry.seq);
    ordinal.push(rows.ordinal[r]!);
    received.push(entry.received_at);
    const t = rows.ts[r]!;
    ts.push(t);
    if (t < minTs) minTs = t;
    if (t > maxTs) maxTs = t;
    const slot = rowSlot[r]!;
    version.pushIndex(versionOf[slot]!);
    shape.pushIndex(shapeOf[slot]!);
    doc.pushBytes(rows.bodies[rows.entry[r]!]!, rows.start[r]!, rows.end[r]!);
    if (fields !== null) fields.extract(recordOf(rows, r));
  }
  const columns: Record<string, Vector> = {
    _sluice_seq: seq.vector(),
    _sluice_row: ordinal.vector(),
    _sluice_received_at: received.timestampVector(),
    _sluice_ts: ts.timestampVector(),
    _sluice_version: version.vector(),
    _sluice_shape: shape.vector(),
    _sluice_doc: doc.vector(),
  };
  const builders = prebuilt ?? fields?.builders ?? [];
  spec.columns.forEach((c, i) => (columns[c.name] = builders[i]!.vector()));
  return { spec, bytes: encodeParquet(tableOf(columns)), rows: n, docBytes, minTs, maxTs };
}
