/**
 * The aggregation read path against exact answers: records are turned into real rollups (minute
 * states, tiers merged from them; aggregation-fixtures.ts) and every answer bucket is compared with
 * the state of that bucket's records added one by one — equal to the last bit for counts, extremes,
 * percentiles and distinct counts (merging sketches is exact), to float rounding for sums.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadHasher } from '../../src/rollup/hll.js';
import { figuresOf } from '../../src/rollup/bucket-state.js';
import { QuantileSketch } from '../../src/rollup/ddsketch.js';
import type { ChartValue, MetricRecord, MetricSeriesRecord } from '../../src/rollup/metric-records.js';
import { MetricSeriesView } from '../../src/rollup/series-cache.js';
import {
  answerAggregation,
  runAggregation,
  type AggregationRequest,
  type TimeseriesAggregation,
} from '../../src/rollup/aggregation/run-aggregation.js';
import { aggregationJson } from '../../src/rollup/aggregation/aggregation-json.js';
import { horizonTime } from '../../src/rollup/fits/index.js';
import { TailUnionCache } from '../../src/rollup/aggregation/tail-union.js';
import { OTHER_SERIES, TOTAL_SERIES } from '../../src/rollup/rollup-types.js';
import { mulberry32 } from '../helpers/seeded-random.js';
import { MemoryRollups, metric, seriesRecord, stateOf, type Rec } from './aggregation-fixtures.js';

const M = 60_000;
const H = 60 * M;
const D = 24 * H;
const at = (iso: string): number => Date.parse(iso);
const iso = (t: number): string => new Date(t).toISOString();

before(() => loadHasher());

/** `n` records spread uniformly over [from, to), values 1..1000 (some null when `nulls`), users u0..u199. */
function records(seed: number, series: readonly string[], from: number, to: number, n: number, nulls = 0): Rec[] {
  const random = mulberry32(seed);
  return Array.from({ length: n }, () => ({
    series: series[Math.floor(random() * series.length)]!,
    t: from + Math.floor(random() * (to - from)),
    value: random() < nulls ? null : Math.round(random() * 1000 * 100) / 100,
    unique: `u${Math.floor(random() * 200)}`,
  }));
}

interface Run {
  answer: TimeseriesAggregation;
  store: MemoryRollups;
}

type Query = Partial<AggregationRequest> & {
  start: number;
  end: number;
  interval: AggregationRequest['window']['interval'];
  timeZone?: string;
};
type Options = { metric?: MetricRecord; registry?: MetricSeriesRecord[]; now?: number; tailCache?: TailUnionCache };

async function aggregate(recs: readonly Rec[], watermark: number | null, req: Query, opts: Options = {}): Promise<Run> {
  const { store, context, request } = setUp(recs, watermark, req, opts);
  return { answer: await runAggregation(context, request), store };
}

/** The API's text of an answer (aggregation-json.ts) and JSON.stringify of runAggregation's, from one store. */
async function bothTexts(
  recs: readonly Rec[],
  watermark: number | null,
  req: Query,
  opts: Options = {},
): Promise<[string, string]> {
  const { context, request } = setUp(recs, watermark, req, opts);
  return [
    aggregationJson(await answerAggregation(context, request)),
    JSON.stringify(await runAggregation(context, request)),
  ];
}

function setUp(recs: readonly Rec[], watermark: number | null, req: Query, opts: Options) {
  const store = new MemoryRollups(recs, watermark);
  const { start, end, interval, timeZone, ...rest } = req;
  const request: AggregationRequest = {
    coverage: 'strict',
    window: { explicit: { start, end }, timeRange: 'last_24_hours', interval, timeZone: timeZone ?? 'UTC' },
    normalize: true,
    values: ['count'],
    emptyHandling: 'zero',
    nullHandling: 'skip',
    maxSeries: 10,
    series: null,
    regression: 'none',
    forecastAt: null,
    ...rest,
  };
  const m = opts.metric ?? metric();
  // A cache of its own: every test's data is another metric with the same id.
  const context = {
    reader: store,
    metric: m,
    registry: new MetricSeriesView(1, opts.registry ?? []),
    view: { id: m.view_id, name: 'Requests' },
    now: opts.now ?? end + D,
    horizonTime,
    tailCache: opts.tailCache ?? new TailUnionCache(),
  };
  return { store, context, request };
}

const FIGURE_VALUES: ChartValue[] = [
  'count',
  'sum',
  'average',
  'min',
  'max',
  'last',
  'p50',
  'p95',
  'p99',
  'count_unique',
];

/** The exact row of `values` (a subset of FIGURE_VALUES, in its order) for records (skip semantics). */
function exactRow(recs: readonly Rec[], values: readonly ChartValue[] = FIGURE_VALUES): Array<number | null> {
  const f = figuresOf(stateOf(recs));
  const row = [
    f.count,
    f.sum ?? 0,
    f.value_count ? f.sum! / f.value_count : null,
    f.min,
    f.max,
    f.last,
    f.p50,
    f.p95,
    f.p99,
    Math.round(f.distinct ?? 0),
  ];
  return FIGURE_VALUES.map((v, i) => (values.includes(v) ? row[i]! : undefined)).filter((x) => x !== undefined);
}

function inRange(recs: readonly Rec[], a: number, b: number, series?: ReadonlySet<string>): Rec[] {
  return recs.filter((r) => r.t >= a && r.t < b && (!series || series.has(r.series)));
}

function assertRow(
  actual: ReadonlyArray<number | null> | undefined,
  expected: ReadonlyArray<number | null>,
  label: string,
): void {
  assert.ok(actual, `${label}: answered`);
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) {
    const a: number | null = actual[i]!;
    const e: number | null = expected[i]!;
    if (typeof a === 'number' && typeof e === 'number' && !Number.isInteger(e))
      assert.ok(Math.abs(a - e) <= 1e-9 * Math.max(1, Math.abs(e)), `${label} [${i}]: ${a} vs ${e}`);
    else assert.equal(a, e, `${label} [${i}]`);
  }
}

/** Every answered bucket of the one series equals the exact row of its records, and the buckets are exactly `boundaries`. */
function assertBuckets(
  answer: TimeseriesAggregation,
  recs: readonly Rec[],
  boundaries: readonly number[],
  seriesIndex = 0,
  series?: ReadonlySet<string>,
): void {
  const values = answer.values;
  const records = answer.series[seriesIndex]!.records;
  assert.deepEqual(Object.keys(records), boundaries.slice(0, -1).map(iso), 'bucket starts');
  for (let k = 0; k + 1 < boundaries.length; k++) {
    assertRow(
      records[iso(boundaries[k]!)],
      exactRow(inRange(recs, boundaries[k]!, boundaries[k + 1]!, series), values),
      `bucket ${iso(boundaries[k]!)}`,
    );
  }
}

describe('tiers and figures', () => {
  test('UTC hours answer from hour rows, figures only — no sketch is decoded', async () => {
    const from = at('2026-03-10T00:00:00Z');
    const recs = records(1, ['a'], from, from + 6 * H, 3000);
    const { answer, store } = await aggregate(recs, from + 6 * H, {
      start: from,
      end: from + 6 * H,
      interval: 'hour',
      values: FIGURE_VALUES,
    });
    assert.equal(answer.interval, 'hour');
    assert.equal(answer.start_at, iso(from));
    assert.equal(answer.end_at, iso(from + 6 * H));
    assert.equal(answer.complete_through_at, iso(from + 6 * H));
    assert.deepEqual(
      answer.series.map((s) => s.details),
      [{ label: 'Requests', hash: TOTAL_SERIES, dimensions: {}, color: null }],
      'no group_by: the total, labelled with the metric name',
    );
    assert.equal(answer.series_total, 1);
    assertBuckets(
      answer,
      recs,
      Array.from({ length: 7 }, (_, k) => from + k * H),
    );
    assert.ok(
      store.reads.every((r) => !r.sketches),
      'one stored row per bucket: precomputed figures',
    );
    assert.ok(store.reads.some((r) => r.tier === 'hour'));
  });

  test('a UTC day from day rows, a window off tier boundaries merges hours and minutes with their sketches', async () => {
    const from = at('2026-03-01T00:00:00Z');
    const recs = records(2, ['a'], from, from + 3 * D, 1500);
    const { answer, store } = await aggregate(recs, from + 3 * D, {
      start: from,
      end: from + 3 * D,
      interval: 'day',
      values: FIGURE_VALUES,
    });
    assertBuckets(answer, recs, [from, from + D, from + 2 * D, from + 3 * D]);
    assert.deepEqual([...new Set(store.reads.map((r) => r.tier))], ['day'], 'whole UTC days: day rows only');
    assert.ok(store.reads.every((r) => !r.sketches));

    // Asia/Kathmandu (+05:45) days start at 18:15 UTC: days of hours in the middle, minutes at the edges.
    const kathmandu = await aggregate(recs, from + 3 * D, {
      start: from + D,
      end: from + 2 * D,
      interval: 'day',
      timeZone: 'Asia/Kathmandu',
      values: FIGURE_VALUES,
    });
    const dayStart = at('2026-03-01T18:15:00Z');
    assertBuckets(kathmandu.answer, recs, [dayStart, dayStart + D, dayStart + 2 * D]);
    const tiers = new Set(kathmandu.store.reads.filter((r) => r.sketches).map((r) => r.tier));
    assert.deepEqual([...tiers].sort(), ['hour', 'minute'], 'the tiers merged in process');
  });

  test('month buckets in Europe/Berlin merge UTC days with hour edges; UTC months read month rows', async () => {
    const from = at('2026-01-01T00:00:00Z');
    const recs = records(3, ['a'], from, at('2026-04-01T00:00:00Z'), 1500);
    const w = at('2026-04-01T00:00:00Z');
    const berlin = await aggregate(recs, w, {
      start: at('2026-02-01T00:00:00Z'),
      end: at('2026-03-15T00:00:00Z'),
      interval: 'month',
      timeZone: 'Europe/Berlin',
      values: FIGURE_VALUES,
    });
    // Local months: Feb [Jan 31 23:00Z, Feb 28 23:00Z), Mar [Feb 28 23:00Z, Mar 31 22:00Z) — summer time from Mar 29.
    assertBuckets(berlin.answer, recs, [
      at('2026-01-31T23:00:00Z'),
      at('2026-02-28T23:00:00Z'),
      at('2026-03-31T22:00:00Z'),
    ]);
    const tiers = berlin.store.reads
      .filter((r) => r.series === null || !r.series.includes(TOTAL_SERIES) || r.sketches)
      .map((r) => r.tier);
    assert.ok(
      tiers.includes('day') && tiers.includes('hour') && !tiers.includes('minute'),
      `days and hour edges, no minutes: ${tiers}`,
    );

    const utc = await aggregate(recs, w, { start: from, end: w, interval: 'month', values: FIGURE_VALUES });
    assertBuckets(utc.answer, recs, [from, at('2026-02-01T00:00:00Z'), at('2026-03-01T00:00:00Z'), w]);
    assert.ok(utc.store.reads.every((r) => r.tier === 'month' && !r.sketches));
  });
});

describe('time zones', () => {
  const dstCases = [
    {
      zone: 'Europe/Berlin',
      // 2026-03-29 is 23 hours (02:00 → 03:00), 2026-10-25 is 25 hours (03:00 → 02:00).
      spring: ['2026-03-27T23:00:00Z', '2026-03-28T23:00:00Z', '2026-03-29T22:00:00Z', '2026-03-30T22:00:00Z'],
      autumn: ['2026-10-23T22:00:00Z', '2026-10-24T22:00:00Z', '2026-10-25T23:00:00Z', '2026-10-26T23:00:00Z'],
    },
    {
      zone: 'America/New_York',
      // 2026-03-08 is 23 hours, 2026-11-01 is 25 hours.
      spring: ['2026-03-07T05:00:00Z', '2026-03-08T05:00:00Z', '2026-03-09T04:00:00Z', '2026-03-10T04:00:00Z'],
      autumn: ['2026-10-31T04:00:00Z', '2026-11-01T04:00:00Z', '2026-11-02T05:00:00Z', '2026-11-03T05:00:00Z'],
    },
  ];
  for (const c of dstCases) {
    test(`${c.zone}: day buckets start at local midnight across both DST changes`, async () => {
      for (const days of [c.spring, c.autumn]) {
        const b = days.map(at);
        const recs = records(4, ['a'], b[0]! - 2 * H, b[3]! + 2 * H, 1200);
        const { answer } = await aggregate(recs, b[3]! + D, {
          start: b[0]! + H,
          end: b[3]! - H,
          interval: 'day',
          timeZone: c.zone,
          values: FIGURE_VALUES,
        });
        assertBuckets(answer, recs, b);
        assert.deepEqual(
          b.slice(1).map((x, i) => (x - b[i]!) / H),
          days === c.spring ? [24, 23, 24] : [24, 25, 24],
        );
      }
    });
  }

  test('Asia/Kolkata hours run from :30 to :30 UTC, merged from minute rows', async () => {
    const from = at('2026-05-01T00:00:00Z');
    const recs = records(5, ['a'], from, from + 4 * H, 3000);
    const { answer, store } = await aggregate(recs, from + 5 * H, {
      start: from + H,
      end: from + 3 * H,
      interval: 'hour',
      timeZone: 'Asia/Kolkata',
      values: FIGURE_VALUES,
    });
    assertBuckets(answer, recs, [from + 30 * M, from + 90 * M, from + 150 * M, from + 210 * M]);
    assert.ok(store.reads.filter((r) => r.sketches).every((r) => r.tier === 'minute'));
  });
});

describe('values over time', () => {
  const from = at('2026-06-01T00:00:00Z');
  // Readings at 00:10 (5), 00:20 (7), nothing in hour 1, 02:30 (null only), 03:15 (2): hour 4 and 5 empty.
  const recs: Rec[] = [
    { series: 'a', t: from + 10 * M, value: 5 },
    { series: 'a', t: from + 20 * M, value: 7 },
    { series: 'a', t: from + 2 * H + 30 * M, value: null },
    { series: 'a', t: from + 3 * H + 15 * M, value: 2 },
  ];
  const hours = (k: number): string => iso(from + k * H);

  test('last carries forward across complete empty buckets; zero before the first reading', async () => {
    const { answer } = await aggregate(recs, from + 6 * H, {
      start: from - H,
      end: from + 6 * H,
      interval: 'hour',
      values: ['last', 'count'],
    });
    assert.deepEqual(answer.series[0]!.records, {
      [hours(-1)]: [0, 0],
      [hours(0)]: [7, 2],
      [hours(1)]: [7, 0],
      [hours(2)]: [7, 1],
      [hours(3)]: [2, 1],
      [hours(4)]: [2, 0],
      [hours(5)]: [2, 0],
    });
  });

  test('cumulative_sum and cumulative_count are running totals from the start of the range', async () => {
    const { answer } = await aggregate(recs, from + 6 * H, {
      start: from,
      end: from + 5 * H,
      interval: 'hour',
      values: ['cumulative_sum', 'cumulative_count', 'sum'],
      emptyHandling: 'gaps',
    });
    assert.deepEqual(answer.series[0]!.records, {
      [hours(0)]: [12, 2, 12],
      [hours(1)]: [12, 2, null],
      [hours(2)]: [12, 3, 0],
      [hours(3)]: [14, 4, 2],
      [hours(4)]: [14, 4, null],
    });
  });

  test('gaps read null, zero reads 0; normalize=false leaves empty buckets out', async () => {
    const values: ChartValue[] = ['count', 'average', 'p50'];
    const gaps = await aggregate(recs, from + 6 * H, {
      start: from,
      end: from + 5 * H,
      interval: 'hour',
      values,
      emptyHandling: 'gaps',
    });
    assert.deepEqual(gaps.answer.series[0]!.records[hours(1)], [null, null, null]);
    assert.deepEqual(
      gaps.answer.series[0]!.records[hours(2)],
      [1, null, null],
      'records without a number: no average under skip',
    );
    const zero = await aggregate(recs, from + 6 * H, {
      start: from,
      end: from + 5 * H,
      interval: 'hour',
      values,
      emptyHandling: 'zero',
    });
    assert.deepEqual(zero.answer.series[0]!.records[hours(1)], [0, 0, 0]);
    const sparse = await aggregate(recs, from + 6 * H, {
      start: from,
      end: from + 5 * H,
      interval: 'hour',
      values,
      normalize: false,
    });
    assert.deepEqual(Object.keys(sparse.answer.series[0]!.records), [hours(0), hours(2), hours(3)]);
  });

  test('null_handling=count_as_zero: nulls count as zeros in average, min, max and percentiles', async () => {
    const day = [...recs, { series: 'a', t: from + 40 * M, value: null }];
    const { answer } = await aggregate(day, from + 6 * H, {
      start: from,
      end: from + H,
      interval: 'hour',
      values: ['count', 'sum', 'average', 'min', 'max', 'p50'],
      nullHandling: 'count_as_zero',
    });
    // Hour 0: 5, 7 and one null → 0, 5, 7.
    assert.deepEqual(answer.series[0]!.records[hours(0)]!.slice(0, 5), [3, 12, 4, 0, 7]);
    const p50 = answer.series[0]!.records[hours(0)]![5]!;
    assert.ok(Math.abs(p50 - 5) <= 0.01 * 5, `p50 of 0, 5, 7 is 5 within 1%: ${p50}`);
  });
});

describe('coverage', () => {
  const from = at('2026-07-01T00:00:00Z');
  const recs: Rec[] = [
    { series: 'a', t: from + 5 * M, value: 1 },
    { series: 'a', t: from + 2 * H + 5 * M, value: 2 },
    { series: 'a', t: from + 4 * H + 5 * M, value: 3 },
  ];
  const w = from + 3 * H;

  test('strict answers only buckets ending at or before complete_through_at', async () => {
    const { answer } = await aggregate(recs, w, {
      start: from,
      end: from + 6 * H,
      interval: 'hour',
      values: ['count'],
    });
    assert.deepEqual(
      Object.keys(answer.series[0]!.records),
      [0, 1, 2].map((k) => iso(from + k * H)),
    );
    assert.equal(answer.coverage_mode, 'strict');
    const none = await aggregate(recs, null, { start: from, end: from + 6 * H, interval: 'hour' });
    assert.deepEqual(none.answer.series[0]!.records, {}, 'no watermark: nothing is final');
    assert.equal(none.answer.complete_through_at, null);
  });

  test('observed adds provisional buckets with data, from minute rows, without filling the empty ones', async () => {
    const { answer, store } = await aggregate(recs, w, {
      start: from,
      end: from + 6 * H,
      interval: 'hour',
      values: ['count'],
      coverage: 'observed',
    });
    assert.deepEqual(answer.series[0]!.records, {
      [iso(from)]: [1],
      [iso(from + H)]: [0],
      [iso(from + 2 * H)]: [1],
      [iso(from + 4 * H)]: [1],
    });
    assert.ok(
      store.reads.filter((r) => r.from >= w).every((r) => r.tier === 'minute'),
      'past the watermark only minute rows are read',
    );
  });
});

describe('series and __other__', () => {
  const from = at('2026-08-01T00:00:00Z');
  const names = ['s1', 's2', 's3', 's4', 's5'];
  const recs = records(6, names, from, from + 6 * H, 5000);
  const registry = names.map((h, i) => seriesRecord(h, { last_value: 100 - i * 10 })); // s1 ranks first
  const grouped = metric({ group_by: ['region'] });
  const window = { start: from, end: from + 6 * H, interval: 'hour' as const };
  const hoursOf = Array.from({ length: 7 }, (_, k) => from + k * H);

  test('no pins: the top max_series by last_value are kept, the tail folds into __other__ by subtraction', async () => {
    const values: ChartValue[] = ['count', 'sum', 'average', 'min', 'max', 'p50', 'p95', 'p99'];
    const { answer, store } = await aggregate(
      recs,
      from + 6 * H,
      { ...window, values, maxSeries: 2 },
      { metric: grouped, registry },
    );
    assert.deepEqual(
      answer.series.map((s) => s.details.hash),
      ['s1', 's2', OTHER_SERIES],
    );
    assert.deepEqual(answer.series[0]!.details, { label: 's1', hash: 's1', dimensions: { region: 's1' }, color: null });
    assert.equal(answer.series_total, 5);
    const planned = store.reads.filter((r) => r.sketches);
    assert.ok(
      planned.length > 0 &&
        planned.every((r) => r.series !== null && r.series.includes(TOTAL_SERIES) && !r.series.includes('s3')),
      'the total and the kept series, never the tail',
    );
    const tail = new Set(['s3', 's4', 's5']);
    for (let k = 0; k < 6; k++) {
      const exact = exactRow(inRange(recs, hoursOf[k]!, hoursOf[k + 1]!, tail));
      const got = answer.series[2]!.records[iso(hoursOf[k]!)]!;
      // count, sum, average exact; percentiles equal the tail's merged sketch; min and max within α.
      assertRow(got.slice(0, 3), exact.slice(0, 3), `other ${k}`);
      assert.deepEqual(
        got.slice(5),
        exact.slice(6, 9),
        `other ${k}: percentiles by subtraction equal the tail's merge`,
      );
      for (const i of [3, 4])
        assert.ok(
          Math.abs(got[i]! - exact[i]!) <= 0.01 * Math.abs(exact[i]!),
          `other ${k} ${values[i]}: ${got[i]} vs ${exact[i]}`,
        );
    }
    assertBuckets(answer, recs, hoursOf, 0, new Set(['s1']));
  });

  test('pins replace ranking; last and count_unique fold by merging the tail', async () => {
    const pinned = registry.map((s) =>
      s.hash === 's4' ? { ...s, pinned_at: '2026-01-02T00:00:00.000Z', color: 'teal' } : s,
    );
    const { answer, store } = await aggregate(
      recs,
      from + 6 * H,
      { ...window, values: FIGURE_VALUES, maxSeries: 2 },
      { metric: grouped, registry: pinned },
    );
    assert.deepEqual(
      answer.series.map((s) => s.details.hash),
      ['s4', OTHER_SERIES],
    );
    assert.equal(answer.series[0]!.details.color, 'teal');
    assertBuckets(answer, recs, hoursOf, 0, new Set(['s4']));
    assertBuckets(answer, recs, hoursOf, 1, new Set(['s1', 's2', 's3', 's5']));
    assert.ok(
      store.reads.some((r) => r.sketches && ['s1', 's2', 's3', 's5'].every((h) => r.series?.includes(h))),
      'the tail merged from its rows',
    );
  });

  test('a merged tail is kept between answers while the total counts the same records, merged again once records arrive', async () => {
    const cache = new TailUnionCache();
    const values: ChartValue[] = ['count', 'last', 'count_unique'];
    const tail = new Set(['s3', 's4', 's5']);
    const tailSketchReads = (store: MemoryRollups) => store.reads.filter((r) => r.sketches && r.series?.includes('s3'));
    const first = await aggregate(
      recs,
      from + 6 * H,
      { ...window, values, maxSeries: 2 },
      { metric: grouped, registry, tailCache: cache },
    );
    assert.equal(tailSketchReads(first.store).length > 0, true, 'merged once');
    assert.equal(cache.size, 6, 'one union per hour');
    const again = await aggregate(
      recs,
      from + 6 * H,
      { ...window, values, maxSeries: 2 },
      { metric: grouped, registry, tailCache: cache },
    );
    assert.deepEqual(tailSketchReads(again.store), [], 'answered from the cache: no tail state read');
    assert.deepEqual(again.answer, first.answer);
    // Records arrive in the third hour, for a tail series and a kept one: only that hour is merged again.
    const more = [
      ...recs,
      { series: 's4', t: hoursOf[2]! + 60_000, value: 5, unique: 'new-user-1' },
      { series: 's1', t: hoursOf[2]! + 120_000, value: 7, unique: 'new-user-2' },
    ];
    const later = await aggregate(
      more,
      from + 6 * H,
      { ...window, values, maxSeries: 2 },
      { metric: grouped, registry, tailCache: cache },
    );
    const reread = tailSketchReads(later.store);
    assert.ok(
      reread.length > 0 && reread.every((r) => r.from >= hoursOf[2]! && r.to <= hoursOf[3]!),
      'only the hour that changed',
    );
    assert.equal(later.answer.series[2]!.details.hash, OTHER_SERIES);
    assertBuckets(later.answer, more, hoursOf, 2, tail);
    assertBuckets(later.answer, more, hoursOf, 0, new Set(['s1']));
  });

  test('a series filter answers exactly those series, __total__ allowed, nothing folded', async () => {
    const { answer } = await aggregate(
      recs,
      from + 6 * H,
      { ...window, values: FIGURE_VALUES, series: ['s5', TOTAL_SERIES] },
      { metric: grouped, registry },
    );
    assert.deepEqual(
      answer.series.map((s) => s.details.hash),
      ['s5', TOTAL_SERIES],
    );
    assert.equal(answer.series_total, 5);
    assertBuckets(answer, recs, hoursOf, 0, new Set(['s5']));
    assertBuckets(answer, recs, hoursOf, 1);
  });

  test('QuantileSketch.subtract leaves exactly the sketch of the rest', () => {
    const random = mulberry32(7);
    const all = new QuantileSketch();
    const part = new QuantileSketch();
    const rest = new QuantileSketch();
    for (let i = 0; i < 5000; i++) {
      const v = (random() - 0.3) * 1000;
      all.add(v);
      (i % 3 === 0 ? part : rest).add(v);
    }
    all.subtract(part);
    assert.equal(all.count, rest.count);
    for (const q of [0.01, 0.25, 0.5, 0.75, 0.95, 0.99]) assert.equal(all.quantile(q), rest.quantile(q), `q=${q}`);
    assert.ok(Math.abs(all.sum - rest.sum) < 1e-6);
    assert.ok(
      Math.abs(all.min! - rest.min!) <= 0.01 * Math.abs(rest.min!) &&
        Math.abs(all.max! - rest.max!) <= 0.01 * Math.abs(rest.max!),
    );
    assert.throws(() => rest.subtract(part), RangeError, 'a sketch that is not a part is refused');
  });
});

describe('fits', () => {
  test('a regression per series over the first value, and a forecast at forecast_at', async () => {
    const from = at('2026-09-01T00:00:00Z');
    const recs: Rec[] = [];
    for (let k = 0; k < 10; k++)
      for (let i = 0; i <= k; i++) recs.push({ series: 'a', t: from + k * H + i * M, value: 1 });
    const { answer } = await aggregate(
      recs,
      from + 10 * H,
      {
        start: from,
        end: from + 10 * H,
        interval: 'hour',
        values: ['count'],
        regression: 'linear',
        forecastAt: from + 20 * H,
      },
      { now: from + 10 * H },
    );
    const s = answer.series[0]!;
    assert.ok(s.regression, 'a linear trend is fitted');
    assert.ok(
      s.forecast && Math.abs(s.forecast.value - 21) < 1e-6,
      `counts 1..10 per hour forecast 21 at hour 20: ${JSON.stringify(s.forecast)}`,
    );
    const plain = await aggregate(recs, from + 10 * H, { start: from, end: from + 10 * H, interval: 'hour' });
    assert.equal(plain.answer.series[0]!.regression, null);
    assert.equal(plain.answer.series[0]!.forecast, null);
  });
});

describe('the API writes the answer as text', () => {
  const from = at('2026-10-01T00:00:00Z');
  const names = ['s1', 's2', 's3'];
  const recs = records(9, names, from, from + 3 * H, 2000, 0.2);
  const registry = names.map((h, i) => seriesRecord(h, { last_value: 100 - i * 10 }));
  const grouped = metric({ group_by: ['region'] });
  const cases: Array<[string, Query, Options, number | null]> = [
    [
      'every value by minute, gaps, nulls',
      {
        start: from,
        end: from + 3 * H,
        interval: 'minute',
        values: [...FIGURE_VALUES, 'cumulative_sum', 'cumulative_count'],
        emptyHandling: 'gaps',
      },
      {},
      from + 2 * H,
    ],
    [
      'observed, not normalized, count_as_zero',
      {
        start: from - H,
        end: from + 3 * H,
        interval: 'hour',
        values: ['average', 'min', 'p95'],
        coverage: 'observed',
        normalize: false,
        nullHandling: 'count_as_zero',
      },
      {},
      from + H,
    ],
    [
      '__other__ by subtraction',
      { start: from, end: from + 3 * H, interval: 'hour', values: ['count', 'sum', 'p50'], maxSeries: 2 },
      { metric: grouped, registry },
      from + 3 * H,
    ],
    [
      '__other__ merged',
      { start: from, end: from + 3 * H, interval: 'minute', values: ['last', 'count_unique'], maxSeries: 1 },
      { metric: grouped, registry },
      from + 3 * H,
    ],
    [
      'fits',
      {
        start: from,
        end: from + 3 * H,
        interval: 'hour',
        values: ['count'],
        regression: 'linear',
        forecastAt: from + 9 * H,
      },
      { now: from + 3 * H },
      from + 3 * H,
    ],
    ['no watermark', { start: from, end: from + 3 * H, interval: 'hour', values: ['count'] }, {}, null],
  ];
  for (const [name, req, opts, watermark] of cases) {
    test(`${name}: the text is JSON.stringify of the answer, byte for byte`, async () => {
      const [text, stringified] = await bothTexts(recs, watermark, req, opts);
      assert.ok(text.length > 200, 'an answer with records');
      assert.equal(text, stringified);
    });
  }
});
