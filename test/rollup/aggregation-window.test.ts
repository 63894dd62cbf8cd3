/**
 * Where an aggregation's time axis lies, at a fixed `now`: every AnalyticsTimeRange in UTC and in a
 * zone with DST, local calendar arithmetic (DST days, a midnight that does not exist, weeks from
 * Monday), the auto interval, the bucket limit, and the tiling of answer buckets over stored tiers.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/errors.js';
import { TIME_RANGES } from '../../src/rollup/metric-records.js';
import { resolveTimeRange, type TimeRange } from '../../src/rollup/aggregation/time-range.js';
import {
  addLocal,
  isTimeZone,
  localFields,
  startOfLocal,
  zonedInstant,
} from '../../src/rollup/aggregation/zoned-time.js';
import { planWindow } from '../../src/rollup/aggregation/window-plan.js';
import { AGGREGATION_LIMITS, bucketBoundaries, bucketIndex } from '../../src/rollup/aggregation/buckets.js';
import { coverRange, isSingleRow, tileBucket } from '../../src/rollup/aggregation/tiling.js';

const at = (iso: string): number => Date.parse(iso);
const H = 3_600_000;
const D = 24 * H;
const NOW = at('2026-03-11T15:20:30Z'); // a Wednesday; New York is on summer time since March 8

function window(
  range: TimeRange,
  timeZone: string,
  extra: { earliest?: number | null; custom?: { start: number; end: number } | null } = {},
) {
  const r = resolveTimeRange(range, {
    now: NOW,
    timeZone,
    custom: extra.custom ?? null,
    earliest: extra.earliest ?? null,
  });
  return (
    r && { start: new Date(r.start).toISOString(), end: new Date(r.end).toISOString(), projectFrom: r.projectFrom }
  );
}

describe('time ranges at a fixed now', () => {
  const now = new Date(NOW).toISOString();
  const utc: Record<TimeRange, [string, string] | null> = {
    last_hour: ['2026-03-11T14:20:30.000Z', now],
    last_6_hours: ['2026-03-11T09:20:30.000Z', now],
    today: ['2026-03-11T00:00:00.000Z', now],
    last_24_hours: ['2026-03-10T15:20:30.000Z', now],
    yesterday: ['2026-03-10T00:00:00.000Z', '2026-03-11T00:00:00.000Z'],
    this_week: ['2026-03-09T00:00:00.000Z', now],
    last_week: ['2026-03-02T00:00:00.000Z', '2026-03-09T00:00:00.000Z'],
    this_month: ['2026-03-01T00:00:00.000Z', now],
    last_month: ['2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
    this_quarter: ['2026-01-01T00:00:00.000Z', now],
    last_quarter: ['2025-10-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'],
    this_year: ['2026-01-01T00:00:00.000Z', now],
    last_year: ['2025-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'],
    last_7_days: ['2026-03-04T15:20:30.000Z', now],
    last_30_days: ['2026-02-09T15:20:30.000Z', now],
    last_90_days: ['2025-12-11T15:20:30.000Z', now],
    last_365_days: ['2025-03-11T15:20:30.000Z', now],
    all_time: ['2025-06-01T00:00:00.000Z', now],
    custom: ['2026-01-05T00:00:00.000Z', '2026-01-06T00:00:00.000Z'],
    next_7_days: ['2026-03-04T15:20:30.000Z', '2026-03-18T15:20:30.000Z'],
    next_30_days: ['2026-02-09T15:20:30.000Z', '2026-04-10T15:20:30.000Z'],
    next_90_days: ['2025-12-11T15:20:30.000Z', '2026-06-09T15:20:30.000Z'],
  };

  test('every AnalyticsTimeRange in UTC', () => {
    assert.deepEqual(Object.keys(utc).sort(), [...TIME_RANGES].sort(), 'the table covers every range');
    const extra = {
      earliest: at('2025-06-01T00:00:00Z'),
      custom: { start: at('2026-01-05T00:00:00Z'), end: at('2026-01-06T00:00:00Z') },
    };
    for (const range of TIME_RANGES) {
      const w = window(range, 'UTC', extra)!;
      assert.deepEqual([w.start, w.end], utc[range], range);
      assert.equal(w.projectFrom, range.startsWith('next_') ? NOW : null, `${range}: only next_* project past now`);
    }
  });

  test('calendar ranges follow the zone (America/New_York, summer time since Sunday)', () => {
    const ny: Partial<Record<TimeRange, [string, string]>> = {
      today: ['2026-03-11T04:00:00.000Z', now],
      yesterday: ['2026-03-10T04:00:00.000Z', '2026-03-11T04:00:00.000Z'],
      this_week: ['2026-03-09T04:00:00.000Z', now],
      last_week: ['2026-03-02T05:00:00.000Z', '2026-03-09T04:00:00.000Z'], // 167 hours: the week lost one
      this_month: ['2026-03-01T05:00:00.000Z', now],
      last_month: ['2026-02-01T05:00:00.000Z', '2026-03-01T05:00:00.000Z'],
      this_quarter: ['2026-01-01T05:00:00.000Z', now],
      last_quarter: ['2025-10-01T04:00:00.000Z', '2026-01-01T05:00:00.000Z'],
      this_year: ['2026-01-01T05:00:00.000Z', now],
      last_year: ['2025-01-01T05:00:00.000Z', '2026-01-01T05:00:00.000Z'],
      last_24_hours: ['2026-03-10T15:20:30.000Z', now],
    };
    for (const [range, expected] of Object.entries(ny))
      assert.deepEqual(
        (({ start, end }) => [start, end])(window(range as TimeRange, 'America/New_York')!),
        expected,
        range,
      );
  });

  test('weeks start on Monday, also when now is a Sunday; empty all_time and unsaved custom', () => {
    const sunday = at('2026-03-15T10:00:00Z');
    const r = resolveTimeRange('this_week', { now: sunday, timeZone: 'Europe/Berlin', custom: null, earliest: null })!;
    assert.equal(new Date(r.start).toISOString(), '2026-03-08T23:00:00.000Z', 'Monday 9 March, 00:00 in Berlin');
    assert.deepEqual(
      window('all_time', 'UTC'),
      { start: now, end: now, projectFrom: null },
      'nothing stored: an empty window at now',
    );
    assert.equal(window('custom', 'UTC'), null);
  });
});

describe('local calendar arithmetic', () => {
  test('zone names are checked', () => {
    for (const ok of ['UTC', 'Europe/Berlin', 'Asia/Kolkata', 'America/New_York']) assert.ok(isTimeZone(ok), ok);
    for (const bad of ['', 'Mars/Olympus', "UTC'; DROP TABLE rollups; --", 'x'.repeat(100)])
      assert.ok(!isTimeZone(bad), bad);
  });

  test('local midnights and days across DST, and a midnight that does not exist', () => {
    assert.equal(startOfLocal('Europe/Berlin', 'day', at('2026-03-29T12:00:00Z')), at('2026-03-28T23:00:00Z'));
    assert.equal(
      addLocal('Europe/Berlin', 'day', at('2026-03-28T23:00:00Z'), 1),
      at('2026-03-29T22:00:00Z'),
      '23 hours',
    );
    assert.equal(
      addLocal('Europe/Berlin', 'day', at('2026-10-24T22:00:00Z'), 1),
      at('2026-10-25T23:00:00Z'),
      '25 hours',
    );
    // Cuba moves its clocks at midnight: 2026-03-08 00:00 does not exist in Havana, the day starts at 01:00 (05:00Z).
    assert.equal(zonedInstant('America/Havana', 2026, 3, 8), at('2026-03-08T05:00:00Z'));
    assert.equal(localFields('America/Havana', at('2026-03-08T05:00:00Z')).hour, 1);
    // A repeated local time is its earlier instant: 02:30 on 2026-10-25 in Berlin is first at 00:30Z.
    assert.equal(zonedInstant('Europe/Berlin', 2026, 10, 25, 2, 30), at('2026-10-25T00:30:00Z'));
    // Local hours in a fall-back: two distinct 02:00 hours.
    const h = [at('2026-10-24T23:00:00Z')];
    for (let i = 0; i < 4; i++) h.push(addLocal('Europe/Berlin', 'hour', h[h.length - 1]!, 1));
    assert.deepEqual(
      h.map((t) => (t - h[0]!) / H),
      [0, 1, 2, 3, 4],
    );
  });

  test('Asia/Kolkata hours start at :30 UTC; buckets cover the window; bucketIndex finds them', () => {
    const b = bucketBoundaries('hour', 'Asia/Kolkata', at('2026-05-01T10:00:00Z'), at('2026-05-01T12:00:00Z'));
    assert.deepEqual(
      b.map((t) => new Date(t).toISOString()),
      ['2026-05-01T09:30:00.000Z', '2026-05-01T10:30:00.000Z', '2026-05-01T11:30:00.000Z', '2026-05-01T12:30:00.000Z'],
    );
    assert.equal(bucketIndex(b, at('2026-05-01T10:29:59Z')), 0);
    assert.equal(bucketIndex(b, at('2026-05-01T10:30:00Z')), 1);
    assert.equal(bucketIndex(b, at('2026-05-01T12:30:00Z')), -1);
  });
});

describe('interval and limits', () => {
  const ctx = { now: NOW, timeZone: 'UTC', custom: null, earliest: at('2016-01-01T00:00:00Z') };
  const plan = (timeRange: TimeRange, interval: 'auto' | 'minute' | 'hour' | 'day' | 'month' = 'auto') =>
    planWindow({ explicit: null, timeRange, interval, timeZone: 'UTC' }, ctx);

  test('auto picks the finest interval within the bound', () => {
    assert.equal(AGGREGATION_LIMITS.autoBuckets, 1500);
    const picks = Object.fromEntries(
      (
        [
          'last_hour',
          'last_24_hours',
          'last_7_days',
          'last_30_days',
          'last_90_days',
          'last_365_days',
          'all_time',
        ] as const
      ).map((r) => [r, plan(r).interval]),
    );
    assert.deepEqual(picks, {
      last_hour: 'minute',
      last_24_hours: 'minute',
      last_7_days: 'hour',
      last_30_days: 'hour',
      last_90_days: 'day',
      last_365_days: 'day',
      all_time: 'month',
    });
    const day = plan('last_24_hours', 'hour');
    assert.equal(day.boundaries.length, 26, '25 whole hours cover 24 hours that start mid-hour');
    assert.equal(day.start, at('2026-03-10T15:00:00Z'));
    assert.equal(day.end, at('2026-03-11T16:00:00Z'));
  });

  test('too many buckets: 400 naming the parameter and the limit', () => {
    const failure = (fn: () => unknown): { field: string; message: string } => {
      try {
        fn();
      } catch (err) {
        assert.ok(err instanceof ApiError && err.code === 'request_validation_failed');
        return (err.details as Array<{ field: string; message: string }>)[0]!;
      }
      assert.fail('expected a 400');
    };
    const minute = failure(() => plan('last_30_days', 'minute'));
    assert.equal(minute.field, 'query.interval');
    assert.match(minute.message, /at most 10080/);
    const centuries = failure(() =>
      planWindow(
        {
          explicit: { start: 0, end: at('3000-01-01T00:00:00Z') },
          timeRange: 'custom',
          interval: 'auto',
          timeZone: 'UTC',
        },
        ctx,
      ),
    );
    assert.equal(centuries.field, 'query.start_at');
    const custom = failure(() => plan('custom'));
    assert.equal(custom.field, 'query.time_range');
    assert.match(custom.message, /no custom range is saved/);
  });
});

describe('tiling over stored tiers', () => {
  test('a Berlin month is whole UTC days with hour edges; a UTC month is one month row', () => {
    const tiles = coverRange(at('2026-02-28T23:00:00Z'), at('2026-03-31T22:00:00Z'));
    assert.deepEqual(
      tiles.map((t) => [t.tier, new Date(t.from).toISOString(), new Date(t.to).toISOString()]),
      [
        ['hour', '2026-02-28T23:00:00.000Z', '2026-03-01T00:00:00.000Z'],
        ['day', '2026-03-01T00:00:00.000Z', '2026-03-31T00:00:00.000Z'],
        ['hour', '2026-03-31T00:00:00.000Z', '2026-03-31T22:00:00.000Z'],
      ],
    );
    const month = coverRange(at('2026-03-01T00:00:00Z'), at('2026-04-01T00:00:00Z'));
    assert.deepEqual(
      month.map((t) => t.tier),
      ['month'],
    );
    assert.ok(isSingleRow(month));
    assert.ok(!isSingleRow(tiles));
  });

  test('past the watermark only minute rows; no watermark: minutes only', () => {
    const w = at('2026-03-01T10:17:00Z');
    const tiles = tileBucket(at('2026-03-01T00:00:00Z'), at('2026-03-02T00:00:00Z'), w);
    assert.deepEqual(
      tiles.map((t) => t.tier),
      ['hour', 'minute', 'minute'],
    );
    assert.equal(tiles[tiles.length - 1]!.from, w);
    assert.deepEqual(tileBucket(0, D, null), [{ tier: 'minute', from: 0, to: D }]);
  });
});

test('fixed-offset zones (UTC under its names, Etc/GMT±N) give the local fields Intl gives, and one window one boundaries array', () => {
  const intl = (tz: string, t: number) => {
    const parts = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      weekday: 'short',
    }).formatToParts(new Date(t));
    const get = (type: string) => parts.find((p) => p.type === type)!.value;
    return {
      year: Number(get('year')),
      month: Number(get('month')),
      day: Number(get('day')),
      hour: Number(get('hour')),
      minute: Number(get('minute')),
      second: Number(get('second')),
      weekday: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].indexOf(get('weekday')) + 1,
    };
  };
  let t = at('1970-01-01T00:00:00Z');
  for (let i = 0; i < 2000; i++, t += 1_733_456_789) {
    for (const tz of ['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT+5', 'Etc/GMT-14', 'Etc/GMT-0'])
      assert.deepEqual(localFields(tz, t), intl(tz, t), `${tz} ${new Date(t).toISOString()}`);
  }
  // Hour buckets of a UTC month: plain multiples of an hour.
  const b = bucketBoundaries('hour', 'UTC', at('2026-02-01T00:30:00Z'), at('2026-03-03T00:00:00Z'));
  assert.equal(b.length, 30 * 24 + 1);
  assert.ok(b.every((x, k) => x === at('2026-02-01T00:00:00Z') + k * H));
  assert.equal(
    bucketBoundaries('hour', 'UTC', at('2026-02-01T00:30:00Z'), at('2026-03-03T00:00:00Z')),
    b,
    'the same window: the same (frozen) array',
  );
  assert.ok(Object.isFrozen(b));
});
