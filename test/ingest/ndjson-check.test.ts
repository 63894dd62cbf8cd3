import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { checkNdjson } from '../../src/ingest/ndjson-check.js';
import { MAX_NESTING_DEPTH } from '../../src/ingest/limits.js';
import { timestampMs } from '../../src/timestamp.js';
import { mulberry32 } from '../helpers/seeded-random.js';

/**
 * The byte check (ndjson-check.ts) may only accept what JSON.parse, line by line, accepts as
 * records (objects, a valid `timestamp` when present, not too deep), with the same count; anything
 * else it leaves to the exact path (-1 or 0). Compared here on hand-picked lines and on seeded
 * mutations of valid records.
 */

/** What the exact path decides for an NDJSON body: its record count, or null when it refuses it. */
function exact(body: Buffer): number | null {
  let n = 0;
  for (let line of body.toString('utf8').split('\n')) {
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line.trim() === '') continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      return null;
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
    const ts = (v as { timestamp?: unknown }).timestamp;
    if (ts !== undefined && Number.isNaN(timestampMs(ts))) return null;
    n++;
  }
  return n;
}

function agrees(body: Buffer): void {
  const fast = checkNdjson(body);
  if (fast <= 0) return; // not sure: the exact path decides
  assert.equal(fast, exact(body), `accepted ${JSON.stringify(body.toString('latin1'))} as ${fast} records`);
}

test('valid records are accepted with their count, blank lines and CRLF included', () => {
  const body = Buffer.from(
    '{"a":1,"b":[1,2.5e-3,-0,true,false,null],"c":{"d":"x\\u00e9\\n\\"","e":{}},"f":[]}\r\n\n   \n{ "timestamp" : "2026-01-31T12:00:00Z" , "g" : [ { } ] }\n{"timestamp":1767225600000}',
  );
  assert.equal(checkNdjson(body), 3);
  assert.equal(exact(body), 3);
});

test('lines the exact path must judge are not accepted', () => {
  const unsure = [
    '{"a":1,}',
    '{"a":01}',
    '{"a":1.}',
    '{"a":.5}',
    '{"a":1e}',
    '{"a":+1}',
    '{"a":tru}',
    '{"a":nul}',
    '{"a":"\\x"}',
    '{"a":"\\u12G4"}',
    '{"a":"tab\there"}',
    '[1,2]',
    '"s"',
    '1',
    'null',
    '{"a":1} x',
    '{"a" 1}',
    '{"a":[1,]}',
    '{"a":[,1]}',
    '{a:1}',
    "{'a':1}",
    '{"timestamp":"yesterday"}',
    '{"timestamp":null}',
    '{"timestamp":"2026-01-31T12:00:00Z","timestamp":true}',
    '{"\\u0074imestamp":"x"}',
    '\u00a0{"a":1}',
    '{"a":1}\u2028',
    '{"a":NaN}',
    '{"a":Infinity}',
    '{"a":-}',
    '{"a":"unterminated}',
    '',
    '['.repeat(5) + ']'.repeat(5),
    '{"a":' + '['.repeat(MAX_NESTING_DEPTH) + ']'.repeat(MAX_NESTING_DEPTH) + '}',
  ];
  for (const line of unsure) assert.ok(checkNdjson(Buffer.from(line)) <= 0, line.slice(0, 60));
  // The last timestamp counts, as JSON.parse keeps the last of duplicate keys.
  assert.equal(checkNdjson(Buffer.from('{"timestamp":true,"timestamp":1767225600000}')), 1);
  // Depth at the limit is accepted (the record is level 1).
  const deep = '{"a":' + '['.repeat(MAX_NESTING_DEPTH - 1) + ']'.repeat(MAX_NESTING_DEPTH - 1) + '}';
  assert.equal(checkNdjson(Buffer.from(deep)), 1);
});

test('seeded mutations of valid records: whatever the check accepts, JSON.parse accepts with the same count', () => {
  const seed = Number(process.env.NDJSON_CHECK_SEED ?? 20261123);
  const random = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const scalars = [
    '0',
    '-1',
    '1.5',
    '2e10',
    '-0.0E-2',
    '"x"',
    '""',
    '"\\"\\\\\\/\\b\\f\\n\\r\\t\\u00FF"',
    '"é€😀"',
    'true',
    'false',
    'null',
    '"2026-01-31T12:00:00Z"',
    '1767225600000',
  ];
  const valueOf = (depth: number): string => {
    const r = random();
    if (depth > 3 || r < 0.5) return pick(scalars);
    if (r < 0.75)
      return (
        '[' +
        Array.from({ length: Math.floor(random() * 4) }, () => valueOf(depth + 1)).join(pick([',', ' , ', ',\t'])) +
        ']'
      );
    return objectOf(depth + 1);
  };
  const objectOf = (depth: number): string =>
    '{' +
    Array.from(
      { length: Math.floor(random() * 5) },
      () => `${pick(['"a"', '"b"', '"timestamp"', '"k y"', '"\\n"'])}${pick([':', ' : '])}${valueOf(depth)}`,
    ).join(',') +
    '}';
  const bytes = [
    0x22, 0x5c, 0x2c, 0x3a, 0x7b, 0x7d, 0x5b, 0x5d, 0x20, 0x0a, 0x0d, 0x09, 0x30, 0x31, 0x2d, 0x2b, 0x2e, 0x65, 0x45,
    0x74, 0x66, 0x6e, 0x75, 0x00, 0x1f, 0x7f, 0x61,
  ];
  let valid = 0;
  let fast = 0;
  for (let n = 0; n < 20_000; n++) {
    const lines = Array.from({ length: 1 + Math.floor(random() * 3) }, () => objectOf(0));
    const body = Buffer.from(lines.join(pick(['\n', '\r\n', '\n\n'])));
    agrees(body);
    if (exact(body) !== null) {
      valid++;
      if (checkNdjson(body) > 0) fast++;
    }
    // 1–3 byte edits: replace, insert or delete.
    let b = body;
    for (let k = 1 + Math.floor(random() * 3); k > 0; k--) {
      const at = Math.floor(random() * (b.length + 1));
      const op = random();
      const byte = Buffer.from([pick(bytes)]);
      if (op < 0.4 && at < b.length) b = Buffer.concat([b.subarray(0, at), byte, b.subarray(at + 1)]);
      else if (op < 0.8) b = Buffer.concat([b.subarray(0, at), byte, b.subarray(at)]);
      else b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
    }
    if (!isUtf8(b)) continue;
    agrees(b);
  }
  // Valid bodies the check leaves to the exact path have a top-level key with an escape ("\n").
  assert.ok(fast > valid / 3, `the check accepted ${fast} of ${valid} valid bodies`);
});
