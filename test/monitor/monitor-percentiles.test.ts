/**
 * Percentiles and distinct counts over a window of several buckets are judged on the window's merged
 * states (aggregation service `windowValues`), not on one bucket's figure: a monitor's value equals
 * the aggregation endpoint's figure for a bucket holding exactly that data.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { completeThrough, liveMetric, waitFor } from './monitor-helpers.js';

const MIN = 60_000;
/** 10:57: the window of the 11:00 slot is its three minutes, and the hour 10:00–11:00 holds nothing else. */
const T0 = Date.parse('2026-01-05T10:57:00Z');
const at = (minute: number, ms = 0) => new Date(T0 + minute * MIN + ms).toISOString();

test('monitors: p95 and p50 over a multi-minute window are the merged sketch of the window, per series and for the total', async (t) => {
  const clock = new ManualClock(T0 + 10_000);
  const srv = await TestServer.start({ clock });
  t.after(() => srv.stop());
  const fx = await liveMetric(srv);
  const create = async (body: object) => ok(await srv.post(fx.monitors, body), 201);
  const perPath = await create({
    name: 'p95 per path',
    chart_value: 'p95',
    scope: 'each_series',
    time_window_minutes: 3,
    threshold_value: 500,
  });
  const total95 = await create({ name: 'p95 total', chart_value: 'p95', time_window_minutes: 3, threshold_value: 500 });
  const total50 = await create({ name: 'p50 total', chart_value: 'p50', time_window_minutes: 60, threshold_value: 5 });
  // Distinct paths over the window: the union of the minutes' sets, not the largest of their counts.
  const metrics = `/v1/projects/${fx.projectId}/metrics`;
  const paths = ok(
    await srv.post(metrics, { name: 'Paths', view_id: fx.metric.view_id, group_by: [], unique_field: 'path' }),
    201,
  );
  await waitFor(async () => ok(await srv.get(`${metrics}/${paths.id}`)).status === 'active', 'Paths is active');
  const distinct = ok(
    await srv.post(`${metrics}/${paths.id}/monitors`, {
      name: 'Distinct paths',
      chart_value: 'count_unique',
      time_window_minutes: 3,
      threshold_value: 2,
    }),
    201,
  );

  // Three minutes of different distributions. /a: 100 × 10 ms, then 100 × 20 ms, then 5 × 1000 ms:
  // each minute's p95 is 10, 20, 1000 — the largest (the old rule) would be 1000, the window's ~20.
  const records: object[] = [];
  const add = (path: string, minute: number, n: number, duration: number) => {
    for (let i = 0; i < n; i++) records.push({ path, duration, timestamp: at(minute, 1000 + i * 50) });
  };
  add('/a', 0, 100, 10);
  add('/a', 1, 100, 20);
  add('/a', 2, 5, 1000);
  add('/b', 0, 5, 700);
  add('/b', 2, 40, 2);
  // Minutes' path sets {/a, /b}, {/a, /c}, {/a, /b}: 2 distinct each, 3 over the window.
  add('/c', 1, 3, 20);
  clock.set(T0 + 2 * MIN + 50_000);
  await fx.send(records);
  clock.set(T0 + 3 * MIN + 1000);
  await completeThrough(srv, fx.metric.id, T0 + 3 * MIN);
  await completeThrough(srv, paths.id, T0 + 3 * MIN);
  await srv.sluice.services.monitorRunner!.runDue();

  // The aggregation endpoint: the hour 10:00–11:00 is one bucket holding exactly the window's data.
  const aggregation = async (values: string, series?: string) => {
    const q = `start_at=${encodeURIComponent('2026-01-05T10:00:00Z')}&end_at=${encodeURIComponent(at(3))}&interval=hour&values=${values}&coverage_mode=strict${series ? `&series=${series}` : ''}`;
    const answer = ok(await srv.get(`${fx.metricPath}/aggregation?${q}`));
    return new Map<string, number | null>(
      answer.series.map((s: any) => [s.details.label, (Object.values(s.records)[0] as Array<number | null>)[0]!]),
    );
  };
  const bySeries = await aggregation('p95');
  const totalP95 = [...(await aggregation('p95', '__total__')).values()][0]!;
  const totalP50 = [...(await aggregation('p50', '__total__')).values()][0]!;

  const states = (m: any) => Object.fromEntries(m.series_states.map((s: any) => [s.series_label ?? s.series_hash, s]));
  const pp = ok(await srv.get(`${fx.monitors}/${perPath.id}`));
  assert.equal(pp.next_evaluation_at, at(4), 'the 11:00 slot was evaluated');
  const s = states(pp);
  assert.equal(s['/a'].last_value, bySeries.get('/a'), "/a: the endpoint's p95 over the window");
  assert.equal(s['/b'].last_value, bySeries.get('/b'));
  assert.ok(s['/a'].last_value > 15 && s['/a'].last_value < 25, `/a p95 ≈ 20, got ${s['/a'].last_value}`);
  assert.ok(s['/b'].last_value > 600, '/b: 5 of 45 records are 700 ms: the 95th rank is among them');
  // Under the old rule /a fired (1000 ≥ 500); on the merged window it does not.
  assert.deepEqual(
    pp.recent_alerts.map((a: any) => a.series_label),
    ['/b'],
  );

  const t95 = ok(await srv.get(`${fx.monitors}/${total95.id}`));
  assert.equal(t95.series_states[0].last_value, totalP95, 'the total: the metric-wide sketch, not the largest series');
  assert.ok(totalP95 !== null && totalP95 < 500, `total p95 ${totalP95}`);
  assert.equal(t95.recent_alerts.length, 0);
  const t50 = ok(await srv.get(`${fx.monitors}/${total50.id}`));
  assert.equal(t50.series_states[0].last_value, totalP50, 'an hour window of minute rows');
  assert.equal(t50.recent_alerts.length, 1, 'p50 ≈ 10–20 > 5');

  const d = ok(await srv.get(`${metrics}/${paths.id}/monitors/${distinct.id}`));
  const q = `start_at=${encodeURIComponent('2026-01-05T10:00:00Z')}&end_at=${encodeURIComponent(at(3))}&interval=hour&values=count_unique`;
  const hour = ok(await srv.get(`${metrics}/${paths.id}/aggregation?${q}`));
  assert.equal(d.series_states[0].last_value, (Object.values(hour.series[0].records)[0] as number[])[0]);
  assert.equal(d.series_states[0].last_value, 3, 'the union of the minutes: /a, /b, /c');
  assert.equal(d.recent_alerts.length, 1, '3 > 2 (the largest minute, 2, would not fire)');

  // Preview judges the same way.
  const preview = ok(
    await srv.post(`${fx.monitors}/preview`, {
      chart_value: 'p95',
      scope: 'each_series',
      time_window_minutes: 3,
      threshold_value: 500,
    }),
  );
  const pv = Object.fromEntries(preview.verdicts.map((v: any) => [v.series_label, v.value]));
  assert.equal(pv['/a'], bySeries.get('/a'));
  assert.equal(pv['/b'], bySeries.get('/b'));
});
