import { createReadStream, statSync, type ReadStream } from 'node:fs';
import { extname } from 'node:path';
import { Readable } from 'node:stream';
import { usageError } from '../errors.js';
import { csvRecords } from './csv-reader.js';
import { fileChunks } from './file-chunks.js';
import type { InputRecord } from './input-record.js';
import { jsonArrayRecords } from './json-array-reader.js';
import { ndjsonRecords } from './ndjson-reader.js';

export type InputFormat = 'ndjson' | 'json' | 'csv';

export interface Input {
  format: InputFormat;
  /** Bytes in the file, or null for stdin (no ETA). */
  size: number | null;
  mtimeMs: number | null;
  records: AsyncIterable<InputRecord>;
  /**
   * NDJSON only: the raw bytes, for `ndjsonBatches` (read either this or `records`, not both). From a
   * file, each chunk is valid only until the next one is asked for.
   */
  chunks: AsyncIterable<Buffer> | null;
}

const CHUNK = 1024 * 1024;

/**
 * Open a file (or `-`, stdin) as a stream of records. The format is `--format`, else the extension
 * (`.csv`, `.json`, `.ndjson`/`.jsonl`), else sniffed: a first non-blank `[` is a JSON array,
 * anything else NDJSON (a single JSON object is one NDJSON record).
 */
export async function openInput(
  path: string,
  format: InputFormat | undefined,
  csv: { cast: boolean; delimiter: string },
): Promise<Input> {
  let size: number | null = null;
  let mtimeMs: number | null = null;
  if (path !== '-') {
    try {
      const st = statSync(path);
      if (!st.isFile()) throw usageError(`${path} is not a file`);
      size = st.size;
      mtimeMs = st.mtimeMs;
    } catch (err) {
      if ((err as { exitCode?: number }).exitCode) throw err;
      throw usageError(`Cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  const open = (): Readable =>
    path === '-' ? process.stdin : (createReadStream(path, { highWaterMark: CHUNK }) as ReadStream);
  let fmt = format ?? byExtension(path);
  if (!fmt && path !== '-') fmt = (await firstByte(fileChunks(path, CHUNK))) === 0x5b ? 'json' : 'ndjson';
  if (fmt === 'ndjson' && path !== '-') {
    // A file of NDJSON is read into one reused buffer (no garbage per chunk); the generators open
    // the file only when iterated, and the command reads one of them.
    const chunks = () => fileChunks(path, CHUNK);
    return { format: fmt, size, mtimeMs, records: ndjsonRecords(chunks()), chunks: chunks() };
  }
  let stream = open();
  if (!fmt) {
    const { first, rest } = await peek(stream);
    fmt = first === 0x5b ? 'json' : 'ndjson';
    stream = rest;
  }
  const records =
    fmt === 'csv'
      ? csvRecords(stream, csv)
      : fmt === 'json'
        ? jsonArrayRecords(stream as AsyncIterable<Buffer>)
        : ndjsonRecords(stream as AsyncIterable<Buffer>);
  return { format: fmt, size, mtimeMs, records, chunks: fmt === 'ndjson' ? (stream as AsyncIterable<Buffer>) : null };
}

function byExtension(path: string): InputFormat | undefined {
  const ext = extname(path).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.json') return undefined; // an object per line is common in .json files too: sniff
  if (ext === '.ndjson' || ext === '.jsonl') return 'ndjson';
  return undefined;
}

/** The first byte that is not blank (nor a BOM) of `chunks`, which it stops reading there. */
async function firstByte(chunks: AsyncIterable<Buffer>): Promise<number | undefined> {
  for await (const chunk of chunks) for (const b of chunk) if (!BLANK.has(b)) return b;
  return undefined;
}

/** Bytes skipped when sniffing the format: JSON whitespace and the UTF-8 BOM's bytes. */
const BLANK = new Set([0x20, 0x0a, 0x0d, 0x09, 0xef, 0xbb, 0xbf]);

/** The first non-blank byte of a stream, and a stream that still yields everything. */
async function peek(stream: Readable): Promise<{ first: number | undefined; rest: Readable }> {
  const seen: Buffer[] = [];
  const it = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let first: number | undefined;
  while (first === undefined) {
    const next = await it.next();
    if (next.done) break;
    seen.push(next.value);
    for (const b of next.value) {
      if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09 && b !== 0xef && b !== 0xbb && b !== 0xbf) {
        first = b;
        break;
      }
    }
  }
  async function* replay() {
    yield* seen;
    for (;;) {
      const next = await it.next();
      if (next.done) return;
      yield next.value;
    }
  }
  return { first, rest: Readable.from(replay(), { objectMode: false }) };
}
