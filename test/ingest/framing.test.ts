import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBatch } from '../../src/ingest/framing.js';
import { MAX_RECORDS_PER_REQUEST } from '../../src/ingest/limits.js';
import { instantMs, timestampMs } from '../../src/timestamp.js';
import { eventTime } from '../../src/records/decode.js';

const refusal = (body: string | Buffer, ndjson = false) => {
  try {
    parseBatch(Buffer.isBuffer(body) ? body : Buffer.from(body), ndjson);
  } catch (err) {
    return err as { code: string; details: Record<string, unknown> };
  }
  throw new Error('accepted');
};

test('an array with more records than allowed is refused from a byte count, before it is parsed', () => {
  const body =
    '[' +
    Array(MAX_RECORDS_PER_REQUEST + 1)
      .fill('{}')
      .join(',') +
    ']';
  const e = refusal(body);
  assert.equal(e.code, 'payload_too_large');
  assert.deepEqual(e.details, { limit_records: MAX_RECORDS_PER_REQUEST });
  // Exactly at the limit is accepted.
  assert.equal(
    parseBatch(Buffer.from('[' + Array(MAX_RECORDS_PER_REQUEST).fill('{}').join(',') + ']')).records,
    MAX_RECORDS_PER_REQUEST,
  );
});

test('bytes that are not UTF-8 are refused naming the line or index, not replaced and stored', () => {
  const bad = (prefix: string, suffix: string) =>
    Buffer.concat([Buffer.from(prefix), Buffer.from([0xe2, 0x28, 0xa1]), Buffer.from(suffix)]);
  assert.deepEqual(refusal(bad('{"a":1}\n{"s":"', '"}')).details.line, 2);
  assert.deepEqual(refusal(bad('[{"a":1},{"b":2},{"s":"', '"}]')).details.index, 2);
  assert.match(String(refusal(bad('{"s":"', '"}')).details.reason), /UTF-8/);
  // Multi-byte characters that are valid pass.
  assert.equal(parseBatch(Buffer.from('{"s":"héllo wörld ✓ 😀"}')).records, 1);
});

test('timestamps: ISO 8601 strings and epoch milliseconds within range, nothing else', () => {
  for (const ok of [
    '"2026-01-31T12:00:00Z"',
    '"2026-01-31T12:00:00.123456+05:30"',
    '"2026-01-31"',
    '"2026-01-31 12:00"',
    '0',
    '1767225600000',
  ]) {
    assert.equal(parseBatch(Buffer.from(`{"timestamp":${ok}}`)).records, 1, ok);
  }
  for (const bad of [
    '"March 7"',
    '"1"',
    '"foo 12"',
    '"2026-13-45"',
    '"2026-02-30"',
    '"0000-01-01"',
    '1e20',
    '-1',
    'null',
    '"2026-01-31T25:61:00Z"',
    '"2026-01-31T24:00"',
  ]) {
    assert.equal(refusal(`{"timestamp":${bad}}`).code, 'frame_invalid', bad);
  }
});

test('the front and the pipeline read a timestamp the same way; without an offset it is UTC', () => {
  assert.equal(timestampMs('2026-01-31T12:00'), Date.UTC(2026, 0, 31, 12));
  assert.equal(timestampMs('2026-01-31 12:00:00.5'), Date.UTC(2026, 0, 31, 12, 0, 0, 500));
  assert.equal(timestampMs('2026-01-31T12:00:00+0530'), Date.UTC(2026, 0, 31, 6, 30));
  assert.equal(timestampMs('2026-01-31T12:00:00-02'), Date.UTC(2026, 0, 31, 14));
  assert.equal(timestampMs('2024-02-29'), Date.UTC(2024, 1, 29));
  assert.ok(Number.isNaN(timestampMs('2025-02-29')));
  assert.equal(eventTime({ timestamp: '2026-01-31T12:00' }, 7), Date.UTC(2026, 0, 31, 12));
  assert.equal(eventTime({ timestamp: 'March 7' }, 7), 7, 'what the front refuses, the pipeline does not read');
});

test('timestamps: every instant JavaScript writes in ISO 8601 reads back to itself, with or without an offset', () => {
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < 20_000; i++) {
    const ms = Math.floor(next() * 4e12);
    const iso = new Date(ms).toISOString();
    assert.equal(timestampMs(iso), ms, iso);
    // The same instant written with an offset of +05:30, as 2026-01-31T17:30:00.000+05:30.
    const shifted = new Date(ms + 330 * 60_000).toISOString().replace('Z', '+05:30');
    assert.equal(timestampMs(shifted), ms, shifted);
  }
  assert.equal(timestampMs('0050-06-01T00:00:00Z'), NaN, 'before 1970: not a record timestamp');
  assert.equal(
    instantMs('0050-06-01T00:00:00Z'),
    Date.parse('0050-06-01T00:00:00Z'),
    'years below 100 are not read as 19xx',
  );
});
