/**
 * Monitors evaluated on schedule on a real server: records ingested through the pipeline, the
 * window read through the aggregation service, alerts stored with the series states, the API showing
 * them, and a restart resuming exactly (same open alert, sustained clock kept, no slot twice).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { TestServer } from '../helpers/server.js';
import { fails, ok } from '../catalog/helpers.js';
import { completeThrough, liveMetric, waitFor } from './monitor-helpers.js';
import { createOutboundClient } from '../../src/outbound/client.js';
import { startHttpsServer, testCa } from '../helpers/test-ca.js';

const MIN = 60_000;
const T0 = Date.parse('2026-01-05T10:00:00Z');
const at = (minute: number, ms = 0) => new Date(T0 + minute * MIN + ms).toISOString();

test('monitors: threshold per series, absence and sustained on schedule; alerts, states, attention; a restart resumes exactly', async (t) => {
  const clock = new ManualClock(T0 + 10_000);
  const srv = await TestServer.start({ clock });
  t.after(() => srv.stop());
  const fx = await liveMetric(srv);
  const runner = () => srv.sluice.services.monitorRunner!;

  // A webhook receiver (HTTPS under a test CA, on loopback: the server's client trusts both here).
  const received: Array<{ headers: Record<string, unknown>; body: any }> = [];
  const hook = await startHttpsServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: JSON.parse(body) });
      res.writeHead(204).end();
    });
  });
  t.after(() => hook.close());
  srv.sluice.services.outbound = createOutboundClient({ allowPrivateTargets: true, ca: testCa().ca });
  const channel = ok(
    await srv.post(`/v1/projects/${fx.projectId}/notification_channels`, {
      name: 'Ops',
      type: 'webhook',
      url: hook.url('/hook'),
    }),
    201,
  );
  const perPath = ok(
    await srv.post(fx.monitors, {
      name: 'Busy path',
      chart_value: 'count',
      scope: 'each_series',
      time_window_minutes: 1,
      threshold_value: 5,
      notification_channel_ids: [channel.id],
    }),
    201,
  );
  const quiet = ok(
    await srv.post(fx.monitors, {
      name: 'No traffic',
      chart_value: 'count',
      condition_type: 'absence',
      time_window_minutes: 1,
    }),
    201,
  );
  const slow = ok(
    await srv.post(fx.monitors, {
      name: 'Slow',
      chart_value: 'max',
      condition_type: 'sustained',
      operator: 'gte',
      threshold_value: 100,
      sustained_minutes: 2,
      time_window_minutes: 1,
    }),
    201,
  );
  const onlyB = ok(
    await srv.post(fx.monitors, {
      name: 'Only b',
      chart_value: 'count',
      scope: 'any_series',
      time_window_minutes: 1,
      condition_type: 'existence',
      series_filters: { include: { path: ['/b'] } },
    }),
    201,
  );

  // Minute 0: /a busy (10 records, slow), /b 2 records.
  await fx.send([
    ...Array.from({ length: 10 }, (_, i) => ({ path: '/a', duration: 150, timestamp: at(0, 20_000 + i) })),
    { path: '/b', duration: 5, timestamp: at(0, 21_000) },
    { path: '/b', duration: 5, timestamp: at(0, 21_001) },
  ]);
  clock.set(T0 + MIN + 1000);
  await completeThrough(srv, fx.metric.id, T0 + MIN);
  await runner().runDue();

  const m1 = ok(await srv.get(`${fx.monitors}/${perPath.id}`));
  assert.equal(m1.last_evaluated_at !== null, true);
  assert.equal(m1.next_evaluation_at, at(2));
  assert.equal(m1.recent_alerts.length, 1, 'one series is busy');
  const busy = m1.recent_alerts[0];
  assert.equal(busy.series_label, '/a');
  assert.equal(busy.trigger_value, 10);
  assert.equal(busy.threshold_value, 5);
  assert.equal(busy.created_at, at(1));
  assert.equal(busy.ended_at, null);
  assert.equal(busy.condition_description, 'count over the last 1 minute > 5, for each series');
  assert.match(busy.id, /^alr_/);
  const states = Object.fromEntries(m1.series_states.map((s: any) => [s.series_label, s]));
  assert.equal(states['/a'].is_firing, true);
  assert.equal(states['/a'].started_firing_at, at(1));
  assert.equal(states['/a'].last_value, 10);
  assert.equal(states['/b'].is_firing, false);
  assert.equal(states['/b'].last_value, 2);
  assert.equal(ok(await srv.get(`${fx.monitors}/${quiet.id}`)).recent_alerts.length, 0, 'traffic: not absent');
  const slow1 = ok(await srv.get(`${fx.monitors}/${slow.id}`));
  assert.equal(slow1.series_states[0].pending_since, at(1), 'the sustained clock started');
  assert.equal(slow1.recent_alerts.length, 0);
  const b1 = ok(await srv.get(`${fx.monitors}/${onlyB.id}`));
  assert.equal(b1.recent_alerts.length, 1, 'existence on the filtered series');
  assert.equal(b1.recent_alerts[0].series_label, '/b');
  assert.equal(ok(await srv.get(fx.metricPath)).has_triggered_monitors, true);

  // The webhook went out after the commit, on its own (the delivery job is kicked), signed.
  await waitFor(() => received.length >= 1, 'the alert.opened webhook');
  assert.equal(received[0]!.body.type, 'alert.opened');
  assert.equal(received[0]!.body.data.alert.id, busy.id);
  assert.equal(received[0]!.headers['webhook-id'], `evt_${busy.id}_opened`);
  assert.match(String(received[0]!.headers['webhook-signature']), /^v1,/);

  // Alerts list: window overlap, is_open, monitor filter; alert get.
  const alerts = `${fx.metricPath}/alerts?start_at=${at(0)}&end_at=${at(5)}`;
  assert.equal(ok(await srv.get(alerts)).length, 2);
  assert.deepEqual(
    ok(await srv.get(`${alerts}&monitor_id=${perPath.id}`)).map((a: any) => a.id),
    [busy.id],
  );
  assert.equal(ok(await srv.get(`${alerts}&is_open=0`)).length, 0);
  assert.deepEqual(ok(await srv.get(`/v1/projects/${fx.projectId}/alerts/${busy.id}`)), busy);
  assert.equal(
    ok(await srv.get(`${fx.metricPath}/alerts?start_at=${at(-10)}&end_at=${at(0)}`)).length,
    0,
    'opened after the window',
  );

  // Preview: the same window and condition, nothing saved.
  const before = ok(await srv.get(fx.monitors)).length;
  const preview = ok(
    await srv.post(`${fx.monitors}/preview`, {
      chart_value: 'count',
      scope: 'each_series',
      time_window_minutes: 1,
      threshold_value: 5,
    }),
  );
  assert.equal(preview.object, 'monitor_preview');
  assert.equal(preview.ready, true);
  assert.equal(preview.start_at, at(0));
  assert.equal(preview.end_at, at(1));
  const verdicts = Object.fromEntries(preview.verdicts.map((v: any) => [v.series_label, [v.value, v.is_met]]));
  assert.deepEqual(verdicts, { '/a': [10, true], '/b': [2, false], '/seed': [null, null] });
  const total = ok(
    await srv.post(`${fx.monitors}/preview`, {
      chart_value: 'max',
      time_window_minutes: 1,
      operator: 'lt',
      threshold_value: 200,
    }),
  );
  assert.deepEqual(
    total.verdicts.map((v: any) => [v.series_hash, v.value, v.is_met]),
    [['__total__', 150, true]],
  );
  assert.equal(ok(await srv.get(fx.monitors)).length, before, 'preview saves nothing');

  // Attention: the firing monitors.
  const attention = ok(await srv.get(`/v1/projects/${fx.projectId}/attention`));
  const firing = attention.filter((i: any) => i.type === 'monitor_firing');
  assert.deepEqual(firing.map((i: any) => i.detail).sort(), [perPath.id, onlyB.id].sort());
  assert.ok(firing.every((i: any) => i.tier === 'firing' && i.resource_id === fx.metric.id && i.count === 1));

  // Minute 1: only /a, still slow; nothing else.
  await fx.send(Array.from({ length: 3 }, (_, i) => ({ path: '/a', duration: 120, timestamp: at(1, 5000 + i) })));
  clock.set(T0 + 2 * MIN + 1000);
  await completeThrough(srv, fx.metric.id, T0 + 2 * MIN);
  await runner().runDue();
  const m2 = ok(await srv.get(`${fx.monitors}/${perPath.id}`));
  assert.equal(m2.recent_alerts[0].id, busy.id);
  assert.equal(m2.recent_alerts[0].ended_at, at(2), '3 records: the period ends');
  assert.equal(ok(await srv.get(`${alerts}&is_open=true&monitor_id=${perPath.id}`)).length, 0);
  await waitFor(() => received.length >= 2, 'the alert.resolved webhook');
  assert.deepEqual(
    received.map((r) => r.body.type),
    ['alert.opened', 'alert.resolved'],
    'one of each, no duplicate',
  );
  assert.equal(received[1]!.body.data.alert.ended_at, at(2));
  assert.equal(
    ok(await srv.get(`${fx.monitors}/${onlyB.id}`)).recent_alerts[0].ended_at,
    at(2),
    '/b gone: existence ended',
  );
  const slow2 = ok(await srv.get(`${fx.monitors}/${slow.id}`));
  assert.equal(slow2.series_states[0].pending_since, at(1));
  assert.equal(slow2.recent_alerts.length, 0, 'held 1 of 2 minutes');

  // Restart mid-way through the sustained window: the clock keeps counting.
  await srv.restart();
  // Minute 2: still slow → sustained 2 minutes (since 10:01) at the 10:03 slot.
  await fx.send([{ path: '/a', duration: 130, timestamp: at(2, 5000) }]);
  clock.set(T0 + 3 * MIN + 1000);
  await completeThrough(srv, fx.metric.id, T0 + 3 * MIN);
  await runner().runDue();
  const slow3 = ok(await srv.get(`${fx.monitors}/${slow.id}`));
  assert.equal(slow3.recent_alerts.length, 1, 'the sustained clock survived the restart');
  const slowAlert = slow3.recent_alerts[0];
  assert.equal(slowAlert.created_at, at(1), 'the period started when the condition first held');
  assert.equal(slowAlert.ended_at, null);

  // Minute 3: no traffic → absence opens. Then a restart with the server down for two slots: the
  // latest missed slot is evaluated once; the open alerts keep their ids.
  clock.set(T0 + 4 * MIN + 1000);
  await completeThrough(srv, fx.metric.id, T0 + 4 * MIN);
  await runner().runDue();
  const quiet4 = ok(await srv.get(`${fx.monitors}/${quiet.id}`));
  assert.equal(quiet4.recent_alerts.length, 1);
  const absent = quiet4.recent_alerts[0];
  assert.equal(absent.created_at, at(4));
  assert.equal(
    ok(await srv.get(`${fx.monitors}/${slow.id}`)).recent_alerts[0].ended_at,
    at(4),
    'no data: max has no value, the condition stops holding',
  );

  await srv.sluice.stop();
  clock.set(T0 + 6 * MIN + 1000);
  await srv.restart();
  await completeThrough(srv, fx.metric.id, T0 + 6 * MIN);
  await runner().runDue();
  const quiet6 = ok(await srv.get(`${fx.monitors}/${quiet.id}`));
  assert.equal(quiet6.recent_alerts.length, 1, 'no second alert');
  assert.equal(quiet6.recent_alerts[0].id, absent.id, 'the open alert kept its id');
  assert.equal(quiet6.recent_alerts[0].ended_at, null);
  assert.equal(quiet6.last_evaluated_at !== null, true);
  assert.equal(quiet6.next_evaluation_at, at(7));
  // Backtest: when the per-path monitor would have opened and closed alerts over the last day.
  const bt = ok(
    await srv.post(`${fx.monitors}/preview?backtest=1d`, {
      chart_value: 'count',
      scope: 'each_series',
      time_window_minutes: 1,
      threshold_value: 5,
    }),
  ).backtest;
  assert.equal(bt.object, 'monitor_backtest');
  assert.equal(bt.end_at, at(6));
  assert.equal(bt.slots_evaluated, 1440);
  assert.deepEqual(bt.alerts, [
    { series_hash: busy.series_hash, series_label: '/a', created_at: at(1), ended_at: at(2), trigger_value: 10 },
  ]);
  const sustainedBt = ok(
    await srv.post(`${fx.monitors}/preview`, {
      chart_value: 'max',
      condition_type: 'sustained',
      operator: 'gte',
      threshold_value: 100,
      sustained_minutes: 2,
      time_window_minutes: 1,
      backtest_days: 1,
    }),
  ).backtest;
  assert.deepEqual(
    sustainedBt.alerts.map((a: any) => [a.created_at, a.ended_at]),
    [[at(1), at(4)]],
    'the same period the scheduled monitor raised',
  );
  fails(
    await srv.post(`${fx.monitors}/preview?backtest=31d`, {
      chart_value: 'count',
      time_window_minutes: 1,
      threshold_value: 5,
    }),
    400,
    'request_validation_failed',
    'query.backtest',
  );
  fails(
    await srv.post(`${fx.monitors}/preview`, { chart_value: 'count', threshold_value: 5, backtest_days: 2 }),
    400,
    'request_validation_failed',
    'body.backtest_days',
  );

  // The same slot run again (a racing or repeated run) changes nothing.
  assert.equal(await runner().evaluateSlot(quiet.id, T0 + 6 * MIN), 'skipped');
  assert.equal(await runner().evaluateSlot(quiet.id, T0 + 5 * MIN), 'skipped', 'an older slot is never applied');
});

test('monitors: a metric deleted under an open alert disables its monitors and ends the alert; expiry disables too', async (t) => {
  const clock = new ManualClock(T0 + 10_000);
  const srv = await TestServer.start({ clock });
  t.after(() => srv.stop());
  const fx = await liveMetric(srv, { groupBy: [] });
  const runner = () => srv.sluice.services.monitorRunner!;
  const quiet = ok(
    await srv.post(fx.monitors, {
      name: 'No traffic',
      chart_value: 'count',
      condition_type: 'absence',
      time_window_minutes: 1,
    }),
    201,
  );
  const brief = ok(
    await srv.post(fx.monitors, {
      name: 'Brief',
      chart_value: 'count',
      condition_type: 'absence',
      time_window_minutes: 1,
      expires_at: at(5),
    }),
    201,
  );
  const toPause = ok(
    await srv.post(fx.monitors, {
      name: 'To pause',
      chart_value: 'count',
      condition_type: 'absence',
      time_window_minutes: 1,
    }),
    201,
  );
  const toChange = ok(
    await srv.post(fx.monitors, {
      name: 'To change',
      chart_value: 'count',
      condition_type: 'absence',
      time_window_minutes: 1,
    }),
    201,
  );
  clock.set(T0 + MIN + 1000);
  await completeThrough(srv, fx.metric.id, T0 + MIN);
  await runner().runDue();
  const open = ok(await srv.get(`${fx.monitors}/${quiet.id}`)).recent_alerts[0];
  assert.equal(open.ended_at, null);
  assert.equal(open.series_hash, '__total__');
  assert.equal(ok(await srv.get(fx.metricPath)).has_triggered_monitors, true);
  // Pausing ends the open alert; a changed condition ends it too; a rename does not.
  clock.set(T0 + MIN + 2000);
  const paused = ok(await srv.post(`${fx.monitors}/${toPause.id}/pause`));
  assert.equal(paused.recent_alerts[0].ended_at, at(1, 2000));
  assert.equal(paused.recent_alerts[0].end_reason, 'paused');
  assert.deepEqual(paused.series_states, []);
  const renamed = ok(await srv.post(`${fx.monitors}/${toChange.id}`, { name: 'Renamed' }));
  assert.equal(renamed.recent_alerts[0].ended_at, null);
  const changed = ok(await srv.post(`${fx.monitors}/${toChange.id}`, { time_window_minutes: 2 }));
  assert.equal(changed.recent_alerts[0].end_reason, 'condition_changed');
  assert.equal(changed.recent_alerts[0].monitor_name, 'To change', 'alerts keep the name they were raised under');

  clock.set(T0 + 2 * MIN + 1000);
  ok(await srv.delete(fx.metricPath));
  // The deletion is heard at once (not at the next slot); the monitors are disabled just after it commits.
  await waitFor(async () => ok(await srv.get(`${fx.monitors}/${quiet.id}`)).status === 'disabled', 'monitor disabled');
  const gone = ok(await srv.get(`${fx.monitors}/${quiet.id}`));
  assert.equal(gone.status, 'disabled');
  assert.equal(gone.disabled_reason, 'metric_deleted');
  assert.equal(gone.next_evaluation_at, null);
  assert.equal(gone.recent_alerts[0].id, open.id);
  assert.equal(gone.recent_alerts[0].ended_at, at(2, 1000));
  assert.equal(gone.recent_alerts[0].end_reason, 'metric_deleted');
  assert.deepEqual(gone.series_states, []);
  fails(await srv.post(`${fx.monitors}/${quiet.id}/resume`), 409, 'conflict');
  // Restored: the monitor can be resumed.
  ok(await srv.post(fx.metricPath, { deleted_at: null }));
  assert.equal(ok(await srv.post(`${fx.monitors}/${quiet.id}/resume`)).status, 'active');
  assert.equal(
    ok(await srv.get(`${fx.monitors}/${brief.id}`)).disabled_reason,
    'metric_deleted',
    'every monitor of the metric',
  );
  // Expiry: a slot after expires_at disables the monitor, ending its alert at the expiry.
  const later = ok(
    await srv.post(fx.monitors, {
      name: 'Later',
      chart_value: 'count',
      condition_type: 'absence',
      time_window_minutes: 1,
      expires_at: at(3, 30_000),
    }),
    201,
  );
  clock.set(T0 + 3 * MIN + 1000);
  await completeThrough(srv, fx.metric.id, T0 + 3 * MIN);
  assert.equal(await runner().evaluateSlot(later.id, T0 + 3 * MIN), 'applied');
  assert.equal(ok(await srv.get(`${fx.monitors}/${later.id}`)).recent_alerts[0].ended_at, null);
  assert.equal(await runner().evaluateSlot(later.id, T0 + 4 * MIN), 'disabled');
  const expired = ok(await srv.get(`${fx.monitors}/${later.id}`));
  assert.equal(expired.disabled_reason, 'expired');
  assert.equal(expired.recent_alerts[0].ended_at, at(3, 30_000));
  assert.equal(expired.recent_alerts[0].end_reason, 'expired');
  // A metric in error disables its monitors at their next slot, with the reason.
  const watch = ok(
    await srv.post(fx.monitors, { name: 'Watch', chart_value: 'count', threshold_value: 1, time_window_minutes: 1 }),
    201,
  );
  await srv.sluice.services.metrics.patchMetric(fx.metric.id, () => ({
    status: 'error',
    error_message: 'a partial could not be read',
  }));
  assert.equal(await runner().evaluateSlot(watch.id, T0 + 5 * MIN), 'disabled');
  assert.equal(ok(await srv.get(`${fx.monitors}/${watch.id}`)).disabled_reason, 'metric_error');
  fails(await srv.post(`${fx.monitors}/${watch.id}/resume`), 409, 'conflict');
});
