/**
 * The clock jumping and the metric failing under a monitor (docs/monitors.md, "Clock jumps" and "The
 * service disables a monitor"), on a real server with a real webhook receiver: a forward jump past
 * several slots runs none of them late and keeps the open alert; a backward jump evaluates nothing
 * twice; a metric in `error` disables its monitors at once — also when the server stopped between
 * the metric's change and the monitors' — with one `alert.resolved` per alert, never a duplicate.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { createOutboundClient } from '../../src/outbound/client.js';
import { TestServer } from '../helpers/server.js';
import { startHttpsServer, testCa } from '../helpers/test-ca.js';
import { ok } from '../catalog/helpers.js';
import { completeThrough, liveMetric, waitFor } from './monitor-helpers.js';

const MIN = 60_000;
const T0 = Date.parse('2026-01-05T10:00:00Z');
const at = (minute: number, ms = 0) => new Date(T0 + minute * MIN + ms).toISOString();

test('monitors: clock jumps forward and backward, and a metric in error, never lose or duplicate an alert', async (t) => {
  const clock = new ManualClock(T0 + 10_000);
  const srv = await TestServer.start({
    clock,
    env: { SLUICE_ALLOW_PRIVATE_TARGETS: '1' },
    outbound: createOutboundClient({ allowPrivateTargets: true, ca: testCa().ca }),
  });
  t.after(() => srv.stop());
  const received: Array<{ id: string; type: string; alert: string }> = [];
  const hook = await startHttpsServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const event = JSON.parse(body);
      received.push({ id: String(req.headers['webhook-id']), type: event.type, alert: event.data.alert.id });
      res.writeHead(204).end();
    });
  });
  t.after(() => hook.close());
  const fx = await liveMetric(srv, { groupBy: [] });
  const runner = () => srv.sluice.services.monitorRunner!;
  const channel = ok(
    await srv.post(`/v1/projects/${fx.projectId}/notification_channels`, {
      name: 'Ops',
      type: 'webhook',
      url: hook.url('/hook'),
    }),
    201,
  );
  const quiet = ok(
    await srv.post(fx.monitors, {
      name: 'No traffic',
      chart_value: 'count',
      condition_type: 'absence',
      time_window_minutes: 1,
      notification_channel_ids: [channel.id],
    }),
    201,
  );
  const get = async () => ok(await srv.get(`${fx.monitors}/${quiet.id}`));
  const slot = async (minute: number) => {
    clock.set(T0 + minute * MIN + 1000);
    await completeThrough(srv, fx.metric.id, T0 + minute * MIN);
    await runner().runDue();
  };

  await slot(1);
  const first = await get();
  const open = first.recent_alerts[0];
  assert.equal(open.created_at, at(1));
  await waitFor(() => received.length === 1, 'alert.opened');

  // Forward past nine slots, landing 45 s after the latest: none is run late (counted missed); the
  // open alert stays open with its id, and next_evaluation_at moves to the next slot that will come.
  clock.set(T0 + 10 * MIN + 45_000);
  await completeThrough(srv, fx.metric.id, T0 + 10 * MIN);
  await runner().runDue();
  await waitFor(async () => (await get()).next_evaluation_at === at(11), 'next_evaluation_at after the jump');
  const jumped = await get();
  assert.equal(jumped.last_evaluated_at, first.last_evaluated_at, 'no slot run late');
  assert.deepEqual(
    jumped.recent_alerts.map((a: any) => [a.id, a.ended_at]),
    [[open.id, null]],
  );
  // The next slot evaluates: absence still holds, the same alert, no second alert.opened.
  await slot(11);
  const after = await get();
  assert.equal(after.next_evaluation_at, at(12));
  assert.deepEqual(
    after.recent_alerts.map((a: any) => [a.id, a.ended_at]),
    [[open.id, null]],
  );
  assert.equal(after.series_states[0].open_alert_id, open.id);

  // Backward (an NTP step, a VM restore) to 10:05: slots up to the last one evaluated (10:11) are
  // refused; nothing runs until the clock passes it again.
  clock.set(T0 + 5 * MIN + 1000);
  await runner().runDue();
  assert.equal(await runner().evaluateSlot(quiet.id, T0 + 5 * MIN), 'skipped');
  clock.set(T0 + 6 * MIN + 1000);
  await runner().runDue();
  assert.equal(await runner().evaluateSlot(quiet.id, T0 + 6 * MIN), 'skipped');
  const back = await get();
  assert.equal(back.last_evaluated_at, after.last_evaluated_at, 'nothing evaluated twice');
  assert.deepEqual(back.series_states, after.series_states);
  // Forward again: traffic in minute 12 ends the period at the 10:13 slot, resolved once.
  clock.set(T0 + 12 * MIN + 5000);
  await fx.send([{ path: '/a', duration: 1, timestamp: at(12, 2000) }]);
  await slot(13);
  const resolved = (await get()).recent_alerts[0];
  assert.equal(resolved.id, open.id);
  assert.equal(resolved.ended_at, at(13));
  await waitFor(() => received.length === 2, 'alert.resolved');
  assert.deepEqual(
    received.map((r) => [r.type, r.alert]),
    [
      ['alert.opened', open.id],
      ['alert.resolved', open.id],
    ],
  );

  // No traffic in minute 13: absence opens again. Then the metric goes into error: the monitor is
  // disabled at once (no slot runs), the alert ends with the reason, and its resolve goes out.
  await slot(14);
  const second = (await get()).recent_alerts[0];
  assert.notEqual(second.id, open.id);
  assert.equal(second.ended_at, null);
  await waitFor(() => received.length === 3, 'the second alert.opened');
  clock.set(T0 + 14 * MIN + 20_000);
  const metrics = () => srv.sluice.services.metrics;
  await metrics().patchMetric(fx.metric.id, () => ({ status: 'error', error_message: 'a partial could not be read' }));
  await waitFor(async () => (await get()).status === 'disabled', 'disabled at once');
  const disabled = await get();
  assert.equal(disabled.disabled_reason, 'metric_error');
  assert.equal(disabled.recent_alerts[0].id, second.id);
  assert.equal(disabled.recent_alerts[0].ended_at, at(14, 20_000), 'ended when the error was heard');
  assert.equal(disabled.recent_alerts[0].end_reason, 'metric_error');
  await waitFor(() => received.length === 4, 'its alert.resolved');
  assert.deepEqual(received[3], { id: `evt_${second.id}_resolved`, type: 'alert.resolved', alert: second.id });

  // The metric recovers and the monitor is resumed; then the metric fails again and the server stops
  // before hearing it (the change committed, no listener ran): the start disables the monitor.
  await metrics().patchMetric(fx.metric.id, () => ({ status: 'active', error_message: null }));
  assert.equal(ok(await srv.post(`${fx.monitors}/${quiet.id}/resume`)).status, 'active');
  await metrics().patchMetric(fx.metric.id, () => ({ status: 'error', error_message: 'again' }), { notify: false });
  assert.equal((await get()).status, 'active', 'not heard yet');
  await srv.restart();
  await waitFor(async () => (await get()).status === 'disabled', 'disabled at start');
  assert.equal((await get()).disabled_reason, 'metric_error');
  // Every event went out once, each id once.
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(received.length, 4);
  assert.equal(new Set(received.map((r) => r.id)).size, 4);
});
