import type { Database, Key } from 'lmdb';
import type { BatchFormat } from '../records/split.js';
import { openPlain, type Store } from '../store/db.js';

/**
 * Index value: an entry's metadata (a restart rebuilds the counters, and a lease builds entries,
 * without decoding bodies). `bytes`, the body's length, sizes a lease's buffer before its bodies
 * are read (absent on entries of earlier releases: their bodies are measured).
 */
export type IndexValue = [records: number, projectId: string, receivedAt: number, format: BatchFormat, bytes?: number];

/**
 * The `spool_meta` database with its value codec. Values are written in a fixed binary layout into
 * slabs that are never rewritten (lmdb keeps a pointer to a put's value until its transaction
 * commits): a msgpack encode of the 5-element array was the largest piece of the index put, paid
 * on every single-record request. Values written by earlier releases (msgpack arrays) still read.
 *
 * Layout: VERSION (1 byte), format code (1), records (u32), received at (f64), body bytes (f64),
 * project id length (u16), project id (UTF-8). Little-endian. A msgpack array starts with
 * 0x90–0x9f or 0xdc/0xdd, never VERSION.
 */
export function openSpoolIndex(store: Store): Database<IndexValue, [string, number]> {
  // lmdb's own msgpack decoder, for values of earlier releases (msgpackr is lmdb's, not ours).
  const legacy = (
    openPlain<unknown, Key>(store, 'spool_meta') as unknown as { decoder: { decode(b: Uint8Array): unknown } }
  ).decoder;
  const encoder = {
    encode: encodeIndexValue,
    decode: (bytes: Uint8Array, size?: unknown): IndexValue => {
      const end = typeof size === 'number' ? size : bytes.length;
      if (bytes[0] === VERSION) return decodeIndexValue(bytes, end);
      return legacy.decode(end === bytes.length ? bytes : bytes.subarray(0, end)) as IndexValue;
    },
  };
  return store.root.openDB<IndexValue, [string, number]>({ name: 'spool_meta', encoder } as never);
}

const VERSION = 0x01;
const FORMATS: readonly BatchFormat[] = ['object', 'array', 'ndjson'];
const HEADER = 1 + 1 + 4 + 8 + 8 + 2;
const SLAB_BYTES = 64 * 1024;

/** A Buffer that lmdb writes from `start` to `end` (as it does msgpackr's reused buffer). */
type Slab = Buffer & { start: number; end: number; view: DataView };

let slab = newSlab();
let at = 0;

function newSlab(): Slab {
  const b = Buffer.allocUnsafeSlow(SLAB_BYTES) as Slab;
  b.start = 0;
  b.end = 0;
  b.view = new DataView(b.buffer, 0, SLAB_BYTES);
  return b;
}

/**
 * Encode into the current slab past every value written before (a put's value stays untouched
 * until lmdb has written it: a full slab is left to the puts that point into it, and a new one
 * taken). Returns the slab with `start`/`end` set: lmdb reads them at once, in `put`. (DataView
 * writes: Buffer's writeDoubleLE and friends cost about twice as much here.)
 */
export function encodeIndexValue(value: IndexValue): Buffer {
  const projectId = value[1];
  const need = HEADER + projectId.length * 3;
  if (need > SLAB_BYTES) return encodeAlone(value);
  if (at + need > SLAB_BYTES) {
    slab = newSlab();
    at = 0;
  }
  const b = slab;
  const view = b.view;
  const start = at;
  const bytes = value[4];
  b[start] = VERSION;
  b[start + 1] = formatCode(value[3]);
  view.setUint32(start + 2, value[0], true);
  view.setFloat64(start + 6, value[2], true);
  // -1: no size given (IndexValue's `bytes` is optional).
  view.setFloat64(start + 14, bytes === undefined ? -1 : bytes, true);
  const n = writeText(b, projectId, start + HEADER);
  view.setUint16(start + 22, n, true);
  at = start + HEADER + n;
  b.start = start;
  b.end = at;
  return b;
}

function formatCode(format: BatchFormat): number {
  return format === 'ndjson' ? 2 : format === 'array' ? 1 : 0;
}

/** A value too large for a slab (a project id of over 20,000 characters: not in practice). */
function encodeAlone(value: IndexValue): Buffer {
  const [records, projectId, receivedAt, format, bytes] = value;
  const id = Buffer.from(projectId, 'utf8');
  const b = Buffer.alloc(HEADER + id.length);
  b[0] = VERSION;
  b[1] = formatCode(format);
  b.writeUInt32LE(records, 2);
  b.writeDoubleLE(receivedAt, 6);
  b.writeDoubleLE(bytes ?? -1, 14);
  b.writeUInt16LE(id.length, 22);
  id.copy(b, HEADER);
  return b;
}

/** ASCII by hand (ids are ASCII: a native write per put cost more), anything else as UTF-8. */
function writeText(b: Buffer, text: string, at: number): number {
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x7f) return b.write(text, at, 'utf8');
    b[at + i] = c;
  }
  return n;
}

export function decodeIndexValue(bytes: Uint8Array, end: number): IndexValue {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, end);
  const format = FORMATS[view[1]!];
  const n = view.readUInt16LE(22);
  if (format === undefined || HEADER + n > end) throw new Error('spool index value is corrupt');
  const bytesField = view.readDoubleLE(14);
  const value: IndexValue = [
    view.readUInt32LE(2),
    view.toString('utf8', HEADER, HEADER + n),
    view.readDoubleLE(6),
    format,
  ];
  if (bytesField >= 0) value.push(bytesField);
  return value;
}
