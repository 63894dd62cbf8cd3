/**
 * Issue 22, item 4: the metrics of one view are built in one fused pass (partials.ts) — filters,
 * times, series keys and unique hashes computed once for all of them, cells laid out once per
 * (filter, time, group_by), state bytes written per cell without sketch objects. No behaviour
 * change: every metric's partials are exactly what the per-metric builder of before gave (its code
 * kept in reference-partials.ts) — same series, same order, same states — with shared and unshared
 * filters and group_by lists, nulls, several group fields, display fields, a date timestamp field,
 * late-event bounds, cells past the distinct sketch's exact form, and metrics that fail.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeState, encodeState } from '../../src/rollup/bucket-state.js';
import { loadHasher } from '../../src/rollup/hll.js';
import { metricPartialsStage } from '../../src/rollup/metric-stage.js';
import type { MetricTask } from '../../src/rollup/metric-task.js';
import type { MetricPartials } from '../../src/rollup/rollup-types.js';
import { buildPartials } from '../../src/rollup/partials.js';
import type { OutputColumn, OutputField } from '../../src/transform/output-schema.js';
import { referencePartials } from './reference-partials.js';

const FIELDS: OutputField[] = [
  { name: 'region', type: 'string' },
  { name: 'code', type: 'number' },
  { name: 'ok', type: 'boolean' },
  { name: 'amount', type: 'number' },
  { name: 'user', type: 'string' },
  { name: 'at', type: 'date' },
  { name: 'tags', type: 'array' },
  { name: 'label', type: 'string' },
];
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

/** `n` rows of known pseudo-random values (nulls among them), over 40 minutes, out of time order. */
function batch(n: number, users: number): { ts: Float64Array; columns: OutputColumn[] } {
  let x = 7;
  const rnd = (k: number) => ((x = (x * 1_103_515_245 + 12_345) % 2 ** 31), x % k);
  const rows = Array.from({ length: n }, () => ({
    ts: T0 + rnd(40 * 60) * 1_000 + rnd(3),
    region: rnd(9) === 0 ? null : `r${rnd(6)}`,
    code: rnd(7) === 0 ? null : 200 + rnd(4) * 100,
    ok: rnd(5) === 0 ? null : rnd(2) === 0,
    amount: rnd(6) === 0 ? null : rnd(8) === 0 ? -rnd(50) / 10 : rnd(1_000) / 10,
    user: rnd(10) === 0 ? null : `u${rnd(users)}`,
    at: rnd(11) === 0 ? null : T0 + rnd(20) * 60_000 + rnd(2) * 1_000,
    tags: rnd(4) === 0 ? null : JSON.stringify(rnd(2) === 0 ? ['x'] : ['y', 'z']),
    label: `l${rnd(3)}`,
  }));
  return {
    ts: Float64Array.from(rows.map((r) => r.ts)),
    columns: FIELDS.map(
      (f) => ({ name: f.name, type: f.type, values: rows.map((r) => r[f.name as keyof typeof r]) }) as OutputColumn,
    ),
  };
}

function task(id: string, over: Partial<MetricTask>): MetricTask {
  return {
    metricId: id,
    revision: 1,
    groupBy: [],
    filters: '',
    fields: FIELDS,
    timestampField: '__ts',
    valueField: 'amount',
    uniqueField: 'user',
    displayFields: null,
    ...over,
  };
}

const TASKS: MetricTask[] = [
  task('met_a', { groupBy: ['region'] }),
  task('met_b', { groupBy: ['region'], filters: 'code >= 300' }),
  task('met_b2', { groupBy: ['region'], filters: 'code >= 300', valueField: null }),
  task('met_b3', { groupBy: ['code'], filters: 'code >= 300', uniqueField: null }),
  task('met_c', { groupBy: ['region'], eventFrom: T0 + 10 * 60_000 }),
  task('met_c2', { groupBy: ['region'], eventFrom: T0 + 10 * 60_000, eventBefore: T0 + 30 * 60_000 }),
  task('met_d', { groupBy: ['region', 'code'] }),
  task('met_e', { groupBy: ['region', 'code'], filters: "region != 'r1'", displayFields: { code: 'label' } }),
  task('met_f', { groupBy: ['code', 'region'] }),
  task('met_g', { groupBy: ['ok'], filters: "tags contains 'x'" }),
  task('met_h', { groupBy: [] }),
  task('met_h2', { groupBy: [], filters: 'ok = true or amount > 50' }),
  task('met_i', { groupBy: ['region'], valueField: null, uniqueField: null }),
  task('met_t', { groupBy: ['region'], timestampField: 'at' }),
  task('met_t2', { groupBy: [], timestampField: 'at', filters: 'code >= 300' }),
  task('met_u', { groupBy: ['user'], valueField: 'code' }),
  task('met_j', { groupBy: ['missing'] }),
  task('met_k', { groupBy: ['region'], valueField: 'gone' }),
];

before(loadHasher);

/**
 * The partials with each state as the current format writes it (decoded, encoded again): equal
 * states compare equal whether or not the two builders write the same version of the format.
 */
function normalized(p: MetricPartials | null): MetricPartials | null {
  if (p === null) return null;
  return { ...p, partials: p.partials.map((x) => ({ ...x, state: encodeState(decodeState(x.state)) })) };
}

/** Each outcome against the reference builder of its metric alone: equal partials, or the same failure. */
function assertSameAsReference(tasks: readonly MetricTask[], n: number, users: number): void {
  const { ts, columns } = batch(n, users);
  const outcomes = metricPartialsStage(tasks, ts, columns);
  assert.equal(outcomes.length, tasks.length);
  for (const [i, t] of tasks.entries()) {
    const o = outcomes[i]!;
    let want: ReturnType<typeof referencePartials> | null = null;
    let wantError: string | null = null;
    try {
      want = referencePartials(t, ts, columns);
    } catch (err) {
      wantError = (err as Error).message;
    }
    if (wantError !== null) {
      assert.equal(o.status, 'failed', t.metricId);
      assert.equal(o.status === 'failed' && o.message, wantError);
      assert.throws(() => buildPartials(t, ts, columns), { message: wantError });
      continue;
    }
    assert.equal(o.status, 'ok', `${t.metricId}: ${o.status === 'failed' ? o.message : ''}`);
    assert.deepEqual(
      normalized(o.status === 'ok' ? o.partials : null),
      normalized(want),
      `${t.metricId}: same series, order and states`,
    );
    assert.deepEqual(normalized(buildPartials(t, ts, columns)), normalized(want), `${t.metricId} alone`);
    assert.ok(want!.kept > 0 && want!.series.length >= (t.groupBy.length > 0 ? 2 : 1), `${t.metricId} counts rows`);
  }
}

test("the fused pass gives exactly each metric's partials of the per-metric builder", () => {
  assertSameAsReference(TASKS, 3_000, 50);
});

test('cells past the exact distinct form (many users a minute) go through the sketches and still match', () => {
  // 20,000 rows in 40 minutes: the total's minutes hold ~400 users each, past EXACT_MAX (256).
  assertSameAsReference(
    TASKS.filter((t) => t.groupBy.length <= 1),
    20_000,
    100_000,
  );
});

test('100 metrics over varied group_by, values and filters: each as built alone', () => {
  const groups = [[], ['region'], ['code'], ['ok'], ['region', 'code']];
  const filters = ['', 'code >= 300', "region = 'r1'", 'amount > 50', "label != 'l1'"];
  const many = Array.from({ length: 100 }, (_, i) =>
    task(`met_${i}`, {
      groupBy: groups[i % groups.length]!,
      filters: filters[Math.floor(i / 5) % filters.length]!,
      valueField: i % 3 === 2 ? null : i % 3 === 1 ? 'code' : 'amount',
      uniqueField: i % 2 === 1 ? 'user' : null,
    }),
  );
  assertSameAsReference(many, 2_000, 200);
});
