import { DataType, Message, tableToIPC, Vector, type Schema, type Table } from 'apache-arrow';
import { DictionaryBatch as IpcDictionaryBatch, RecordBatch as IpcRecordBatch } from 'apache-arrow/ipc/metadata/message';
import { VectorAssembler } from 'apache-arrow/visitor/vectorassembler';
import { Compression, EnabledStatistics, Encoding, Table as WasmTable, WriterPropertiesBuilder, WriterVersion, writeParquet, type WriterProperties } from 'parquet-wasm/node';
import { ApiError } from '../errors.js';

/**
 * The one boundary to parquet-wasm: an Arrow table in, Parquet bytes out (one row group up to 1M
 * rows; documents zstd, everything else LZ4, data pages v2). Its failures become a catalogue
 * error carrying the cause.
 */

/** Envelope columns: string ones keep their min/max (typed string fields do not). */
const ENVELOPE_COLUMNS = ['_sluice_seq', '_sluice_row', '_sluice_received_at', '_sluice_ts', '_sluice_version', '_sluice_shape', '_sluice_doc'];

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
    if (DataType.isUtf8(f.type) && !ENVELOPE_COLUMNS.includes(f.name)) b = b.setColumnStatisticsEnabled(f.name, EnabledStatistics.None);
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
  /** Largest buffer kept between files; a larger stream gets a buffer of its own. */
  KEEP_BYTES: 64 << 20,
  /** Framed schema messages by schema key (bounded: cleared when full). */
  schemas: new Map<string, Uint8Array>(),
  MAX_SCHEMAS: 4096,
};

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
  for (const f of schema.fields) key += `${f.name}\u0000${String(f.type)}${DataType.isDictionary(f.type) ? `#${f.type.id}` : ''}\u0000${f.nullable ? 1 : 0}\u0001`;
  return key;
}

function schemaMessage(schema: Schema): Uint8Array {
  // Metadata is not in the key: a schema carrying any is encoded every time (ours carry none).
  if (schema.metadata.size > 0 || schema.fields.some((f) => f.metadata.size > 0)) return framed(Message.encode(Message.from(schema)));
  const key = schemaKey(schema);
  let bytes = ipc.schemas.get(key);
  if (bytes === undefined) {
    if (ipc.schemas.size >= ipc.MAX_SCHEMAS) ipc.schemas.clear();
    bytes = framed(Message.encode(Message.from(schema)));
    ipc.schemas.set(key, bytes);
  }
  return bytes;
}

/** One record batch (or a dictionary's batch, `dictionaryId`) as its framed message and body buffers. */
function batchParts(assembled: VectorAssembler, length: number, dictionaryId: number | null): { message: Uint8Array; buffers: ArrayBufferView[]; bodyLength: number } {
  const { byteLength, nodes, bufferRegions, buffers, variadicBufferCounts } = assembled;
  const batch = new IpcRecordBatch(length, nodes, bufferRegions, null, variadicBufferCounts);
  const header = dictionaryId === null ? batch : new IpcDictionaryBatch(batch, dictionaryId, false);
  return { message: framed(Message.encode(Message.from(header, byteLength))), buffers, bodyLength: byteLength };
}

/** The stream of `table` (one record batch, as tableOf makes), valid until the next call. */
export function streamOf(table: Table): Uint8Array {
  if (table.batches.length !== 1) return tableToIPC(table, 'stream');
  const batch = table.batches[0]!;
  const parts: Array<{ message: Uint8Array; buffers: ArrayBufferView[]; bodyLength: number }> = [];
  for (const [id, dictionary] of batch.dictionaries) {
    for (const chunk of dictionary.data) parts.push(batchParts(VectorAssembler.assemble(new Vector([chunk])), chunk.length, id));
  }
  parts.push(batchParts(VectorAssembler.assemble(batch), batch.numRows, null));
  const schema = schemaMessage(table.schema);
  let total = schema.byteLength + 8;
  for (const p of parts) total += p.message.byteLength + p.bodyLength;
  let out = ipc.scratch;
  if (total > out.length) {
    out = new Uint8Array(Math.max(total, out.length * 2));
    if (out.length <= ipc.KEEP_BYTES) ipc.scratch = out;
  }
  out.set(schema, 0);
  let at = schema.byteLength;
  for (const p of parts) {
    out.set(p.message, at);
    at += p.message.byteLength;
    // Body buffers, each padded to 8 bytes: the offsets the assembler wrote into the message.
    const bodyEnd = at + p.bodyLength;
    for (const b of p.buffers) {
      if (b.byteLength === 0) continue;
      out.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), at);
      const padded = at + ((b.byteLength + 7) & ~7);
      out.fill(0, at + b.byteLength, padded);
      at = padded;
    }
    if (at !== bodyEnd) throw new Error(`Arrow IPC body of ${at - (bodyEnd - p.bodyLength)} bytes, its message says ${p.bodyLength}`);
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
    throw new ApiError('server_error', `writing a collection file failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
}
