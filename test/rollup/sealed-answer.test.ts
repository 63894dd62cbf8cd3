import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CellGrid } from '../../src/rollup/aggregation/assemble.js';
import { columnsPart, sealedTables } from '../../src/rollup/aggregation/sealed-answer.js';
import { SealedCells } from '../../src/rollup/aggregation/sealed-cells.js';
import {
  seriesRecords,
  writeRecordsJson,
  type RecordRules,
  type RecordTable,
} from '../../src/rollup/aggregation/series-records.js';
import { joinJson } from '../../src/json-text.js';
import { allocColumns } from '../../src/rollup/stored-columns.js';
import type { ChartValue } from '../../src/rollup/metric-records.js';
import type { StoredColumns } from '../../src/rollup/rollup-types.js';
import { mulberry32 } from '../helpers/seeded-random.js';

/**
 * docs/metrics.md, "Sealed buckets": the tables an answer makes from cached sealed buckets plus a
 * read of the rest equal the ones made from every bucket's rows — as the window moves, the seal
 * point advances (new blocks), windows of other lengths share the cache and buckets have no rows.
 */

const M = 60_000;
const SERIES = ['s0', 's1', 's2'];

interface Row {
  series: number;
  start: number;
  count: number;
  sum: number;
}

/** Stored minute rows of `SERIES` in [from, to), by series then start (as a reader returns them). */
function columnsOf(rows: readonly Row[], from: number, to: number): StoredColumns {
  const picked = rows
    .filter((r) => r.start >= from && r.start < to)
    .sort((a, b) => a.series - b.series || a.start - b.start);
  const c = allocColumns(picked.length, SERIES, false);
  for (const f of ['min', 'max', 'last', 'last_at', 'p50', 'p95', 'p99', 'distinct'] as const) c[f].fill(NaN);
  picked.forEach((r, i) => {
    c.si[i] = r.series;
    c.start[i] = r.start;
    c.count[i] = r.count;
    c.value_count[i] = r.count;
    c.sum[i] = r.sum;
  });
  return c;
}

const text = (t: RecordTable): string => {
  const out: Array<string | Buffer> = [];
  writeRecordsJson(t, out);
  const j = joinJson(out);
  return typeof j === 'string' ? j : j.toString('utf8');
};

test('sealed answer: tables from cached buckets plus a read of the rest equal the tables of every bucket, across moving windows and seal points', async () => {
  const rand = mulberry32(12);
  const t0 = Date.UTC(2026, 0, 1);
  const rows: Row[] = [];
  for (let k = 0; k < 400; k++) {
    for (let s = 0; s < SERIES.length; s++) {
      // Gaps: a third of the (series, minute) cells have no row.
      if (rand() < 0.33) continue;
      const count = 1 + Math.floor(rand() * 9);
      rows.push({ series: s, start: t0 + k * M, count, sum: Math.round(rand() * 1000) / 8 });
    }
  }
  const cache = new SealedCells();
  const shapes: Array<{ values: ChartValue[]; normalize: boolean; emptyHandling: 'zero' | 'gaps' }> = [
    { values: ['count', 'sum'], normalize: true, emptyHandling: 'zero' },
    { values: ['average', 'count'], normalize: false, emptyHandling: 'gaps' },
  ];
  let served = 0;
  // Windows of 120 and 45 minutes sliding by 0–3 minutes; the seal point 2–6 minutes behind the window's end.
  for (let step = 0, end = t0 + 130 * M; step < 60; step++, end += Math.floor(rand() * 4) * M) {
    for (const shape of shapes) {
      for (const length of [120, 45]) {
        const boundaries = Array.from({ length: length + 1 }, (_, k) => end - (length - k) * M);
        const completeThrough = end - 2 * M;
        const sealBefore = completeThrough - Math.floor(rand() * 5) * M;
        const rules: RecordRules = {
          boundaries,
          completeThrough,
          coverage: 'observed',
          normalize: shape.normalize,
          values: shape.values,
          nullHandling: 'skip',
          emptyHandling: shape.emptyHandling,
        };
        const key = `${shape.values.join(',')}|${shape.normalize}`;
        const before = cache.servedBuckets;
        const got = await sealedTables({
          cache,
          key,
          metricId: 'm',
          sealBefore,
          candidates: SERIES,
          rules,
          compute: async (sub) =>
            columnsPart(columnsOf(rows, sub[0]!, sub[sub.length - 1]!), SERIES, { ...rules, boundaries: sub }),
        });
        served += cache.servedBuckets - before;
        const all = columnsOf(rows, boundaries[0]!, boundaries[length]!);
        const grid = new CellGrid(all, boundaries);
        SERIES.forEach((s, j) => {
          const want = seriesRecords(grid.reader(s), rules);
          const t = got.tables[j]!;
          assert.equal(text(t), text(want), `step ${step}, ${key}, ${length} min, ${s}: text`);
          assert.deepEqual(
            [t.rows, [...t.buckets.subarray(0, t.rows)], [...t.cells.subarray(0, t.rows * t.width)]],
            [want.rows, [...want.buckets.subarray(0, want.rows)], [...want.cells.subarray(0, want.rows * want.width)]],
            `step ${step}: numbers`,
          );
        });
        const withData = new Set(
          SERIES.filter((_, j) => {
            for (let i = 0; i < all.length; i++) if (all.si[i] === j) return true;
            return false;
          }),
        );
        assert.deepEqual([...got.withData].sort(), [...withData].sort());
      }
    }
  }
  assert.ok(served > 10_000, `most buckets came from the cache (${served})`);
});

test('sealed answer: a window wholly sealed is answered from the cache alone, the same as computing it, until a write below the seal point', async () => {
  const t0 = Date.UTC(2026, 0, 1);
  const rows: Row[] = [];
  for (let k = 0; k < 200; k++)
    for (let s = 0; s < SERIES.length; s++)
      if ((k + s) % 4 !== 0) rows.push({ series: s, start: t0 + k * M, count: 1 + ((k * 7 + s) % 5), sum: k + s / 4 });
  const cache = new SealedCells();
  const boundaries = Array.from({ length: 121 }, (_, k) => t0 + 40 * M + k * M);
  const rules: RecordRules = {
    boundaries,
    completeThrough: t0 + 300 * M,
    coverage: 'observed',
    normalize: false,
    values: ['count', 'sum'],
    nullHandling: 'skip',
    emptyHandling: 'zero',
  };
  let reads = 0;
  const ask = () =>
    sealedTables({
      cache,
      key: 'k',
      metricId: 'm',
      sealBefore: t0 + 250 * M,
      candidates: SERIES,
      rules,
      compute: async (sub) => (
        reads++, columnsPart(columnsOf(rows, sub[0]!, sub[sub.length - 1]!), SERIES, { ...rules, boundaries: sub })
      ),
    });
  const want = () => {
    const grid = new CellGrid(columnsOf(rows, boundaries[0]!, boundaries[120]!), boundaries);
    return SERIES.map((s) => text(seriesRecords(grid.reader(s), rules)));
  };
  const first = await ask();
  assert.deepEqual(first.tables.map(text), want());
  const second = await ask();
  const third = await ask();
  assert.equal(reads, 1, 'only the first answer read anything');
  assert.deepEqual(second.tables.map(text), want());
  assert.equal(third.tables[0], second.tables[0], 'the same window: the same tables');
  assert.deepEqual([...third.withData].sort(), SERIES);
  // A write below the seal point: the next answer reads again, and sees the new row.
  rows.push({ series: 1, start: t0 + 100 * M, count: 1000, sum: 1 });
  cache.written('m', t0 + 100 * M);
  const after = await ask();
  assert.equal(reads, 2);
  assert.deepEqual(after.tables.map(text), want());
  assert.notDeepEqual(after.tables.map(text), second.tables.map(text));
});
