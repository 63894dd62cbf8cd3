import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError } from '../../src/errors.js';
import { headersForCreate, patchHeaders } from '../../src/pull/headers.js';
import { addToHour, hourlyWindow } from '../../src/pull/hourly.js';
import { Limiter } from '../../src/pull/limiter.js';
import { SecretBox, SECRET_KEY_FILE } from '../../src/pull/secret-box.js';
import { spreadOffset } from '../../src/pull/spread.js';

function field(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApiError);
    return (err.details as Array<{ field: string }>)[0]!.field;
  }
  throw new Error('expected a validation error');
}

test('secret box: AES-256-GCM, bound to its context, key from the environment or generated 0600', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-box-'));
  try {
    const box = SecretBox.open(dir, undefined);
    assert.equal(statSync(join(dir, SECRET_KEY_FILE)).mode & 0o777, 0o600);
    const sealed = box.seal('Bearer abc', 'pul_1\u0000authorization');
    assert.notEqual(sealed.includes('Bearer'), true);
    assert.notEqual(box.seal('Bearer abc', 'pul_1\u0000authorization'), sealed, 'a fresh IV each time');
    assert.equal(box.open(sealed, 'pul_1\u0000authorization'), 'Bearer abc');
    assert.throws(() => box.open(sealed, 'pul_2\u0000authorization'), 'another record cannot open it');
    // The same data dir opens the same key again.
    assert.equal(SecretBox.open(dir, undefined).open(sealed, 'pul_1\u0000authorization'), 'Bearer abc');
    const hex = readFileSync(join(dir, SECRET_KEY_FILE), 'utf8').trim();
    assert.equal(SecretBox.open('/nonexistent', hex).open(sealed, 'pul_1\u0000authorization'), 'Bearer abc');
    assert.equal(
      SecretBox.open('/nonexistent', Buffer.from(hex, 'hex').toString('base64')).open(
        sealed,
        'pul_1\u0000authorization',
      ),
      'Bearer abc',
    );
    assert.throws(() => SecretBox.open('/nonexistent', 'a'.repeat(64)).open(sealed, 'pul_1\u0000authorization'));
    assert.throws(() => SecretBox.open(dir, 'too short'), /SLUICE_SECRET_KEY must hold a 256-bit key/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('headers: create merges spellings and ignores nulls; update is a patch; at most 20 after the patch', () => {
  assert.deepEqual(headersForCreate({ 'X-A': '1', 'x-a': '2', 'X-B': null }), [{ name: 'x-a', value: '2' }]);
  assert.deepEqual(headersForCreate(null), []);
  const current = [
    { name: 'X-Keep', sealed: 'k' },
    { name: 'X-Drop', sealed: 'd' },
    { name: 'X-Case', sealed: 'c' },
  ];
  assert.equal(patchHeaders(current, undefined), null);
  assert.deepEqual(patchHeaders(current, null), { keep: [], set: [] });
  assert.deepEqual(patchHeaders(current, { 'x-drop': null, 'X-CASE': 'C', 'X-New': 'n' }), {
    keep: [{ name: 'X-Keep', sealed: 'k' }],
    set: [
      { name: 'X-CASE', value: 'C' },
      { name: 'X-New', value: 'n' },
    ],
  });
  const twenty = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`H${i}`, 'v']));
  assert.equal(headersForCreate(twenty).length, 20);
  assert.equal(
    field(() => headersForCreate({ ...twenty, H20: 'v' })),
    'body.headers',
  );
  assert.equal(
    field(() => patchHeaders(current, Object.fromEntries(Array.from({ length: 18 }, (_, i) => [`H${i}`, 'v'])))),
    'body.headers',
  );
  assert.equal(
    patchHeaders(current, {
      ...Object.fromEntries(Array.from({ length: 18 }, (_, i) => [`H${i}`, 'v'])),
      'X-Drop': null,
    })!.set.length,
    18,
  );
  assert.equal(
    field(() => headersForCreate({ 'Content-Length': '1' })),
    'body.headers.Content-Length',
  );
  assert.equal(
    field(() => headersForCreate({ 'X:Y': '1' })),
    'body.headers.X:Y',
  );
  assert.equal(
    field(() => patchHeaders(current, { 'X-A': 'a\r\nInjected: 1' })),
    'body.headers.X-A',
  );
  assert.equal(
    field(() => headersForCreate({ 'X-A': 'x'.repeat(8193) })),
    'body.headers.X-A',
  );
});

test('hourly windows: 24 entries ending with the current hour, oldest first, old hours dropped', () => {
  const H = 3_600_000;
  const now = Date.UTC(2026, 0, 2, 10, 30);
  let cells = addToHour([], now - 30 * H, now, [5, 1, 0]);
  assert.deepEqual(cells, [], 'older than the window');
  cells = addToHour(cells, now - 23 * H, now, [2, 1, 0]);
  cells = addToHour(cells, now, now, [3, 1, 1]);
  cells = addToHour(cells, now - 60_000, now, [1, 1, 0]);
  const w = hourlyWindow(cells, now, (hour, c) => ({ hour, records: c?.[1] ?? 0, fetches: c?.[2] ?? 0 }));
  assert.equal(w.length, 24);
  assert.deepEqual(w[0], { hour: '2026-01-01T11:00:00.000Z', records: 2, fetches: 1 });
  assert.deepEqual(w[23], { hour: '2026-01-02T10:00:00.000Z', records: 4, fetches: 2 });
  assert.equal(w.filter((e) => e.fetches === 0).length, 22);
  // An hour later the first entry slides out.
  assert.equal(hourlyWindow(cells, now + H, (_hour, c) => c?.[1] ?? 0)[0], 0);
});

test('spread: a fixed offset per job inside the spread; the limiter bounds runs in flight', async () => {
  const offsets = Array.from({ length: 1000 }, (_, i) => spreadOffset(`pul_${i}`, 1000));
  assert.ok(offsets.every((o) => o >= 0 && o < 1000));
  assert.equal(spreadOffset('pul_1', 1000), spreadOffset('pul_1', 1000));
  assert.ok(new Set(offsets.map((o) => Math.floor(o / 100))).size === 10, 'offsets cover the whole spread');
  assert.equal(spreadOffset('pul_1', 0), 0);
  const limiter = new Limiter(3);
  let running = 0;
  let peak = 0;
  await Promise.all(
    Array.from({ length: 20 }, () =>
      limiter.run(async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setImmediate(r));
        running--;
      }),
    ),
  );
  assert.equal(peak, 3);
  assert.equal(limiter.inFlight, 0);
});

test("limiter: a task waiting outside its slot (a check's retry delay) lets a queued task run, then queues for one again", async () => {
  const limiter = new Limiter(1);
  const order: string[] = [];
  let endWait!: () => void;
  const waited = new Promise<void>((r) => (endWait = r));
  const a = limiter.run(async () => {
    order.push('a fetch 1');
    await limiter.outside(() => waited);
    order.push('a fetch 2');
  });
  const b = limiter.run(async () => {
    order.push('b');
    assert.equal(limiter.inFlight, 1, 'b runs in the slot a gave up');
    endWait();
    // a's wait is over, but the slot is b's until b ends.
    await new Promise((r) => setImmediate(r));
    order.push('b ends');
  });
  await Promise.all([a, b]);
  assert.deepEqual(order, ['a fetch 1', 'b', 'b ends', 'a fetch 2']);
  assert.equal(limiter.inFlight, 0);
});
