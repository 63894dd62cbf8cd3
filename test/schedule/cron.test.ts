import { test } from 'node:test';
import assert from 'node:assert/strict';
import { latestSlot, nextSlot, slotsBetween, validateUserCron } from '../../src/schedule/cron.js';

const at = (iso: string) => Date.parse(iso);

test('validateUserCron: five fields and the five-field nicknames are accepted', () => {
  for (const expr of [
    '* * * * *',
    '*/5 * * * *',
    '0 9 * * 1-5',
    '30 2 1 * *',
    '0 0 * * sun',
    '15 14 1 jan *',
    '0 0 L * *',
    '@daily',
    '@hourly',
    '@weekly',
    '@monthly',
    '@yearly',
    '@annually',
    '@midnight',
  ]) {
    assert.deepEqual(validateUserCron(expr), { ok: true }, expr);
  }
});

test('validateUserCron: refusals say what to fix', () => {
  const cases: Array<[unknown, RegExp]> = [
    ['', /1 to 128 characters/],
    ['*'.repeat(129), /1 to 128 characters/],
    [`${'0,'.repeat(62)}0 * * * *`, /1 to 128 characters/],
    ['* * * * * *', /exactly five fields.*got 6/],
    ['0 0 * * * * 2030', /exactly five fields.*got 7/],
    ['* * * *', /exactly five fields.*got 4/],
    ['@reboot', /unsupported cron nickname "@reboot"/],
    ['@every_minute', /unsupported cron nickname/],
    ['hello world foo bar baz', /invalid cron expression/],
    ['61 * * * *', /invalid cron expression.*minute/],
    ['* 24 * * *', /invalid cron expression/],
    ['0 0 30 2 *', /never matches/],
    [42, /must be a string/],
  ];
  for (const [expr, message] of cases) {
    const r = validateUserCron(expr);
    assert.equal(r.ok, false, String(expr));
    if (!r.ok) assert.match(r.message, message, String(expr));
  }
});

test('nextSlot: strictly after, UTC, across hour, day, month and year boundaries', () => {
  assert.equal(nextSlot('* * * * *', at('2026-03-01T10:00:00.000Z')), at('2026-03-01T10:01:00.000Z'));
  assert.equal(nextSlot('* * * * *', at('2026-03-01T10:00:59.999Z')), at('2026-03-01T10:01:00.000Z'));
  assert.equal(nextSlot('*/15 * * * *', at('2026-03-01T10:59:00.000Z')), at('2026-03-01T11:00:00.000Z'));
  assert.equal(nextSlot('0 0 * * *', at('2026-03-31T23:59:30.000Z')), at('2026-04-01T00:00:00.000Z'));
  assert.equal(nextSlot('0 0 1 * *', at('2026-02-01T00:00:00.000Z')), at('2026-03-01T00:00:00.000Z'));
  assert.equal(nextSlot('0 0 29 2 *', at('2026-03-01T00:00:00.000Z')), at('2028-02-29T00:00:00.000Z'));
  assert.equal(nextSlot('@yearly', at('2026-12-31T23:59:00.000Z')), at('2027-01-01T00:00:00.000Z'));
  // A server in another time zone still reads crons in UTC (the process TZ is not consulted).
  assert.equal(nextSlot('30 2 * * *', at('2026-10-25T00:00:00.000Z')), at('2026-10-25T02:30:00.000Z'));
});

test('latestSlot: the last slot at or before, after a bound', () => {
  assert.equal(latestSlot('*/15 * * * *', 0, at('2026-03-01T10:44:59.000Z')), at('2026-03-01T10:30:00.000Z'));
  assert.equal(latestSlot('*/15 * * * *', 0, at('2026-03-01T10:45:00.000Z')), at('2026-03-01T10:45:00.000Z'));
  assert.equal(latestSlot('*/15 * * * *', at('2026-03-01T10:45:00.000Z'), at('2026-03-01T10:50:00.000Z')), null);
});

test('slotsBetween: (from, to] across boundaries, matching a minute-by-minute walk', () => {
  assert.equal(slotsBetween('* * * * *', at('2026-03-01T10:00:00.000Z'), at('2026-03-01T10:00:00.000Z')), 0);
  assert.equal(slotsBetween('* * * * *', at('2026-03-01T10:00:00.000Z'), at('2026-03-01T10:01:00.000Z')), 1);
  assert.equal(slotsBetween('* * * * *', at('2026-03-01T10:00:30.000Z'), at('2026-03-01T11:00:30.000Z')), 60);
  assert.equal(slotsBetween('0 * * * *', at('2026-03-31T22:00:00.000Z'), at('2026-04-01T02:00:00.000Z')), 4);
  assert.equal(slotsBetween('0 0 1 * *', at('2026-01-01T00:00:00.000Z'), at('2027-01-01T00:00:00.000Z')), 12);
  assert.equal(slotsBetween('0 9 * * 1-5', at('2026-03-02T00:00:00.000Z'), at('2026-03-09T00:00:00.000Z')), 5);
  // A whole non-leap year of every-minute slots, counted arithmetically and by whole days.
  const year = 365 * 1440;
  assert.equal(slotsBetween('* * * * *', at('2026-01-01T00:00:00.000Z'), at('2027-01-01T00:00:00.000Z')), year);
  const started = performance.now();
  assert.equal(slotsBetween('0-59 * * * *', at('2026-01-01T00:00:00.000Z'), at('2027-01-01T00:00:00.000Z')), year);
  assert.equal(
    slotsBetween('*/2 0-11 * * *', at('2026-01-01T00:30:00.000Z'), at('2027-01-01T00:30:00.000Z')),
    365 * 360,
  );
  assert.ok(performance.now() - started < 5000, 'a year of slots is bounded work');
  // Against a plain walk, on ranges with partial first and last days.
  for (const expr of ['*/7 * * * *', '5 */3 * * *', '0,30 8-17 * * 1-5', '0 0 L * *']) {
    const from = at('2026-02-26T13:17:00.000Z');
    const to = at('2026-03-04T06:05:00.000Z');
    let n = 0;
    for (let t = from; ; ) {
      const next = nextSlot(expr, t);
      if (next === null || next > to) break;
      n++;
      t = next;
    }
    assert.equal(slotsBetween(expr, from, to), n, expr);
  }
});
