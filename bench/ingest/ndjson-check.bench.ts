/**
 * The NDJSON check (src/ingest/ndjson-check.ts) on the shared JSON byte readers (src/records/json-bytes.ts)
 * against the grammar readers it had of its own, kept below as a reference copy (`referenceCheck`, as of
 * commit 67384f3): both over one generated body of nested records (6.6 MB by default), on one core.
 * The ingest front runs this check on its main thread for every NDJSON body, so the shared readers
 * must cost nothing: the table's last column is each one's median time over the reference's.
 *
 * Besides tinybench's wall-clock medians, the same runs interleaved are timed by the process's CPU
 * time (less sensitive to a busy machine), reported as `cpu ratio`.
 *
 * Run: npm run build && node dist/bench/ingest/ndjson-check.bench.js
 * (BENCH_NDJSON_MB, default 6.6; BENCH_NDJSON_BODY=flat for small records of numbers instead).
 */
import { Bench } from 'tinybench';
import { checkNdjson } from '../../src/ingest/ndjson-check.js';
import { MAX_NESTING_DEPTH, MAX_RECORD_BYTES, MAX_RECORDS_PER_REQUEST } from '../../src/ingest/limits.js';
import { timestampMs } from '../../src/timestamp.js';
import { makeNestedRecords } from '../transform/nested-records.js';

// ---- The reference: the check's own grammar readers before they moved to records/json-bytes.ts. ----

function referenceCheck(body: Buffer): number {
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

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
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

/** JSON whitespace (and the `\r` of a CRLF line end, whitespace to JSON too). */
function skipSpace(b: Buffer, i: number, e: number): number {
  for (; i < e; i++) {
    const c = b[i]!;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
  }
  return i;
}

/** End of the value at `i` (after skipping whitespace), or -1. */
function value(b: Buffer, i: number, e: number, depth: number): number {
  i = skipSpace(b, i, e);
  if (i >= e) return -1;
  const c = b[i]!;
  if (c === QUOTE) return string(b, i, e);
  if (c === LBRACE) return object(b, i, e, depth + 1, false);
  if (c === LBRACKET) return array(b, i, e, depth + 1);
  if (c === MINUS || (c >= ZERO && c <= NINE)) return number(b, i, e);
  if (c === 0x74) return word(b, i, e, 0x72, 0x75, 0x65, -1); // true
  if (c === 0x66) return word(b, i, e, 0x61, 0x6c, 0x73, 0x65); // false
  if (c === 0x6e) return word(b, i, e, 0x75, 0x6c, 0x6c, -1); // null
  return -1;
}

/** End of the literal whose first byte is at `i` and whose next bytes are `c1`…`c4` (-1: none). */
function word(b: Buffer, i: number, e: number, c1: number, c2: number, c3: number, c4: number): number {
  const n = c4 < 0 ? 4 : 5;
  if (i + n > e || b[i + 1] !== c1 || b[i + 2] !== c2 || b[i + 3] !== c3 || (c4 >= 0 && b[i + 4] !== c4)) return -1;
  return i + n;
}

const isDigit = (c: number | undefined) => c !== undefined && c >= ZERO && c <= NINE;

/** End of the number at `i`: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, or -1. */
function number(b: Buffer, i: number, e: number): number {
  if (b[i] === MINUS) i++;
  if (i >= e) return -1;
  if (b[i] === ZERO) i++;
  else if (isDigit(b[i])) while (i < e && isDigit(b[i])) i++;
  else return -1;
  if (i < e && b[i] === 0x2e) {
    i++;
    if (i >= e || !isDigit(b[i])) return -1;
    while (i < e && isDigit(b[i])) i++;
  }
  if (i < e && (b[i] === 0x65 || b[i] === 0x45)) {
    i++;
    if (i < e && (b[i] === 0x2b || b[i] === MINUS)) i++;
    if (i >= e || !isDigit(b[i])) return -1;
    while (i < e && isDigit(b[i])) i++;
  }
  return i;
}

/** Whether the last string `string` read had an escape. */
let escaped = false;

const isHex = (c: number | undefined) =>
  c !== undefined && ((c >= ZERO && c <= NINE) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66));

/** End (after the closing quote) of the string at `i`, or -1: no raw control character, JSON's escapes only. */
function string(b: Buffer, i: number, e: number): number {
  escaped = false;
  for (i++; i < e; i++) {
    const c = b[i]!;
    if (c === QUOTE) return i + 1;
    if (c < 0x20) return -1;
    if (c !== BACKSLASH) continue;
    escaped = true;
    const x = b[++i];
    if (x === 0x75) {
      if (!isHex(b[i + 1]) || !isHex(b[i + 2]) || !isHex(b[i + 3]) || !isHex(b[i + 4])) return -1;
      i += 4;
    } else if (
      !(
        x === QUOTE ||
        x === BACKSLASH ||
        x === 0x2f ||
        x === 0x62 ||
        x === 0x66 ||
        x === 0x6e ||
        x === 0x72 ||
        x === 0x74
      )
    )
      return -1;
  }
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
    i = string(b, i, e);
    if (i < 0) return -1;
    // A top-level key with an escape may spell `timestamp`: the exact path decides.
    if (top && escaped) return -1;
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

// ---- The driver. ----

const MB = Number(process.env.BENCH_NDJSON_MB ?? 6.6);
const FLAT = process.env.BENCH_NDJSON_BODY === 'flat';

/** Records of about 2–5 KB (nested) or 150 bytes (flat) until the body reaches `MB`. */
function body(): { bytes: Buffer; records: number } {
  const lines: string[] = [];
  let size = 0;
  for (let batch = 0; size < MB * 1e6; batch++) {
    const recs = FLAT
      ? Array.from({ length: 1000 }, (_, k) => {
          const i = batch * 1000 + k;
          return {
            timestamp: 1795846863985 + i,
            user: { id: `u${i % 977}`, plan: i % 3 ? 'pro' : 'free', score: (i * 7.31) % 1000 },
            items: [{ sku: `s${i % 50}`, qty: i % 5, price: 19.99 + (i % 7) }],
            path: `/a/b/${i % 13}`,
            ms: i % 250,
            ok: i % 2 === 0,
          };
        })
      : makeNestedRecords(200, batch + 1);
    for (const r of recs) {
      const line = JSON.stringify(r);
      if (size + line.length + 1 > MB * 1e6)
        return { bytes: Buffer.from(`${lines.join('\n')}\n`), records: lines.length };
      lines.push(line);
      size += line.length + 1;
    }
  }
  return { bytes: Buffer.from(`${lines.join('\n')}\n`), records: lines.length };
}

const { bytes, records } = body();
for (const [name, check] of [
  ['shared', checkNdjson],
  ['reference', referenceCheck],
] as const) {
  const n = check(bytes);
  if (n !== records) throw new Error(`${name} check: ${n} records, expected ${records}`);
}

let sink = 0;
const bench = new Bench({
  name: `NDJSON check, ${(bytes.length / 1e6).toFixed(1)} MB, ${records} records`,
  time: 0,
  iterations: 30,
  warmupIterations: 10,
});
bench
  .add('reference readers (own copy)', () => void (sink += referenceCheck(bytes)))
  .add('shared readers (records/json-bytes)', () => void (sink += checkNdjson(bytes)));
await bench.run();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const medians = bench.tasks.map((t) =>
  t.result && 'latency' in t.result ? (t.result.latency as { p50: number }).p50 : NaN,
);

// CPU time, the two alternated (which one goes first swaps every round, so neither gains by its place).
const cpu: [number[], number[]] = [[], []];
const checks = [referenceCheck, checkNdjson];
for (let r = 0; r < 40; r++)
  for (const k of r % 2 === 0 ? [0, 1] : [1, 0]) {
    const s = process.cpuUsage();
    sink += checks[k]!(bytes);
    const u = process.cpuUsage(s);
    cpu[k]!.push((u.user + u.system) / 1000);
  }
const cpuMedians = cpu.map(median);
console.table(
  bench.tasks.map((t, k) => ({
    task: t.name,
    'median ms': medians[k]!.toFixed(2),
    'MB/s': (bytes.length / 1e6 / (medians[k]! / 1000)).toFixed(0),
    ratio: (medians[k]! / medians[0]!).toFixed(3),
    'cpu median ms': cpuMedians[k]!.toFixed(2),
    'cpu ratio': (cpuMedians[k]! / cpuMedians[0]!).toFixed(3),
  })),
);
if (sink < 0) console.log(sink);
