import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ANY_SERIES_KEY,
  applySlot,
  compare,
  conditionMet,
  seriesWatched,
  verdicts,
  watchedSeries,
  type SeriesValue,
} from '../../src/monitor/evaluate.js';
import {
  MONITOR_DEFAULTS,
  TOTAL_HASH,
  type MonitorRecord,
  type SeriesStateRecord,
} from '../../src/monitor/monitor-records.js';
import { combineSeries, windowValue } from '../../src/monitor/window-values.js';
import { describeCondition } from '../../src/monitor/condition-text.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const MIN = 60_000;

function monitor(over: Partial<MonitorRecord> = {}): MonitorRecord {
  return {
    ...MONITOR_DEFAULTS,
    name: 'm',
    id: 'mon_x',
    slug: 'm',
    team_id: 't',
    project_id: 'p',
    metric_id: 'met',
    created_at: '',
    updated_at: '',
    status: 'active',
    disabled_reason: null,
    last_evaluated_at: null,
    next_evaluation_at: null,
    last_slot_at: null,
    alert_seq: 0,
    last_ready: null,
    threshold_value: 10,
    ...over,
  };
}

/** Run slots one minute apart; each step's values by series hash. Returns every outcome. */
function run(m: MonitorRecord, steps: Array<Record<string, number | null>>) {
  let states = new Map<string, SeriesStateRecord>();
  let seq = 0;
  const outcomes = [];
  for (let i = 0; i < steps.length; i++) {
    const series: SeriesValue[] = Object.entries(steps[i]!).map(([hash, value]) => ({
      hash,
      label: hash,
      dimensions: { path: hash },
      value,
    }));
    const judged = verdicts(m, m.scope === 'total' ? series : series);
    const out = applySlot(m, T0 + i * MIN, judged, states);
    // What recordSlot does with open alerts: give each an id and keep it on the state.
    for (const o of out.opened) {
      const s = out.states.find((x) => x.id === o.key)!;
      if (o.ended_at === null) s.open_alert_id = `alr_${++seq}`;
    }
    states = new Map(out.states.map((s) => [s.id, s]));
    outcomes.push(out);
  }
  return outcomes;
}

test('evaluate: every operator, existence and absence', () => {
  assert.deepEqual(
    ['gt', 'gte', 'lt', 'lte', 'eq', 'neq'].map((op) => compare(10, op as any, 10)),
    [false, true, false, true, true, false],
  );
  assert.deepEqual(
    ['gt', 'gte', 'lt', 'lte', 'eq', 'neq'].map((op) => compare(11, op as any, 10)),
    [true, true, false, false, false, true],
  );
  assert.equal(conditionMet(monitor(), null), false, 'no value never meets a threshold');
  assert.equal(conditionMet(monitor({ condition_type: 'existence', threshold_value: null }), 0), false);
  assert.equal(conditionMet(monitor({ condition_type: 'existence', threshold_value: null }), 0.5), true);
  assert.equal(conditionMet(monitor({ condition_type: 'absence', threshold_value: null }), null), true);
  assert.equal(conditionMet(monitor({ condition_type: 'absence', threshold_value: null }), 0), true);
  assert.equal(conditionMet(monitor({ condition_type: 'absence', threshold_value: null }), 1), false);
});

test('evaluate: series filters and scopes', () => {
  assert.equal(seriesWatched({ include: { path: ['/a', '/b'] } }, { path: '/a' }), true);
  assert.equal(seriesWatched({ include: { path: ['/a'] } }, { path: '/c' }), false);
  assert.equal(seriesWatched({ exclude: { path: ['/a'] } }, { path: '/a' }), false);
  assert.equal(
    seriesWatched({ include: { path: ['null'] } }, { path: null }),
    true,
    '"null" names a null dimension value',
  );
  const series: SeriesValue[] = [
    { hash: TOTAL_HASH, label: 'all', dimensions: {}, value: 30 },
    { hash: 'a', label: '/a', dimensions: { path: '/a' }, value: 5 },
    { hash: 'b', label: '/b', dimensions: { path: '/b' }, value: 25 },
  ];
  assert.deepEqual(
    watchedSeries(monitor(), true, series).map((s) => s.hash),
    [TOTAL_HASH],
  );
  assert.deepEqual(
    watchedSeries(monitor({ scope: 'each_series', series_filters: { exclude: { path: ['/b'] } } }), true, series).map(
      (s) => s.hash,
    ),
    ['a'],
  );
  assert.deepEqual(
    watchedSeries(monitor({ scope: 'each_series' }), false, series).map((s) => s.hash),
    [TOTAL_HASH],
    'no group_by: the one series',
  );
  const any = verdicts(monitor({ scope: 'any_series' }), watchedSeries(monitor({ scope: 'any_series' }), true, series));
  assert.deepEqual(
    any,
    [{ key: ANY_SERIES_KEY, hash: 'b', label: '/b', value: 25, met: true }],
    'any_series: one verdict, naming the series that met it',
  );
  const each = verdicts(
    monitor({ scope: 'each_series' }),
    watchedSeries(monitor({ scope: 'each_series' }), true, series),
  );
  assert.deepEqual(
    each.map((v) => [v.key, v.met]),
    [
      ['a', false],
      ['b', true],
    ],
  );
});

test('evaluate: spanning alerts open once and close when the condition clears', () => {
  const out = run(monitor(), [{ t: 5 }, { t: 11 }, { t: 12 }, { t: 13 }, { t: 9 }, { t: 20 }]);
  assert.equal(out[0]!.opened.length, 0);
  assert.deepEqual(out[1]!.opened, [
    {
      key: 't',
      series_hash: 't',
      series_label: 't',
      created_at: new Date(T0 + MIN).toISOString(),
      ended_at: null,
      trigger_value: 11,
    },
  ]);
  assert.equal(out[2]!.opened.length + out[3]!.opened.length, 0, 'no duplicate while it keeps firing');
  assert.equal(out[3]!.states[0]!.is_firing, true);
  assert.equal(out[3]!.states[0]!.started_firing_at, new Date(T0 + MIN).toISOString());
  assert.deepEqual(out[4]!.closed, [{ alert_id: 'alr_1', ended_at: new Date(T0 + 4 * MIN).toISOString(), key: 't' }]);
  assert.equal(out[4]!.states[0]!.is_firing, false);
  assert.equal(out[4]!.states[0]!.started_firing_at, null);
  assert.equal(out[5]!.opened.length, 1, 'a new period is a new alert');
});

test('evaluate: instant alerts open and end at once, once per time the condition starts to hold', () => {
  const out = run(monitor({ alert_mode: 'instant' }), [{ t: 11 }, { t: 12 }, { t: 1 }, { t: 12 }]);
  assert.equal(out[0]!.opened.length, 1);
  assert.equal(out[0]!.opened[0]!.ended_at, out[0]!.opened[0]!.created_at);
  assert.equal(out[1]!.opened.length, 0, 'still holding: no second alert');
  assert.equal(out[2]!.closed.length, 0, 'nothing was left open');
  assert.equal(out[3]!.opened.length, 1);
});

test('evaluate: sustained fires after the condition held for sustained_minutes, created_at when it first held', () => {
  const m = monitor({ condition_type: 'sustained', sustained_minutes: 3 });
  const out = run(m, [{ t: 11 }, { t: 11 }, { t: 11 }, { t: 11 }, { t: 11 }, { t: 1 }, { t: 11 }, { t: 11 }, { t: 1 }]);
  assert.deepEqual(
    out.map((o) => o.opened.length),
    [0, 0, 0, 1, 0, 0, 0, 0, 0],
  );
  assert.equal(
    out[3]!.opened[0]!.created_at,
    new Date(T0).toISOString(),
    'the period starts when the condition first held',
  );
  assert.equal(
    out[2]!.states[0]!.pending_since,
    new Date(T0).toISOString(),
    'the sustained clock is kept in the state',
  );
  assert.equal(out[5]!.closed.length, 1);
  assert.equal(out[5]!.states[0]!.pending_since, null, 'a break restarts the clock');
  assert.equal(out[7]!.states[0]!.is_firing, false, 'held 1 minute of 3 after the break');
});

test('evaluate: occurrences within the window', () => {
  const m = monitor({ min_occurrences: 3, occurrence_window_minutes: 4 });
  const out = run(m, [{ t: 11 }, { t: 1 }, { t: 11 }, { t: 1 }, { t: 11 }, { t: 1 }, { t: 1 }, { t: 1 }, { t: 1 }]);
  // Met at 0, 2, 4: the third within 4 minutes of the first (0 > 4-4 is false: 0 falls out at 4).
  assert.deepEqual(
    out.map((o) => o.opened.length),
    [0, 0, 0, 0, 0, 0, 0, 0, 0],
  );
  const m2 = monitor({ min_occurrences: 3, occurrence_window_minutes: 5 });
  const out2 = run(m2, [{ t: 11 }, { t: 1 }, { t: 11 }, { t: 1 }, { t: 11 }, { t: 1 }, { t: 1 }, { t: 1 }]);
  assert.deepEqual(
    out2.map((o) => o.opened.length),
    [0, 0, 0, 0, 1, 0, 0, 0],
  );
  assert.equal(out2[4]!.opened[0]!.created_at, new Date(T0).toISOString(), 'from the first counted occurrence');
  assert.deepEqual(
    out2[4]!.states[0]!.occurrence_timestamps,
    [0, 2, 4].map((i) => new Date(T0 + i * MIN).toISOString()),
  );
  assert.equal(out2[5]!.closed.length, 1, 'the first occurrence left the window: fewer than 3');
});

test('evaluate: each_series tracks series separately; a series that leaves closes its alert', () => {
  const m = monitor({ scope: 'each_series' });
  const out = run(m, [{ a: 11, b: 1 }, { a: 11, b: 12 }, { b: 12 }]);
  assert.deepEqual(
    out[0]!.opened.map((o) => o.series_hash),
    ['a'],
  );
  assert.deepEqual(
    out[1]!.opened.map((o) => o.series_hash),
    ['b'],
  );
  assert.deepEqual(
    out[2]!.closed.map((c) => c.key),
    ['a'],
  );
  assert.deepEqual(out[2]!.removed, ['a']);
});

test('window values: the chart value over a window of buckets', () => {
  assert.equal(windowValue('count', [1, null, 3]), 4);
  assert.equal(windowValue('sum', [1.5, 2.5]), 4);
  assert.equal(windowValue('min', [4, 2, 9]), 2);
  assert.equal(windowValue('max', [4, 2, 9]), 9);
  assert.equal(windowValue('last', [4, 2, null]), 2);
  assert.equal(windowValue('cumulative_sum', [1, 3, 6]), 6);
  assert.equal(windowValue('average', [10, 20], [1, 3]), 17.5, 'weighted by record counts');
  assert.equal(windowValue('p95', [100, 300]), 300);
  assert.equal(windowValue('count', []), null);
  assert.equal(windowValue('sum', [null, null]), null);
  assert.equal(
    combineSeries('sum', [
      { value: 1, count: null },
      { value: 2, count: null },
      { value: null, count: null },
    ]),
    3,
  );
  assert.equal(
    combineSeries('average', [
      { value: 10, count: 1 },
      { value: 20, count: 1 },
    ]),
    15,
  );
  assert.equal(
    combineSeries('min', [
      { value: 3, count: null },
      { value: 2, count: null },
    ]),
    2,
  );
});

test('condition descriptions', () => {
  assert.equal(
    describeCondition(monitor({ chart_value: 'p95', time_window_minutes: 5, operator: 'gte', threshold_value: 250 })),
    'p95 over the last 5 minutes >= 250',
  );
  assert.equal(
    describeCondition(
      monitor({
        condition_type: 'absence',
        chart_value: 'count',
        time_window_minutes: 60,
        threshold_value: null,
        scope: 'each_series',
      }),
    ),
    'no observations in the last 1 hour, for each series',
  );
  assert.equal(
    describeCondition(monitor({ time_window_minutes: 2880, min_occurrences: 2, occurrence_window_minutes: 30 })),
    'sum over the last 2 days > 10, at least 2 times within 30 minutes',
  );
});
