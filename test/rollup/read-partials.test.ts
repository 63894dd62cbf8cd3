import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeState, emptyState, encodeState, figuresOf } from '../../src/rollup/bucket-state.js';
import { compactPartials } from '../../src/rollup/compactor.js';
import { loadHasher } from '../../src/rollup/hll.js';
import { rollupReader } from '../../src/rollup/rollup-reader.js';
import { RollupStore } from '../../src/rollup/rollup-store.js';
import { COLUMN_FIGURES, type ColumnFigure, type MetricPartials, type Tier } from '../../src/rollup/rollup-types.js';
import { decodeStateWithoutDistinct, readStateScalars } from '../../src/rollup/state-scalars.js';

/**
 * docs/metrics.md, "Aggregation", "How answers are served": a read of counts, sums, extremes and
 * `last` over rows whose partials are not compacted yet merges the partials from their states'
 * headers (state-scalars.ts) instead of decoding their sketches — and gives the same figures as
 * merging the decoded states. The store also tells which minutes each write touched.
 */

const T0 = Date.UTC(2026, 3, 1, 22);
const MIN = 60_000;

/** A seeded generator: the same states every run. */
function random(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
}

function file(rnd: () => number, rows: number): MetricPartials {
  const partials = [];
  for (let k = 0; k < rows; k++) {
    const state = emptyState({ values: true, distinct: true });
    const n = 1 + Math.floor(rnd() * 4);
    state.count = n;
    for (let i = 0; i < n; i++) {
      // Some records have no number (counted, not in the value figures); values of both signs.
      if (rnd() < 0.2) continue;
      state.values!.add(Math.round((rnd() - 0.3) * 1e4) / 10);
      state.distinct!.add(`u${Math.floor(rnd() * 50)}`);
    }
    if (rnd() < 0.7) {
      state.last = Math.round(rnd() * 100);
      // Ties of `last` times across partials of one bucket: the one merged last wins.
      state.lastAt = T0 + Math.floor(rnd() * 8) * MIN;
    }
    partials.push({
      series: Math.floor(rnd() * 3),
      minute: T0 + Math.floor(rnd() * 180) * MIN,
      state: encodeState(state),
    });
  }
  return {
    metricId: 'm1',
    revision: 1,
    series: [0, 1, 2].map((s) => ({ hash: `s${s}`, dimensions: {}, display: null })) as never,
    partials,
    kept: rows,
  };
}

test('reads over uncompacted partials: figures merged from the states headers equal those of the decoded states', async (t) => {
  await loadHasher();
  const dir = mkdtempSync(join(tmpdir(), 'read-partials-'));
  const store = await RollupStore.open(dir);
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const written: Array<{ id: string; from: number; minutes: number[] }> = [];
  store.listener = {
    added: (id, from, minutes) => written.push({ id, from, minutes: [...minutes] }),
    dropped: () => {},
  };
  const rnd = random(7);
  // Canonical rows first (compacted), then partials on top of them and beside them.
  const first = file(rnd, 400);
  assert.equal(await store.mergeBackfillFile('m1', 1, 'f0', first), true);
  for (let more = true; more; ) more = (await compactPartials(store, () => 1)).more;
  const second = file(rnd, 400);
  assert.equal(await store.mergeBackfillFile('m1', 1, 'f1', second), true);

  const minutes = (f: MetricPartials) => [...new Set(f.partials.map((p) => p.minute))].sort((a, b) => a - b);
  assert.deepEqual(
    written.map((w) => w.minutes),
    [minutes(first), minutes(second)],
    'each write reports the minutes it touched, sorted',
  );
  assert.deepEqual(
    written.map((w) => w.from),
    [minutes(first)[0], minutes(second)[0]],
  );

  const reader = rollupReader(store, () => null);
  const scalar = new Set<ColumnFigure>(['start', 'count', 'value_count', 'sum', 'min', 'max', 'last', 'last_at']);
  for (const tier of ['minute', 'hour', 'day'] as Tier[]) {
    const q = {
      metricId: 'm1',
      revision: 1,
      tier,
      from: T0 - 86_400_000,
      to: T0 + 2 * 86_400_000,
      series: ['s0', 's1', 's2'],
    };
    const fast = await reader.readColumns!({ ...q, sketches: false, figures: scalar });
    const decoded = await reader.readColumns!({ ...q, sketches: false });
    assert.ok(fast.length > 0 && fast.length === decoded.length, `${tier}: ${fast.length} rows`);
    assert.deepEqual([...fast.si], [...decoded.si]);
    for (const f of COLUMN_FIGURES.filter((x) => scalar.has(x) && x !== 'sum'))
      assert.deepEqual([...fast[f]], [...decoded[f]], `${tier} ${f}`);
    // Percentiles need the value sketches (decoded), not the distinct ones (left out): the same quantiles.
    const quantiles = new Set<ColumnFigure>(['start', 'count', 'value_count', 'p50', 'p95', 'p99']);
    for (const sketches of [false, true]) {
      const noDistinct = await reader.readColumns!({ ...q, sketches, figures: quantiles });
      for (const f of ['count', 'p50', 'p95', 'p99'] as const)
        assert.deepEqual([...noDistinct[f]], [...decoded[f]], `${tier} ${f} sketches ${sketches}`);
      if (sketches)
        assert.ok(noDistinct.states!.every((st) => st !== null && st.distinct === null && st.values !== null));
    }
    for (let i = 0; i < fast.length; i++) {
      const [a, b] = [fast.sum[i]!, decoded.sum[i]!];
      assert.ok(
        Number.isNaN(a) ? Number.isNaN(b) : Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)),
        `${tier} sum ${a} ${b}`,
      );
    }
  }
});

test('an observed read over a backlog of partials: past the budget, the ones before `keepFrom` are left out and counted', async (t) => {
  await loadHasher();
  const dir = mkdtempSync(join(tmpdir(), 'read-budget-'));
  const store = await RollupStore.open(dir);
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const rnd = random(11);
  assert.equal(await store.mergeBackfillFile('m1', 1, 'f0', file(rnd, 300)), true);
  for (let more = true; more; ) more = (await compactPartials(store, () => 1)).more;
  const waiting = file(rnd, 300);
  assert.equal(await store.mergeBackfillFile('m1', 1, 'f1', waiting), true);
  const reader = rollupReader(store, () => null);
  const keepFrom = T0 + 90 * MIN;
  const q = {
    metricId: 'm1',
    revision: 1,
    tier: 'hour' as Tier,
    from: T0 - 86_400_000,
    to: T0 + 86_400_000,
    series: ['s0', 's1', 's2'],
    sketches: false,
    figures: new Set<ColumnFigure>(['start', 'count', 'value_count', 'sum']),
  };
  const sum = (a: Float64Array) => a.reduce((n, x) => n + x, 0);
  const exact = await reader.readColumns!(q);
  assert.equal(exact.leftOut, undefined);
  // Within the budget: exact, nothing left out.
  const within = await reader.readColumns!({ ...q, partialBudget: { rows: 300, keepFrom } });
  assert.equal(within.leftOut, undefined);
  assert.deepEqual([...within.count], [...exact.count]);
  // Over it: the partials of minutes before keepFrom are left out, and said to be.
  const over = await reader.readColumns!({ ...q, partialBudget: { rows: 299, keepFrom } });
  const older = waiting.partials.filter((p) => p.minute < keepFrom);
  assert.equal(over.leftOut, older.length);
  const olderRecords = older.reduce((n, p) => n + decodeState(p.state).count, 0);
  assert.ok(olderRecords > 0);
  assert.equal(sum(over.count), sum(exact.count) - olderRecords);
});

test('state scalars: the header figures of every state shape equal those of the decoded state', async () => {
  await loadHasher();
  const rnd = random(3);
  const into = { count: 0, valueCount: 0, sum: 0, min: 0, max: 0, last: 0, lastAt: 0 };
  for (const shape of [
    { values: true, distinct: true },
    { values: true, distinct: false },
    { values: false, distinct: true },
    { values: false, distinct: false },
  ]) {
    for (let k = 0; k < 50; k++) {
      const s = emptyState(shape);
      s.count = k;
      for (let i = 0; i < k % 7; i++) {
        s.values?.add((rnd() - 0.5) * 1e6);
        s.distinct?.add(i);
      }
      if (k % 3 === 0) {
        s.last = k;
        s.lastAt = T0 + k;
      }
      const bytes = encodeState(s);
      const f = figuresOf(decodeState(bytes));
      const got = readStateScalars(bytes, into);
      const { distinct: _, ...rest } = f;
      const { distinct: __, ...withoutDistinct } = figuresOf(decodeStateWithoutDistinct(bytes));
      assert.deepEqual(withoutDistinct, rest);
      const n = (x: number | null) => x ?? Number.NaN;
      assert.deepEqual(
        [got.count, got.valueCount, got.sum, got.min, got.max, got.last, got.lastAt],
        [f.count, f.value_count, n(f.sum), n(f.min), n(f.max), n(f.last), n(f.last_at)],
      );
    }
  }
  // A layout this build does not know is decoded (and refused) as decodeState refuses it, never guessed.
  assert.throws(() => readStateScalars(Uint8Array.from([9, 0, 1]), into));
});
