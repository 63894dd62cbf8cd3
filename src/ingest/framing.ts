import { isUtf8 } from 'node:buffer';
import { ApiError } from '../errors.js';
import { recordRanges, type BatchFormat } from '../records/split.js';
import { timestampMs } from '../timestamp.js';
import { MAX_NESTING_DEPTH, MAX_RECORD_BYTES, MAX_RECORDS_PER_REQUEST } from './limits.js';
import { checkNdjson } from './ndjson-check.js';

export interface ParsedBatch {
  format: BatchFormat;
  /** Number of records. */
  records: number;
}

/**
 * Validate an ingest body (already decompressed): one JSON object, a JSON array of objects, or
 * NDJSON (one object per line; blank lines are skipped). Every record must be a JSON object whose
 * `timestamp`, when present, is an ISO 8601 string or epoch milliseconds. All or nothing: the first
 * bad record throws `frame_invalid` naming its `line` (NDJSON, 1-based) or `index` (array, 0-based).
 * `ndjson` says the sender declared `application/x-ndjson` (no single-object fallback then).
 */
export function parseBatch(body: Buffer, ndjson = false): ParsedBatch {
  const first = firstSignificantByte(body);
  if (first === -1)
    throw new ApiError(
      'empty_payload',
      'The body carries no records: send a JSON object, an array of objects, or NDJSON',
    );
  const array = body[first] === 0x5b /* [ */ && !ndjson;
  // Decoding would replace bad bytes silently and the stored record would not be what was sent.
  if (!isUtf8(body)) throw notUtf8(body, array);
  if (array) return parseArray(body);
  return parseLines(body, ndjson);
}

/** The records of a spooled batch, in order (the pipeline's side of `parseBatch`). */
export function decodeRecords(format: BatchFormat, body: Uint8Array): Record<string, unknown>[] {
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (format === 'array') return JSON.parse(buf.toString('utf8')) as Record<string, unknown>[];
  if (format === 'object') return [JSON.parse(buf.toString('utf8')) as Record<string, unknown>];
  const out: Record<string, unknown>[] = [];
  forEachLine(buf, (line) => {
    out.push(JSON.parse(line) as Record<string, unknown>);
  });
  return out;
}

function parseArray(body: Buffer): ParsedBatch {
  // Each element takes at least 3 bytes (`{}` and a comma): only a body that long can carry too
  // many, and then it is counted by a byte scan before any of it is parsed.
  if (body.length > 3 * MAX_RECORDS_PER_REQUEST) {
    const ranges: number[] = [];
    recordRanges('array', body, ranges);
    if (ranges.length / 2 > MAX_RECORDS_PER_REQUEST) throw tooMany(ranges.length / 2);
  }
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw arrayInvalid(body, (err as Error).message);
  }
  const list = value as unknown[];
  if (list.length === 0) throw new ApiError('empty_payload', 'The body is an empty array: send at least one record');
  if (list.length > MAX_RECORDS_PER_REQUEST) throw tooMany(list.length);
  for (let i = 0; i < list.length; i++) {
    const problem = recordProblem(list[i]) ?? (tooDeep(list[i] as object) ? DEEP : null);
    if (problem) throw invalid(`Record at index ${i} ${problem}`, { index: i, reason: problem });
  }
  return { format: 'array', records: list.length };
}

/** The refusal of an array body that is not valid JSON: the first element that does not parse, when one is to blame. */
function arrayInvalid(body: Buffer, parserMessage: string): ApiError {
  const ranges: number[] = [];
  recordRanges('array', body, ranges);
  for (let k = 0; k < ranges.length; k += 2) {
    const message = parserMessageOf(body.toString('utf8', ranges[k], ranges[k + 1]));
    if (message !== null) {
      const problem = `is not valid JSON: ${message}`;
      return invalid(`Record at index ${k / 2} ${problem}`, { index: k / 2, reason: problem });
    }
  }
  // Every element parses: the array itself is malformed (brackets, commas).
  const problem = `is not a valid JSON array: ${parserMessage}`;
  return invalid(`The body ${problem}`, { reason: problem });
}

/** The JSON parser's complaint about `text`, or null when it parses. */
function parserMessageOf(text: string): string | null {
  try {
    JSON.parse(text);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** The refusal of a body that is not UTF-8, naming the first line (or array element) that is not. */
function notUtf8(body: Buffer, array: boolean): ApiError {
  const problem = 'is not valid UTF-8: send JSON text encoded as UTF-8';
  const ranges: number[] = [];
  recordRanges(array ? 'array' : 'ndjson', body, ranges);
  for (let k = 0; k < ranges.length; k += 2) {
    if (isUtf8(body.subarray(ranges[k], ranges[k + 1]))) continue;
    if (array) return invalid(`Record at index ${k / 2} ${problem}`, { index: k / 2, reason: problem });
    const line = lineOf(body, ranges[k]!);
    return invalid(`Line ${line} ${problem}`, { line, reason: problem });
  }
  return invalid(`The body ${problem}`, { reason: problem });
}

/** 1-based line number of byte `offset`. */
function lineOf(body: Buffer, offset: number): number {
  let line = 1;
  for (let at = body.indexOf(0x0a); at !== -1 && at < offset; at = body.indexOf(0x0a, at + 1)) line++;
  return line;
}

function parseLines(body: Buffer, declaredNdjson: boolean): ParsedBatch {
  // Most bodies are accepted by the byte check alone; anything it is unsure of is parsed below.
  const checked = checkNdjson(body);
  if (checked > 0) return { format: 'ndjson', records: checked };
  let records = 0;
  const bad = forEachLine(body, (line, lineNo) => {
    if (line.length * 3 > MAX_RECORD_BYTES && Buffer.byteLength(line) > MAX_RECORD_BYTES) {
      return { lineNo, problem: `is larger than the record limit of ${MAX_RECORD_BYTES} bytes` };
    }
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      return { lineNo, problem: `is not valid JSON: ${(err as Error).message}` };
    }
    const problem = recordProblem(value);
    if (problem) return { lineNo, problem };
    // Nesting needs one character per level: short lines (the usual case) cannot be too deep.
    if (line.length > MAX_NESTING_DEPTH && tooDeep(value as object)) return { lineNo, problem: DEEP };
    if (++records > MAX_RECORDS_PER_REQUEST) throw tooMany(records);
    return undefined;
  });
  if (bad) {
    // A pretty-printed single object spans lines; accept it when the whole body is one object.
    if (!declaredNdjson && records === 0) {
      const text = body.toString('utf8');
      const whole = tryParse(text);
      if (whole !== undefined && recordProblem(whole) === null) {
        if (text.length > MAX_NESTING_DEPTH && tooDeep(whole as object))
          throw invalid(`The record ${DEEP}`, { line: 1, reason: DEEP });
        return { format: 'object', records: 1 };
      }
    }
    throw invalid(`Line ${bad.lineNo} ${bad.problem}`, { line: bad.lineNo, reason: bad.problem });
  }
  if (records === 0)
    throw new ApiError(
      'empty_payload',
      'The body carries no records: send a JSON object, an array of objects, or NDJSON',
    );
  return { format: 'ndjson', records };
}

type LineProblem = { lineNo: number; problem: string } | undefined;

/**
 * Call `fn` for each non-blank line (without its `\r\n`/`\n`), stopping at the first problem it
 * returns. Line numbers are 1-based and count blank lines.
 *
 * The body is decoded to text a slice of about DECODE_SLICE bytes at a time, cut after a newline
 * (a UTF-8 sequence never contains byte 0x0a). A whole 200 KB body as one string lands in V8's
 * large-object space, which under batched load set off a full GC every few dozen requests.
 */
function forEachLine(body: Buffer, fn: (line: string, lineNo: number) => LineProblem | void): LineProblem {
  let lineNo = 0;
  let from = 0;
  const size = body.length;
  while (from < size) {
    let to = size;
    if (size - from > DECODE_SLICE) {
      const nl = body.indexOf(0x0a, from + DECODE_SLICE);
      if (nl !== -1) to = nl + 1;
    }
    const text = body.toString('utf8', from, to);
    let start = 0;
    const n = text.length;
    while (start < n) {
      let end = text.indexOf('\n', start);
      if (end === -1) end = n;
      lineNo++;
      let stop = end;
      if (stop > start && text.charCodeAt(stop - 1) === 13) stop--;
      if (stop > start) {
        const line = text.slice(start, stop);
        if (!isSpace(line.charCodeAt(0)) || line.trim().length > 0) {
          const problem = fn(line, lineNo);
          if (problem) return problem;
        }
      }
      start = end + 1;
    }
    from = to;
  }
  return undefined;
}

/** Bytes decoded to one string at a time: well under V8's large-object threshold (128 KB). */
const DECODE_SLICE = 32 * 1024;

/** Why `value` is not an acceptable record, or null. */
function recordProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `must be a JSON object, not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`;
  }
  const ts = (value as { timestamp?: unknown }).timestamp;
  if (ts === undefined) return null;
  if (!Number.isNaN(timestampMs(ts))) return null;
  return 'has an invalid "timestamp": send an ISO 8601 string (2026-01-31T12:00:00Z) or epoch milliseconds (0 to 8.64e15)';
}

/** Index of the first byte that is not ASCII whitespace, or -1. */
function firstSignificantByte(body: Buffer): number {
  for (let i = 0; i < body.length; i++) if (!isSpace(body[i]!)) return i;
  return -1;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9 || c === 0xfeff;
}

function tryParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function invalid(message: string, details: Record<string, unknown>): ApiError {
  return new ApiError('frame_invalid', message, { details });
}

function tooMany(n: number): ApiError {
  return new ApiError(
    'payload_too_large',
    `The body carries ${n >= MAX_RECORDS_PER_REQUEST ? 'more than ' + MAX_RECORDS_PER_REQUEST : n} records; at most ${MAX_RECORDS_PER_REQUEST} per request`,
    {
      details: { limit_records: MAX_RECORDS_PER_REQUEST },
    },
  );
}

const DEEP = `is nested deeper than ${MAX_NESTING_DEPTH} levels of objects and arrays`;

/** The walk's stack of [value, depth] pairs, reused (one walk runs at a time). */
const walk: unknown[] = [];

/**
 * Whether a parsed record nests objects/arrays deeper than MAX_NESTING_DEPTH (the record is level 1).
 * Iterative with an explicit stack: a 100,000-level record must not overflow ours either.
 */
function tooDeep(record: object): boolean {
  walk.length = 0;
  walk.push(record, 1);
  while (walk.length > 0) {
    const depth = walk.pop() as number;
    const value = walk.pop() as object;
    if (depth > MAX_NESTING_DEPTH) {
      walk.length = 0;
      return true;
    }
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const child: unknown = value[i];
        if (typeof child === 'object' && child !== null) walk.push(child, depth + 1);
      }
    } else {
      for (const k in value) {
        const child = (value as Record<string, unknown>)[k];
        if (typeof child === 'object' && child !== null) walk.push(child, depth + 1);
      }
    }
  }
  return false;
}

/** The body without a leading UTF-8 byte order mark (JSON.parse and the pipeline refuse one). */
export function stripBom(body: Buffer): Buffer {
  return body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? body.subarray(3) : body;
}
