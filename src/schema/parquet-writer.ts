import { DataType, RecordBatchStreamWriter, type Table } from 'apache-arrow';
import { Compression, EnabledStatistics, Encoding, Table as WasmTable, WriterPropertiesBuilder, WriterVersion, writeParquet, type WriterProperties } from 'parquet-wasm/node';
import { ApiError } from '../errors.js';

/**
 * The one boundary to parquet-wasm: an Arrow table in, Parquet bytes out (one row group up to 1M
 * rows; envelope and documents zstd, typed fields LZ4, data pages v2). Its failures become a
 * catalogue error carrying the cause.
 */

/** Envelope columns compressed with zstd; every other column (typed fields) with LZ4. */
const ZSTD_COLUMNS = ['_sluice_seq', '_sluice_row', '_sluice_received_at', '_sluice_ts', '_sluice_version', '_sluice_shape', '_sluice_doc'];

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
  let b = new WriterPropertiesBuilder()
    .setWriterVersion(WriterVersion.V2)
    .setCompression(Compression.LZ4_RAW)
    .setMaxRowGroupSize(1_000_000)
    .setCreatedBy('sluice')
    .setDictionaryEnabled(false)
    .setStatisticsEnabled(EnabledStatistics.Chunk)
    .setColumnStatisticsEnabled('_sluice_doc', EnabledStatistics.None);
  for (const c of ZSTD_COLUMNS) b = b.setColumnCompression(c, Compression.ZSTD);
  // String fields: min/max costs a comparison per value (~25% of their encode) and prunes little;
  // numbers, booleans and times keep theirs. A column path is the field name as one part.
  // Version and shape ids are written PLAIN: measured on 5,000-row files, the delta encoding pages
  // v2 default to costs 0.27 vs 0.24 µs per row for the two, for the same size once compressed.
  // String fields keep delta: PLAIN halves their encode time but made whole files ~60% larger.
  b = b.setColumnEncoding('_sluice_version', Encoding.PLAIN).setColumnEncoding('_sluice_shape', Encoding.PLAIN);
  for (const f of table.schema.fields) {
    if (DataType.isUtf8(f.type) && !ZSTD_COLUMNS.includes(f.name)) b = b.setColumnStatisticsEnabled(f.name, EnabledStatistics.None);
  }
  return b.build();
}

/**
 * The Arrow IPC stream of a table, assembled in one buffer kept for the next file (tableToIPC joins
 * the pieces into a new buffer per file). parquet-wasm copies its input into wasm memory, so the
 * bytes are only needed until then. Measured on the pipeline bench: a fresh IPC buffer per file was
 * ~40% of the memory allocated outside the JS heap, and that memory is what started most of the
 * workers' full collections (10 instead of 15 per 400,000 records once reused).
 */
class IpcAssembler extends RecordBatchStreamWriter {
  private static scratch = new Uint8Array(1 << 20);
  /** Largest buffer kept between files; a larger stream gets a buffer of its own. */
  private static readonly KEEP_BYTES = 64 << 20;
  private readonly chunks: Uint8Array[] = [];
  private bytes = 0;

  protected override _write(chunk: ArrayBufferView | ArrayBuffer | string | null | undefined): this {
    if (!this._started || chunk === null || chunk === undefined) return this;
    const view = ArrayBuffer.isView(chunk) ? new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength) : typeof chunk === 'string' ? new TextEncoder().encode(chunk) : new Uint8Array(chunk);
    if (view.byteLength === 0) return this;
    this.chunks.push(view);
    this.bytes += view.byteLength;
    this._position += view.byteLength;
    return this;
  }

  /** The stream of `table`, valid until the next call. */
  static streamOf(table: Table): Uint8Array {
    const writer = new IpcAssembler();
    writer.writeAll(table);
    let out = IpcAssembler.scratch;
    if (writer.bytes > out.length) {
      out = new Uint8Array(Math.max(writer.bytes, out.length * 2));
      if (out.length <= IpcAssembler.KEEP_BYTES) IpcAssembler.scratch = out;
    }
    let at = 0;
    for (const c of writer.chunks) {
      out.set(c, at);
      at += c.byteLength;
    }
    return out.subarray(0, at);
  }
}

/** Encode `table` as a Parquet file. */
export function encodeParquet(table: Table): Uint8Array {
  try {
    const wasm = WasmTable.fromIPCStream(IpcAssembler.streamOf(table));
    // writeParquet consumes the wasm table.
    return writeParquet(wasm, writerProperties(table));
  } catch (err) {
    throw new ApiError('server_error', `writing a collection file failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
}
