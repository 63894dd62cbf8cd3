/**
 * Decode stage: spool entries (each one request's body as sent) into rows — the parsed record, the
 * byte range of the record in its body (so files keep documents exactly as sent), and its event
 * time. Bodies were validated at the front; a record that still fails to parse is kept as a row
 * with `record` undefined (stored unclassified), never dropped and never thrown.
 */

import { isAscii, isUtf8 } from 'node:buffer';
import { recordRanges, type BatchFormat } from './split.js';
import { timestampMs } from '../timestamp.js';

/** What the decode stage needs of a spool entry. */
export interface BatchEntry {
  seq: number;
  received_at: number;
  format: BatchFormat;
  body: Uint8Array;
}

export interface DecodedRows {
  count: number;
  /**
   * Parsed records still held; `undefined` where the record was let go after its first use (see
   * `decodeEntries`) or did not parse. `recordOf` reads either way.
   */
  records: unknown[];
  /** Index into `entries` of each row. */
  entry: Int32Array;
  /** Row number within its entry. */
  ordinal: Int32Array;
  /** Byte range of the record in its entry's body. */
  start: Int32Array;
  end: Int32Array;
  /** Event time, epoch ms: the record's `timestamp` (ISO or epoch ms) or its receive time. */
  ts: Float64Array;
  entries: readonly BatchEntry[];
  /** Each entry's body as a Buffer (same memory). */
  bodies: Buffer[];
}

/** Characters decoded at a time from an ASCII body (a young-generation string). */
const DECODE_WINDOW = 32 * 1024;

/** Event time of a record: its `timestamp` when valid (timestamp.ts), else `fallback`. */
export function eventTime(record: unknown, fallback: number): number {
  if (typeof record !== 'object' || record === null) return fallback;
  const ts = (record as { timestamp?: unknown }).timestamp;
  if (ts === undefined) return fallback;
  const ms = timestampMs(ts);
  return Number.isNaN(ms) ? fallback : ms;
}

/**
 * What the decode stage hands each record to (process-batch.ts fuses the next stages into it).
 * Records that live through a whole batch of tens of thousands are copied by every scavenge and
 * promoted; records used once and dropped die young, and records never parsed cost nothing.
 */
export interface RecordVisitor {
  /**
   * Offered each record's bytes first (bodies of valid UTF-8 only): true when it took the row
   * itself, its event time (`rows.ts`) included, so the record is never parsed here.
   */
  bytes?(row: number, body: Buffer, start: number, end: number, receivedAt: number): boolean;
  /** Each parsed record (undefined when it did not parse): true lets the rows keep it. */
  record(row: number, record: unknown, receivedAt: number): boolean;
}

/**
 * Decode every entry of a batch into rows, in order (entry by entry, record by record). With
 * `visitorFor` (called once with the rows, before the first record), only the records its visitor
 * asks to keep are held in `records`.
 */
export function decodeEntries(
  entries: readonly BatchEntry[],
  visitorFor?: (rows: DecodedRows) => RecordVisitor,
): DecodedRows {
  const ranges: number[][] = [];
  let count = 0;
  for (const e of entries) {
    const r: number[] = [];
    recordRanges(e.format, e.body, r);
    ranges.push(r);
    count += r.length / 2;
  }
  const rows: DecodedRows = {
    count,
    records: new Array<unknown>(count),
    entry: new Int32Array(count),
    ordinal: new Int32Array(count),
    start: new Int32Array(count),
    end: new Int32Array(count),
    ts: new Float64Array(count),
    entries,
    bodies: entries.map((e) => Buffer.from(e.body.buffer, e.body.byteOffset, e.body.byteLength)),
  };
  const visit = visitorFor?.(rows);
  const bytes = visit?.bytes?.bind(visit);
  let row = 0;
  for (let ei = 0; ei < entries.length; ei++) {
    const e = entries[ei]!;
    const buf = rows.bodies[ei]!;
    const r = ranges[ei]!;
    // An ASCII body is decoded a window at a time (latin1: a plain copy, no validation) and its
    // records are cheap slices of the window: one native call per window, not per record. Windows
    // stay small enough for the young generation; a whole body as one string would be a large
    // object, old at once, and push the heap towards full collections.
    const ascii = isAscii(buf);
    const offerBytes = bytes !== undefined && (ascii || isUtf8(buf));
    let window = '';
    let windowStart = 0;
    let windowEnd = 0;
    for (let k = 0; k < r.length; k += 2, row++) {
      const s = r[k]!;
      const end = r[k + 1]!;
      rows.entry[row] = ei;
      rows.ordinal[row] = k >> 1;
      rows.start[row] = s;
      rows.end[row] = end;
      if (offerBytes && bytes!(row, buf, s, end, e.received_at)) continue;
      let text: string;
      if (!ascii) text = buf.toString('utf8', s, end);
      else {
        if (s < windowStart || end > windowEnd) {
          windowStart = s;
          windowEnd = Math.max(end, Math.min(buf.length, s + DECODE_WINDOW));
          window = buf.toString('latin1', windowStart, windowEnd);
        }
        text = window.slice(s - windowStart, end - windowStart);
      }
      const record = parseJson(text);
      rows.ts[row] = eventTime(record, e.received_at);
      if (visit === undefined || visit.record(row, record, e.received_at)) rows.records[row] = record;
    }
  }
  return rows;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The record of `row`: held, or parsed again from its bytes (undefined when it does not parse). */
export function recordOf(rows: DecodedRows, row: number): unknown {
  const held = rows.records[row];
  if (held !== undefined) return held;
  return parseJson(rows.bodies[rows.entry[row]!]!.toString('utf8', rows.start[row]!, rows.end[row]!));
}
