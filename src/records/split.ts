/**
 * Splitting a body into its records by bytes, without parsing them: the ingest front counts and
 * locates records with it, the pipeline's decode stage reads each record from its range. Below both.
 */

import { isSpace } from './json-bytes.js';

/**
 * How a body lays out its records: NDJSON lines, the elements of one JSON array, or one object. Kept
 * with each spool entry so the body is split again, never re-encoded.
 */
export type BatchFormat = 'ndjson' | 'array' | 'object';

const NL = 10;
const CR = 13;

/** Byte ranges of the records of one body: lines, array elements, or the whole object. */
export function recordRanges(format: BatchFormat, body: Uint8Array, out: number[]): void {
  if (format === 'array') return arrayElementRanges(body, out);
  if (format === 'object') {
    let s = 0;
    let e = body.length;
    // A UTF-8 BOM and surrounding whitespace are not part of the document.
    if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) s = 3;
    while (s < e && isSpace(body[s]!)) s++;
    while (e > s && isSpace(body[e - 1]!)) e--;
    if (e > s) out.push(s, e);
    return;
  }
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let start = 0;
  const n = buf.length;
  while (start < n) {
    let end = buf.indexOf(NL, start);
    if (end === -1) end = n;
    let s = start;
    let e = end;
    if (e > s && buf[e - 1] === CR) e--;
    while (s < e && isSpace(buf[s]!)) s++;
    while (e > s && isSpace(buf[e - 1]!)) e--;
    if (e > s) out.push(s, e);
    start = end + 1;
  }
}

/** Top-level elements of a JSON array, by a byte scan aware of strings (UTF-8 never reuses ASCII bytes). */
function arrayElementRanges(body: Uint8Array, out: number[]): void {
  let i = 0;
  const n = body.length;
  while (i < n && body[i] !== 0x5b) i++;
  i++;
  let depth = 0;
  let start = -1;
  let inString = false;
  for (; i < n; i++) {
    const c = body[i]!;
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) {
      inString = true;
      if (start === -1) start = i;
    } else if (c === 0x7b || c === 0x5b) {
      if (start === -1) start = i;
      depth++;
    } else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) {
        // The closing bracket of the array itself.
        if (start !== -1) pushTrimmed(body, start, i, out);
        return;
      }
      depth--;
    } else if (c === 0x2c && depth === 0) {
      if (start !== -1) pushTrimmed(body, start, i, out);
      start = -1;
    } else if (start === -1 && !isSpace(c)) start = i;
  }
}

function pushTrimmed(body: Uint8Array, s: number, e: number, out: number[]): void {
  while (e > s && isSpace(body[e - 1]!)) e--;
  if (e > s) out.push(s, e);
}
