import { falseEnd, nullEnd, numberSkip, skipSpace, stringEnd, plainStringEnd, trueEnd } from '../records/json-bytes.js';
import { timestampMs } from '../timestamp.js';
import { MAX_NESTING_DEPTH, MAX_RECORD_BYTES, MAX_RECORDS_PER_REQUEST } from './limits.js';

/**
 * A fast yes for NDJSON bodies: every line is checked against the JSON grammar on its bytes (the
 * readers of records/json-bytes.ts, which the record templates share), with
 * no string decoded and no object built. On the main thread JSON.parse of each line was most of
 * what ingest cost for records of a few KB (≈ one parse per record, the pipeline's worker doing
 * the second), and its objects were thrown away at once.
 *
 * It only ever says "accepted" (the record count) or "not sure" (-1): a line that breaks the
 * grammar, a record that is not an object, too large or too deep, a top-level key with an escape
 * (it might spell `timestamp`), a `timestamp` that is not valid, too many records. "Not sure"
 * sends the body through the exact path (framing.ts `parseLines`, JSON.parse per line), which
 * accepts or refuses it with its message, so a refusal is always JSON.parse's. Accepting is
 * exact: what this accepts, JSON.parse accepts with the same count (test/ingest/ndjson-check.test.ts
 * compares them on seeded mutations). The body must be valid UTF-8 (checked before).
 */
export function checkNdjson(body: Buffer): number {
  const size = body.length;
  let records = 0;
  let from = 0;
  while (from < size) {
    let nl = body.indexOf(0x0a, from);
    if (nl === -1) nl = size;
    let i = skipSpace(body, from, nl);
    if (i < nl) {
      if (nl - from > MAX_RECORD_BYTES || body[i] !== LBRACE) return -1;
      tsStart = -1;
      i = object(body, i, nl, 1, true);
      if (i < 0 || skipSpace(body, i, nl) !== nl) return -1;
      if (tsStart >= 0 && !timestampValid(body, tsStart, tsEnd)) return -1;
      if (++records > MAX_RECORDS_PER_REQUEST) return -1;
    }
    from = nl + 1;
  }
  return records;
}

/**
 * Whether the JSON value in `b[s, e)` is a valid `timestamp`. Epoch milliseconds of up to 15 digits
 * (every one now) are read off the bytes, exactly as JSON.parse would read them: no string, no parse.
 */
function timestampValid(b: Buffer, s: number, e: number): boolean {
  if (e - s <= 15) {
    let n = 0;
    let i = s;
    for (; i < e; i++) {
      const c = b[i]!;
      if (c < ZERO || c > NINE) break;
      n = n * 10 + (c - ZERO);
    }
    if (i === e) return !Number.isNaN(timestampMs(n));
  }
  return !Number.isNaN(timestampMs(JSON.parse(b.toString('utf8', s, e))));
}

// The grammar's tokens are read by records/json-bytes.ts; the bytes this walk compares stay local constants:
// an imported binding is a module cell read (and TDZ-checked) at every use, which these loops would feel.
const QUOTE = 0x22;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

/** Value range of the last top-level `timestamp` of the record being checked (-1: none). */
let tsStart = -1;
let tsEnd = -1;

/** `timestamp` as bytes: a top-level key spelled so is the record's event time. */
const TIMESTAMP = Buffer.from('"timestamp"');

/** End of the value at `i` (after skipping whitespace), or -1. */
function value(b: Buffer, i: number, e: number, depth: number): number {
  i = skipSpace(b, i, e);
  if (i >= e) return -1;
  const c = b[i]!;
  if (c === QUOTE) return stringEnd(b, i, e);
  if (c === LBRACE) return object(b, i, e, depth + 1, false);
  if (c === LBRACKET) return array(b, i, e, depth + 1);
  if (c === MINUS || (c >= ZERO && c <= NINE)) return numberSkip(b, i, e);
  if (c === 0x74) return trueEnd(b, i, e);
  if (c === 0x66) return falseEnd(b, i, e);
  if (c === 0x6e) return nullEnd(b, i, e);
  return -1;
}

/** End of the object at `i` (its `{`), or -1. `top`: the record itself (its `timestamp` is noted). */
function object(b: Buffer, i: number, e: number, depth: number, top: boolean): number {
  if (depth > MAX_NESTING_DEPTH) return -1;
  i = skipSpace(b, i + 1, e);
  if (b[i] === RBRACE) return i + 1;
  for (;;) {
    if (i >= e || b[i] !== QUOTE) return -1;
    const keyStart = i;
    // A top-level key with an escape may spell `timestamp`: the exact path decides.
    i = top ? plainStringEnd(b, i, e) : stringEnd(b, i, e);
    if (i < 0) return -1;
    const isTimestamp =
      top && i - keyStart === TIMESTAMP.length && b.compare(TIMESTAMP, 0, TIMESTAMP.length, keyStart, i) === 0;
    i = skipSpace(b, i, e);
    if (b[i] !== COLON) return -1;
    const valueStart = skipSpace(b, i + 1, e);
    i = value(b, valueStart, e, depth);
    if (i < 0) return -1;
    // JSON.parse keeps the last of duplicate keys.
    if (isTimestamp) {
      tsStart = valueStart;
      tsEnd = i;
    }
    i = skipSpace(b, i, e);
    if (b[i] === RBRACE) return i + 1;
    if (b[i] !== COMMA) return -1;
    i = skipSpace(b, i + 1, e);
  }
}

/** End of the array at `i` (its `[`), or -1. */
function array(b: Buffer, i: number, e: number, depth: number): number {
  if (depth > MAX_NESTING_DEPTH) return -1;
  i = skipSpace(b, i + 1, e);
  if (b[i] === RBRACKET) return i + 1;
  for (;;) {
    i = value(b, i, e, depth);
    if (i < 0) return -1;
    i = skipSpace(b, i, e);
    if (b[i] === RBRACKET) return i + 1;
    if (b[i] !== COMMA) return -1;
    i++;
  }
}
