/**
 * Issue 22, item 4: metrics of one view with the same group_by share the batch's series keys
 * (series-keys.ts). No behaviour change: the batch stage gives exactly the partials each metric's
 * own build gives — same series, same order, same states — with filters, nulls, several group
 * fields, late-event bounds and a metric that fails.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadHasher } from '../../src/rollup/hll.js';
import { metricPartialsStage } from '../../src/rollup/metric-stage.js';
import type { MetricTask } from '../../src/rollup/metric-task.js';
import { buildPartials } from '../../src/rollup/partials.js';
import { SharedSeriesKeys, sharedSignatures, signature } from '../../src/rollup/series-keys.js';
import type { OutputColumn, OutputField } from '../../src/transform/output-schema.js';

const FIELDS: OutputField[] = [
  { name: 'region', type: 'string' },
  { name: 'code', type: 'number' },
  { name: 'ok', type: 'boolean' },
  { name: 'amount', type: 'number' },
  { name: 'user', type: 'string' },
];
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

/** 2,000 rows of known pseudo-random values (nulls among them), over 40 minutes, out of time order. */
function batch(): { ts: Float64Array; columns: OutputColumn[] } {
  let x = 7;
  const rnd = (n: number) => ((x = (x * 1_103_515_245 + 12_345) % 2 ** 31), x % n);
  const rows = Array.from({ length: 2_000 }, () => ({
    ts: T0 + rnd(40 * 60) * 1_000,
    region: rnd(9) === 0 ? null : `r${rnd(6)}`,
    code: rnd(7) === 0 ? null : 200 + rnd(4) * 100,
    ok: rnd(5) === 0 ? null : rnd(2) === 0,
    amount: rnd(6) === 0 ? null : rnd(1_000) / 10,
    user: `u${rnd(50)}`,
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
  task('met_c', { groupBy: ['region'], eventFrom: T0 + 10 * 60_000 }),
  task('met_d', { groupBy: ['region', 'code'] }),
  task('met_e', { groupBy: ['region', 'code'], filters: "region != 'r1'", displayFields: { code: 'user' } }),
  task('met_f', { groupBy: ['code', 'region'] }),
  task('met_g', { groupBy: ['ok'] }),
  task('met_h', { groupBy: [] }),
  task('met_i', { groupBy: ['region'], valueField: null, uniqueField: null }),
  task('met_j', { groupBy: ['missing'] }),
  task('met_k', { groupBy: ['missing'] }),
];

before(loadHasher);

test('only group_by lists two or more metrics have are keyed once', () => {
  const shared = sharedSignatures(TASKS.map((t) => t.groupBy));
  assert.deepEqual(
    [...shared].sort(),
    [signature(['region']), signature(['region', 'code']), signature(['missing'])].sort(),
  );
  const { ts, columns } = batch();
  const keys = new SharedSeriesKeys(new Map(columns.map((c) => [c.name, c])), ts.length, shared);
  assert.equal(keys.of(['ok']), null, 'one metric alone keys its own rows');
  assert.equal(keys.of(['missing']), null, 'a missing column is left to the builder');
  const region = keys.of(['region'])!;
  assert.equal(region, keys.of(['region']), 'computed once');
  const values = columns[0]!.values as unknown[];
  assert.equal(region.count, new Set(values).size, 'one id per distinct value');
  assert.ok(region.count >= 5 && values.includes(null));
  for (let r = 1; r < ts.length; r++) assert.equal(region.ids[r] === region.ids[0], values[r] === values[0]);
});

test("the batch stage with shared keys gives exactly each metric's own partials", () => {
  const { ts, columns } = batch();
  const outcomes = metricPartialsStage(TASKS, ts, columns);
  assert.equal(outcomes.length, TASKS.length);
  for (const [i, t] of TASKS.entries()) {
    const o = outcomes[i]!;
    if (t.groupBy[0] === 'missing') {
      assert.equal(o.status, 'failed');
      assert.throws(
        () => buildPartials(t, ts, columns),
        (err: Error) => o.status === 'failed' && err.message === o.message,
      );
      continue;
    }
    assert.equal(o.status, 'ok', t.metricId);
    const alone = buildPartials(t, ts, columns);
    assert.deepEqual(o.status === 'ok' ? o.partials : null, alone, `${t.metricId}: same series, order and states`);
    assert.ok(alone.series.length > 1 || t.groupBy.length === 0);
  }
});
