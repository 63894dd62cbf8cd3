import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeState, figuresOf, mergeState, type StateFigures } from '../../src/rollup/bucket-state.js';
import { loadHasher } from '../../src/rollup/hll.js';
import type { MetricTask } from '../../src/rollup/metric-task.js';
import { buildPartials } from '../../src/rollup/partials.js';
import { TOTAL_SERIES, type MetricPartials } from '../../src/rollup/rollup-types.js';
import { seriesHash } from '../../src/rollup/series-hash.js';
import type { OutputColumn, OutputField } from '../../src/transform/output-schema.js';

const FIELDS: OutputField[] = [
  { name: 'path', type: 'string' },
  { name: 'status', type: 'number' },
  { name: 'duration', type: 'number' },
  { name: 'user', type: 'string' },
  { name: 'name', type: 'string' },
  { name: 'at', type: 'date' },
  { name: 'tags', type: 'array' },
];

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const MIN = 60_000;

/** Rows as objects → ts + columns, as the view stage hands them over. */
function columnsOf(rows: Array<Record<string, unknown> & { ts: number }>): {
  ts: Float64Array;
  columns: OutputColumn[];
} {
  return {
    ts: Float64Array.from(rows.map((r) => r.ts)),
    // Coerced form: arrays as JSON text.
    columns: FIELDS.map(
      (f) =>
        ({
          name: f.name,
          type: f.type,
          values: rows.map((r) =>
            r[f.name] == null ? null : f.type === 'array' ? JSON.stringify(r[f.name]) : r[f.name],
          ),
        }) as OutputColumn,
    ),
  };
}

function task(over: Partial<MetricTask> = {}): MetricTask {
  return {
    metricId: 'met_x',
    revision: 3,
    groupBy: [],
    filters: '',
    fields: FIELDS,
    timestampField: '__ts',
    valueField: null,
    uniqueField: null,
    displayFields: null,
    ...over,
  };
}

/** series hash → minute → figures */
function figures(p: MetricPartials): Map<string, Map<number, StateFigures>> {
  const out = new Map<string, Map<number, StateFigures>>();
  for (const part of p.partials) {
    const hash = p.series[part.series]!.hash;
    if (!out.has(hash)) out.set(hash, new Map());
    out.get(hash)!.set(part.minute, figuresOf(decodeState(part.state)));
  }
  return out;
}

const ROWS = [
  { ts: T0 + 1_000, path: '/a', status: 200, duration: 10, user: 'u1', name: 'Ann', at: T0 + 5 * MIN, tags: ['x'] },
  { ts: T0 + 2_000, path: '/a', status: 500, duration: 30, user: 'u2', name: 'Bob', at: T0 + 5 * MIN, tags: ['y'] },
  { ts: T0 + 59_999, path: '/b', status: 200, duration: null, user: 'u1', name: 'Ann', at: null, tags: [] },
  { ts: T0 + MIN, path: '/a', status: 404, duration: 5, user: 'u1', name: 'Ann B', at: T0 + 7 * MIN, tags: ['x', 'y'] },
  { ts: T0 + MIN + 10, path: null, status: 200, duration: 7, user: null, name: null, at: T0 + 7 * MIN, tags: null },
];

describe('partials builder', () => {
  before(() => loadHasher());

  it('counts every kept record per minute into the total series (no group_by: only the total)', () => {
    const { ts, columns } = columnsOf(ROWS);
    const p = buildPartials(task(), ts, columns);
    assert.equal(p.metricId, 'met_x');
    assert.equal(p.revision, 3);
    assert.equal(p.kept, 5);
    assert.deepEqual(
      p.series.map((s) => s.hash),
      [TOTAL_SERIES],
    );
    const f = figures(p).get(TOTAL_SERIES)!;
    assert.deepEqual([...f.keys()].sort(), [T0, T0 + MIN]);
    assert.equal(f.get(T0)!.count, 3);
    assert.equal(f.get(T0 + MIN)!.count, 2);
    assert.equal(f.get(T0)!.sum, null, 'no value field');
  });

  it('group_by: one series per value combination, stable hashes, dimensions, and the total beside them', () => {
    const { ts, columns } = columnsOf(ROWS);
    const p = buildPartials(task({ groupBy: ['path'], valueField: 'duration' }), ts, columns);
    const hashes = p.series.map((s) => s.hash);
    assert.deepEqual(hashes, [TOTAL_SERIES, seriesHash(['/a']), seriesHash(['/b']), seriesHash([null])]);
    assert.deepEqual(
      p.series.map((s) => s.dimensions),
      [{}, { path: '/a' }, { path: '/b' }, { path: null }],
    );
    const f = figures(p);
    const a = f.get(seriesHash(['/a']))!;
    assert.deepEqual(
      [a.get(T0)!.count, a.get(T0)!.sum, a.get(T0)!.min, a.get(T0)!.max, a.get(T0)!.value_count],
      [2, 40, 10, 30, 2],
    );
    assert.deepEqual([a.get(T0 + MIN)!.count, a.get(T0 + MIN)!.sum], [1, 5]);
    assert.equal(a.get(T0)!.last, 30, 'the value of the latest record of the minute');
    const b = f.get(seriesHash(['/b']))!.get(T0)!;
    assert.deepEqual(
      [b.count, b.value_count, b.sum],
      [1, 0, null],
      'skip: a null value counts the record, not the value',
    );
    const total = f.get(TOTAL_SERIES)!;
    assert.deepEqual(
      [total.get(T0)!.count, total.get(T0)!.sum, total.get(T0 + MIN)!.count, total.get(T0 + MIN)!.sum],
      [3, 40, 2, 12],
    );
    // Ranking: the latest value of the series in the batch.
    const sa = p.series[1]!;
    assert.deepEqual([sa.last, sa.lastAt], [5, T0 + MIN]);
    // Same values in another batch (another order): the same hash.
    const again = buildPartials(
      task({ groupBy: ['path'] }),
      ...(Object.values(columnsOf([...ROWS].reverse())) as [Float64Array, OutputColumn[]]),
    );
    assert.deepEqual(new Set(again.series.map((s) => s.hash)), new Set(hashes));
  });

  it('states hold skip semantics whatever the null handling (count_as_zero is applied when read: count − value_count zeros)', () => {
    const { ts, columns } = columnsOf(ROWS);
    const f = figures(buildPartials(task({ valueField: 'duration' }), ts, columns))
      .get(TOTAL_SERIES)!
      .get(T0)!;
    assert.deepEqual([f.count, f.value_count, f.sum, f.min, f.max], [3, 2, 40, 10, 30]);
  });

  it('filters: three-valued logic over the named fields, arrays with contains', () => {
    const { ts, columns } = columnsOf(ROWS);
    const count = (filters: string) => buildPartials(task({ filters }), ts, columns).kept;
    assert.equal(count('status >= 400'), 2);
    assert.equal(count("path = '/a' and status != 500"), 2);
    assert.equal(count("not path = '/a'"), 1, 'a null path is unknown, and so is its negation');
    assert.equal(count('path is null'), 1);
    assert.equal(count("tags contains 'x'"), 2);
    assert.equal(count("user in ('u2')"), 1);
    assert.equal(count("name contains 'Ann'"), 3);
  });

  it('a date timestamp_field buckets by that field; a null time is not counted', () => {
    const { ts, columns } = columnsOf(ROWS);
    const p = buildPartials(task({ timestampField: 'at' }), ts, columns);
    assert.equal(p.kept, 4);
    const f = figures(p).get(TOTAL_SERIES)!;
    assert.deepEqual([...f.entries()].map(([m, x]) => [m, x.count]).sort(), [
      [T0 + 5 * MIN, 2],
      [T0 + 7 * MIN, 2],
    ]);
  });

  it('unique field: distinct counts per series; display values from the latest record', () => {
    const { ts, columns } = columnsOf(ROWS);
    const p = buildPartials(
      task({ groupBy: ['user'], uniqueField: 'path', displayFields: { user: 'name' } }),
      ts,
      columns,
    );
    const u1 = p.series.find((s) => s.hash === seriesHash(['u1']))!;
    assert.deepEqual(u1.display, { user: 'Ann B' });
    const f = figures(p);
    assert.equal(Math.round(f.get(seriesHash(['u1']))!.get(T0)!.distinct!), 2);
    assert.equal(Math.round(f.get(TOTAL_SERIES)!.get(T0 + MIN)!.distinct!), 1, 'a null unique value is not a value');
  });

  it('partials of parts merge into the partials of the whole', () => {
    const t = task({ groupBy: ['path'], valueField: 'duration', uniqueField: 'user' });
    const whole = figures(buildPartials(t, ...(Object.values(columnsOf(ROWS)) as [Float64Array, OutputColumn[]])));
    const a = buildPartials(t, ...(Object.values(columnsOf(ROWS.slice(0, 2))) as [Float64Array, OutputColumn[]]));
    const b = buildPartials(t, ...(Object.values(columnsOf(ROWS.slice(2))) as [Float64Array, OutputColumn[]]));
    const merged = new Map<string, ReturnType<typeof decodeState>>();
    for (const p of [a, b]) {
      for (const part of p.partials) {
        const k = `${p.series[part.series]!.hash}@${part.minute}`;
        const s = decodeState(part.state);
        const cur = merged.get(k);
        if (cur) mergeState(cur, s);
        else merged.set(k, s);
      }
    }
    for (const [hash, minutes] of whole)
      for (const [minute, fig] of minutes) assert.deepEqual(figuresOf(merged.get(`${hash}@${minute}`)!), fig);
  });

  it('a field missing from the output fails the metric (the stage turns it into the metric error)', () => {
    const { ts, columns } = columnsOf(ROWS);
    assert.throws(() => buildPartials(task({ valueField: 'gone' }), ts, columns), /value field "gone"/);
  });
});
