import {
  DataType,
  Message,
  tableToIPC,
  Vector,
  type Data,
  type RecordBatch,
  type Schema,
  type Table,
} from 'apache-arrow';
import {
  DictionaryBatch as IpcDictionaryBatch,
  RecordBatch as IpcRecordBatch,
} from 'apache-arrow/ipc/metadata/message';
import { VectorAssembler } from 'apache-arrow/visitor/vectorassembler';
import {
  Compression,
  EnabledStatistics,
  Encoding,
  Table as WasmTable,
  WriterPropertiesBuilder,
  WriterVersion,
  writeParquet,
  type WriterProperties,
} from 'parquet-wasm/node';
import { ApiError } from '../errors.js';

/**
 * The one boundary to parquet-wasm: an Arrow table in, Parquet bytes out (one row group up to 1M
 * rows; documents zstd, everything else LZ4, data pages v2). Its failures become a catalogue
 * error carrying the cause.
 */

/** Envelope columns: string ones keep their min/max (typed string fields do not). */
const ENVELOPE_COLUMNS = [
  '_sluice_seq',
  '_sluice_row',
  '_sluice_received_at',
  '_sluice_ts',
  '_sluice_version',
  '_sluice_shape',
  '_sluice_doc',
];

function writerProperties(table: Table): WriterProperties {
  // Built per file: writeParquet takes ownership of the properties (a reused one silently falls
  // back to the defaults, uncompressed).
  // Measured on 2 cores (files of 5,000 ~200-byte rows, 18 columns), encode µs per row / bytes per row:
  // all zstd 3.1 / 17; all LZ4 1.5 / 69; documents + envelope zstd, fields LZ4, data pages v2
  // 2.2 / 24 (chosen). The documents are most of the bytes, so they get zstd; typed fields
  // (float64s above all) cost zstd far more time than the space it saves. Pages v2 use delta
  // encodings for integers and strings (sequence numbers and keys shrink to almost nothing).
  // Dictionary pages cost ~1.5 µs per row and made files larger (per-batch values are mostly
  // distinct). Chunk-level min/max is kept for pruning by time and field ranges; the documents
  // get none (never filtered by range).
  // Only the documents get zstd: the other envelope columns are a few bytes per file once delta-
  // or run-encoded, and each zstd column chunk costs a compressor set up in wasm: measured on the
  // files of nested leases (~80 columns), zstd on the six small envelope columns cost ~0.35 ms
  // per file (5-row files: 1,440 vs 1,088 µs), for the same file size (1,482 vs 1,483 bytes per
  // row; flat files 23 and 23). The documents stay zstd (level 1, parquet-wasm's only level): LZ4 would
  // save ~10 µs per nested record but make files 28% (nested) to 120% (flat) larger.
  let b = new WriterPropertiesBuilder()
    .setWriterVersion(WriterVersion.V2)
    .setCompression(Compression.LZ4_RAW)
    .setMaxRowGroupSize(1_000_000)
    .setCreatedBy('sluice')
    .setDictionaryEnabled(false)
    .setStatisticsEnabled(EnabledStatistics.Chunk)
    .setColumnStatisticsEnabled('_sluice_doc', EnabledStatistics.None);
  b = b.setColumnCompression('_sluice_doc', Compression.ZSTD);
  // String fields: min/max costs a comparison per value (~25% of their encode) and prunes little;
  // numbers, booleans and times keep theirs. A column path is the field name as one part.
  // Version and shape ids are written PLAIN: measured on 5,000-row files, the delta encoding pages
  // v2 default to costs 0.27 vs 0.24 µs per row for the two, for the same size once compressed.
  // String fields keep delta: PLAIN halves their encode time but made whole files ~60% larger.
  b = b.setColumnEncoding('_sluice_version', Encoding.PLAIN).setColumnEncoding('_sluice_shape', Encoding.PLAIN);
  for (const f of table.schema.fields) {
    if (DataType.isUtf8(f.type) && !ENVELOPE_COLUMNS.includes(f.name))
      b = b.setColumnStatisticsEnabled(f.name, EnabledStatistics.None);
  }
  return b.build();
}

/**
 * The Arrow IPC stream of a table (schema, dictionaries, one record batch, end of stream) assembled
 * straight into one buffer kept for the next file. apache-arrow's stream writer (its byte sink,
 * schema comparisons, a padding array per buffer, the schema encoded again for every file) was
 * ~7 µs per nested record in a worker's profile: ~1.6 ms per file of ~80 columns, ~19 files per
 * lease of 4,300 records. Here the schema message is encoded once per schema
 * (a version's columns and their nullability repeat lease after lease), the buffers are laid out
 * by apache-arrow's own assembler and copied once. parquet-wasm copies the stream into wasm memory,
 * so the bytes are only needed until then. The buffer is reused: a fresh one per file was ~40% of
 * the memory allocated outside the JS heap, which is what started most of the workers' full
 * collections (measured on the pipeline bench).
 */
const ipc = {
  scratch: new Uint8Array(1 << 20),
  view: null as unknown as DataView,
  /** Largest buffer kept between files; a larger stream gets a buffer of its own. */
  KEEP_BYTES: 64 << 20,
  /** Framed schema messages by schema key (bounded: cleared when full). */
  schemas: new Map<string, Uint8Array>(),
  MAX_SCHEMAS: 4096,
};
ipc.view = new DataView(ipc.scratch.buffer);

/** A flatbuffer message framed for a stream: continuation, length, message, padding to 8 bytes. */
function framed(message: Uint8Array): Uint8Array {
  const size = (message.byteLength + 8 + 7) & ~7;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setInt32(0, -1, true);
  view.setInt32(4, size - 8, true);
  out.set(message, 8);
  return out;
}

/** What identifies a schema's message: each field's name, type (dictionary ids included) and nullability. */
function schemaKey(schema: Schema): string {
  let key = '';
  for (const f of schema.fields)
    key += `${f.name}\u0000${String(f.type)}${DataType.isDictionary(f.type) ? `#${f.type.id}` : ''}\u0000${f.nullable ? 1 : 0}\u0001`;
  return key;
}

function schemaMessage(schema: Schema): Uint8Array {
  // Metadata is not in the key: a schema carrying any is encoded every time (ours carry none).
  if (schema.metadata.size > 0 || schema.fields.some((f) => f.metadata.size > 0))
    return framed(Message.encode(Message.from(schema)));
  const key = schemaKey(schema);
  let bytes = ipc.schemas.get(key);
  if (bytes === undefined) {
    if (ipc.schemas.size >= ipc.MAX_SCHEMAS) ipc.schemas.clear();
    bytes = framed(Message.encode(Message.from(schema)));
    ipc.schemas.set(key, bytes);
  }
  return bytes;
}

/**
 * One record batch (or a dictionary's batch) of the stream: its field nodes (length, null count
 * pairs) and body buffers in IPC order, and its message when apache-arrow encoded it (`null`: the
 * message is written by `writeBatchMessage` as the stream is laid out).
 */
interface BatchPart {
  message: Uint8Array | null;
  length: number;
  dictionaryId: number | null;
  nodes: number[];
  buffers: ArrayBufferView[];
  bodyLength: number;
}

/** A batch laid out by apache-arrow's assembler, its message encoded by apache-arrow (any column type). */
function assembledPart(assembled: VectorAssembler, length: number, dictionaryId: number | null): BatchPart {
  const { byteLength, nodes, bufferRegions, buffers, variadicBufferCounts } = assembled;
  const batch = new IpcRecordBatch(length, nodes, bufferRegions, null, variadicBufferCounts);
  const header = dictionaryId === null ? batch : new IpcDictionaryBatch(batch, dictionaryId, false);
  return {
    message: framed(Message.encode(Message.from(header, byteLength))),
    length,
    dictionaryId,
    nodes: [],
    buffers,
    bodyLength: byteLength,
  };
}

const NO_BYTES = new Uint8Array(0);

/**
 * Field node and buffers of one column of a flat type (integers, floats, timestamps, dates,
 * booleans, UTF-8 strings, dictionary indices), exactly as apache-arrow's VectorAssembler lays them
 * out; false for anything else (nested types, sliced data), which then goes through the assembler.
 * The types collection and view files are made of: the assembler's visitor, and the flatbuffers
 * builder behind each message, were ~3 µs per column per file (~0.2 ms for a nested version's ~75
 * columns, whatever its rows).
 */
function addFlatColumn(data: Data, nodes: number[], buffers: ArrayBufferView[]): boolean {
  const { type, length, offset } = data;
  if (offset !== 0 || length > 0x7fffffff) return false;
  const isDictionary = DataType.isDictionary(type);
  const valueType = isDictionary ? type.indices : type;
  const flat =
    DataType.isInt(valueType) ||
    DataType.isFloat(valueType) ||
    DataType.isTimestamp(valueType) ||
    DataType.isDate(valueType);
  if (!flat && !DataType.isBool(type) && !DataType.isUtf8(type)) return false;
  const nullCount = data.nullCount;
  let validity: Uint8Array = NO_BYTES;
  if (nullCount > 0) {
    if (!data.nullBitmap) return false;
    validity = data.nullBitmap;
  }
  if (flat) {
    const values = data.values as ArrayBufferView & { subarray(begin: number, end: number): ArrayBufferView };
    if (!ArrayBuffer.isView(values)) return false;
    buffers.push(validity, values.subarray(0, length * data.stride));
  } else if (DataType.isBool(type)) {
    const values: unknown = data.values;
    if (nullCount >= length) buffers.push(validity, new Uint8Array((length + 7) >> 3));
    else if (values instanceof Uint8Array) buffers.push(validity, values);
    else return false;
  } else {
    const offsets: unknown = data.valueOffsets;
    const values: unknown = data.values;
    if (!(offsets instanceof Int32Array) || !(values instanceof Uint8Array) || offsets[0] !== 0) return false;
    buffers.push(
      validity,
      offsets.subarray(0, length + 1),
      values.subarray(0, Math.min(offsets[length]!, values.byteLength)),
    );
  }
  nodes.push(length, nullCount);
  return true;
}

/** The parts of a record batch whose columns are all flat (a dictionary batch first per dictionary), or null. */
function flatParts(batch: RecordBatch): BatchPart[] | null {
  const parts: BatchPart[] = [];
  for (const [id, dictionary] of batch.dictionaries) {
    if (dictionary.data.length !== 1) return null;
    const part: BatchPart = {
      message: null,
      length: dictionary.length,
      dictionaryId: id,
      nodes: [],
      buffers: [],
      bodyLength: 0,
    };
    if (!addFlatColumn(dictionary.data[0]!, part.nodes, part.buffers)) return null;
    parts.push(part);
  }
  const part: BatchPart = {
    message: null,
    length: batch.numRows,
    dictionaryId: null,
    nodes: [],
    buffers: [],
    bodyLength: 0,
  };
  for (const child of batch.data.children) if (!addFlatColumn(child, part.nodes, part.buffers)) return null;
  parts.push(part);
  for (const p of parts) for (const b of p.buffers) p.bodyLength += (b.byteLength + 7) & ~7;
  return parts;
}

/**
 * Bytes of a batch's framed message (continuation, length, flatbuffer, padding to 8) as
 * `writeBatchMessage` writes it. The flatbuffer, offsets from its start (every table and vector of
 * 8-byte values 8-aligned): root offset; the Message vtable; the Message table (24 bytes);
 * for a dictionary its vtable and table (16 bytes); the RecordBatch vtable (padded to 16), table
 * (24 bytes), then the nodes and buffers vectors (a 4-byte count before 16-byte structs).
 */
function batchMessageBytes(p: BatchPart): number {
  const flatbuffer = (p.dictionaryId === null ? 40 : 64) + 56 + 8 * p.nodes.length + 16 * p.buffers.length;
  return (flatbuffer + 8 + 7) & ~7;
}

function setInt64(view: DataView, at: number, v: number): void {
  view.setUint32(at, v % 4294967296, true);
  view.setUint32(at + 4, Math.floor(v / 4294967296), true);
}

/** Writes `p`'s framed message at `at` (8-aligned) of `out`; returns its byte length. */
function writeBatchMessage(out: Uint8Array, view: DataView, at: number, p: BatchPart): number {
  const size = batchMessageBytes(p);
  out.fill(0, at, at + size);
  view.setInt32(at, -1, true);
  view.setInt32(at + 4, size - 8, true);
  const m = at + 8;
  // Message: version V5, header, body length. Fields: version, header_type, header, bodyLength.
  // A vtable is its own size, its table's size, then each field's offset in the table.
  view.setUint32(m, 16, true);
  for (const [i, v] of [12, 24, 16, 18, 4, 8].entries()) view.setUint16(m + 4 + 2 * i, v, true);
  view.setInt32(m + 16, 12, true);
  setInt64(view, m + 24, p.bodyLength);
  view.setInt16(m + 32, 4, true);
  let rb = m + 40;
  if (p.dictionaryId === null) {
    view.setUint8(m + 34, 3);
    view.setUint32(m + 20, rb + 16 - (m + 20), true);
  } else {
    // DictionaryBatch: id, data (isDelta left out: false). Fields: id, data.
    view.setUint8(m + 34, 2);
    view.setUint32(m + 20, m + 48 - (m + 20), true);
    for (const [i, v] of [8, 16, 8, 4].entries()) view.setUint16(m + 40 + 2 * i, v, true);
    view.setInt32(m + 48, 8, true);
    rb = m + 64;
    view.setUint32(m + 52, rb + 16 - (m + 52), true);
    setInt64(view, m + 56, p.dictionaryId);
  }
  // RecordBatch: length, nodes, buffers. Fields: length, nodes, buffers.
  for (const [i, v] of [10, 24, 8, 4, 16].entries()) view.setUint16(rb + 2 * i, v, true);
  const t = rb + 16;
  view.setInt32(t, 16, true);
  setInt64(view, t + 8, p.length);
  const nodeCount = p.nodes.length / 2;
  const nodesAt = t + 28;
  view.setUint32(t + 4, nodesAt - (t + 4), true);
  view.setUint32(nodesAt, nodeCount, true);
  for (let i = 0; i < p.nodes.length; i++) setInt64(view, nodesAt + 4 + 8 * i, p.nodes[i]!);
  const buffersAt = nodesAt + 4 + 16 * nodeCount + 4;
  view.setUint32(t + 16, buffersAt - (t + 16), true);
  view.setUint32(buffersAt, p.buffers.length, true);
  let offset = 0;
  for (let i = 0; i < p.buffers.length; i++) {
    const padded = (p.buffers[i]!.byteLength + 7) & ~7;
    setInt64(view, buffersAt + 4 + 16 * i, offset);
    setInt64(view, buffersAt + 12 + 16 * i, padded);
    offset += padded;
  }
  return size;
}

/** The stream of `table` (one record batch, as tableOf makes), valid until the next call. */
export function streamOf(table: Table): Uint8Array {
  if (table.batches.length !== 1) return tableToIPC(table, 'stream');
  const batch = table.batches[0]!;
  let parts = flatParts(batch);
  if (parts === null) {
    parts = [];
    for (const [id, dictionary] of batch.dictionaries) {
      for (const chunk of dictionary.data)
        parts.push(assembledPart(VectorAssembler.assemble(new Vector([chunk])), chunk.length, id));
    }
    parts.push(assembledPart(VectorAssembler.assemble(batch), batch.numRows, null));
  }
  const schema = schemaMessage(table.schema);
  let total = schema.byteLength + 8;
  for (const p of parts) total += (p.message?.byteLength ?? batchMessageBytes(p)) + p.bodyLength;
  if (total > ipc.scratch.length) {
    const size = Math.max(total, ipc.scratch.length * 2);
    if (size > ipc.KEEP_BYTES) return writeStream(new Uint8Array(total), schema, parts);
    ipc.scratch = new Uint8Array(size);
    ipc.view = new DataView(ipc.scratch.buffer);
  }
  return writeStream(ipc.scratch, schema, parts, ipc.view);
}

function writeStream(
  out: Uint8Array,
  schema: Uint8Array,
  parts: BatchPart[],
  view = new DataView(out.buffer, out.byteOffset, out.byteLength),
): Uint8Array {
  out.set(schema, 0);
  let at = schema.byteLength;
  for (const p of parts) {
    if (p.message !== null) {
      out.set(p.message, at);
      at += p.message.byteLength;
    } else at += writeBatchMessage(out, view, at, p);
    // Body buffers, each padded to 8 bytes: the offsets its message gives.
    const bodyEnd = at + p.bodyLength;
    for (const b of p.buffers) {
      if (b.byteLength === 0) continue;
      out.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), at);
      const padded = at + ((b.byteLength + 7) & ~7);
      out.fill(0, at + b.byteLength, padded);
      at = padded;
    }
    if (at !== bodyEnd)
      throw new Error(`Arrow IPC body of ${at - (bodyEnd - p.bodyLength)} bytes, its message says ${p.bodyLength}`);
  }
  // End of stream: continuation, zero length.
  out.fill(0xff, at, at + 4);
  out.fill(0, at + 4, at + 8);
  return out.subarray(0, at + 8);
}

/** Encode `table` as a Parquet file. */
export function encodeParquet(table: Table): Uint8Array {
  try {
    const wasm = WasmTable.fromIPCStream(streamOf(table));
    // writeParquet consumes the wasm table.
    return writeParquet(wasm, writerProperties(table));
  } catch (err) {
    throw new ApiError('server_error', `writing a collection file failed: ${(err as Error)?.message ?? String(err)}`, {
      cause: err,
    });
  }
}
