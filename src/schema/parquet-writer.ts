import { tableToIPC, type Table } from 'apache-arrow';
import { Compression, EnabledStatistics, Table as WasmTable, WriterPropertiesBuilder, writeParquet, type WriterProperties } from 'parquet-wasm/node';
import { ApiError } from '../errors.js';

/**
 * The one boundary to parquet-wasm: an Arrow table in, Parquet bytes out (zstd-compressed, one row
 * group up to 1M rows). Its failures become a catalogue error carrying the cause.
 */

function writerProperties(): WriterProperties {
  // Built per file: writeParquet takes ownership of the properties (a reused one silently falls
  // back to the defaults, uncompressed).
  // Documents are nearly all distinct: a dictionary attempt and min/max statistics over them cost
  // time for nothing (measured: ~20% of the encode).
  return new WriterPropertiesBuilder()
    .setCompression(Compression.ZSTD)
    .setMaxRowGroupSize(1_000_000)
    .setCreatedBy('sluice')
    .setColumnDictionaryEnabled('_sluice_doc', false)
    .setColumnStatisticsEnabled('_sluice_doc', EnabledStatistics.None)
    .build();
}

/** Encode `table` as a Parquet file. */
export function encodeParquet(table: Table): Uint8Array {
  try {
    const wasm = WasmTable.fromIPCStream(tableToIPC(table, 'stream'));
    // writeParquet consumes the wasm table.
    return writeParquet(wasm, writerProperties());
  } catch (err) {
    throw new ApiError('server_error', `writing a collection file failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
}
