/**
 * Receivers that fail, under real monitors on a real server (SLUICE_ALLOW_PRIVATE_TARGETS=1, HTTPS
 * receivers on loopback under a test CA, a ManualClock): one answering 500 for an hour gets the
 * Standard Webhooks retries, never early, each in the delivery log, and the alert's event once it
 * recovers — one acknowledged delivery per event id, none again after a restart; one answering 410
 * is disabled and gets nothing more; one that hangs is a timed-out attempt retried later; repeat
 * notifications come every N minutes while the alert is open and stop when it closes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { createOutboundClient } from '../../src/outbound/client.js';
import { Notifier } from '../../src/notify/notifier.js';
import { RETRY_DELAYS_MS } from '../../src/notify/retry-policy.js';
import { MONITOR_DEFAULTS, type AlertRecord, type MonitorRecord } from '../../src/monitor/monitor-records.js';
import { TestServer } from '../helpers/server.js';
import { startHttpsServer, testCa, type LocalServer } from '../helpers/test-ca.js';
import { createProject, ok } from '../catalog/helpers.js';
import { completeThrough, liveMetric, waitFor } from '../monitor/monitor-helpers.js';

const MIN = 60_000;
const T0 = Date.parse('2026-01-05T10:00:00Z');
const at = (minute: number, ms = 0) => new Date(T0 + minute * MIN + ms).toISOString();

interface Hit {
  /** The server's clock when the request came (a ManualClock does not move during a send). */
  at: number;
  /** The event's own time (the slot that raised it). */
  event: number;
  id: string;
  type: string;
  alert: string | null;
  answered: number;
}

/** An HTTPS receiver on loopback answering `status(clock now)`; every request recorded. */
async function receiver(
  clock: ManualClock,
  status: (now: number) => number,
): Promise<{ server: LocalServer; hits: Hit[] }> {
  const hits: Hit[] = [];
  const server = await startHttpsServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const event = JSON.parse(body);
      const answered = status(clock.now());
      hits.push({
        at: clock.now(),
        event: Date.parse(event.timestamp),
        id: String(req.headers['webhook-id']),
        type: event.type,
        alert: event.data?.alert?.id ?? null,
        answered,
      });
      res.writeHead(answered).end('{}');
    });
  });
  return { server, hits };
}

test('notifications: a receiver answering 500 for an hour, one answering 410, and repeat notifications under real monitors', async (t) => {
  const clock = new ManualClock(T0 + 10_000);
  const srv = await TestServer.start({
    clock,
    env: { SLUICE_ALLOW_PRIVATE_TARGETS: '1' },
    outbound: createOutboundClient({ allowPrivateTargets: true, ca: testCa().ca }),
  });
  t.after(() => srv.stop());
  const fx = await liveMetric(srv, { groupBy: [] });
  const runner = () => srv.sluice.services.monitorRunner!;
  const notifier = () => srv.sluice.services.notifier;
  const channels = `/v1/projects/${fx.projectId}/notification_channels`;
  const slot = async (minute: number) => {
    clock.set(T0 + minute * MIN + 1000);
    await completeThrough(srv, fx.metric.id, T0 + minute * MIN);
    await runner().runDue();
  };

  // 1. Repeat: an absence monitor notifying again every 3 minutes while its alert is open.
  const steady = await receiver(clock, () => 200);
  t.after(() => steady.server.close());
  const steadyCh = ok(await srv.post(channels, { name: 'Steady', type: 'webhook', url: steady.server.url('/h') }), 201);
  const repeating = ok(
    await srv.post(fx.monitors, {
      name: 'Quiet, repeating',
      chart_value: 'count',
      condition_type: 'absence',
      time_window_minutes: 1,
      notification_channel_ids: [steadyCh.id],
      notify_repeat_minutes: 3,
    }),
    201,
  );
  for (let minute = 1; minute <= 7; minute++) await slot(minute);
  await waitFor(() => steady.hits.length === 3, 'opened and two repeats');
  const alertId = steady.hits[0]!.alert!;
  assert.deepEqual(
    steady.hits.map((h) => [h.type, h.event, h.alert]),
    [
      ['alert.opened', T0 + MIN, alertId],
      ['alert.repeat', T0 + 4 * MIN, alertId],
      ['alert.repeat', T0 + 7 * MIN, alertId],
    ],
    'a repeat at the first slot 3 minutes after the last notification, not before',
  );
  assert.equal(new Set(steady.hits.map((h) => h.id)).size, 3, 'each repeat is its own event id');
  // Traffic from minute 7 on: the alert closes at 10:08; no repeat after that.
  for (let minute = 7; minute <= 10; minute++) {
    clock.set(T0 + minute * MIN + 5000);
    await fx.send([{ path: '/a', duration: 1, timestamp: at(minute, 2000) }]);
    await slot(minute + 1);
  }
  await waitFor(() => steady.hits.length === 4, 'alert.resolved');
  assert.deepEqual([steady.hits[3]!.type, steady.hits[3]!.event], ['alert.resolved', T0 + 8 * MIN]);
  const closed = ok(await srv.get(`${fx.monitors}/${repeating.id}`));
  assert.equal(closed.recent_alerts[0].ended_at, at(8));
  assert.equal(steady.hits.length, 4, 'no repeat once closed');
  ok(await srv.post(`${fx.monitors}/${repeating.id}/pause`));

  // 2. A receiver answering 500 for an hour after the alert, and one answering 410.
  const recoverAt = T0 + 12 * MIN + 1000 + 60 * MIN;
  const flaky = await receiver(clock, (now) => (now < recoverAt ? 500 : 204));
  const gone = await receiver(clock, () => 410);
  t.after(() => Promise.all([flaky.server.close(), gone.server.close()]).then(() => undefined));
  const flakyCh = ok(await srv.post(channels, { name: 'Flaky', type: 'webhook', url: flaky.server.url('/h') }), 201);
  const goneCh = ok(await srv.post(channels, { name: 'Gone', type: 'alertmanager', url: gone.server.url('/h') }), 201);
  const watched = ok(
    await srv.post(fx.monitors, {
      name: 'Quiet',
      chart_value: 'count',
      condition_type: 'absence',
      time_window_minutes: 1,
      notification_channel_ids: [flakyCh.id, goneCh.id],
    }),
    201,
  );
  await slot(12); // no traffic in minute 11
  const alert = ok(await srv.get(`${fx.monitors}/${watched.id}`)).recent_alerts[0];
  assert.equal(alert.created_at, at(12));
  await waitFor(() => flaky.hits.length === 1 && gone.hits.length === 1, 'the first attempts');
  // 410: the channel is disabled, with the reason; the monitor keeps listing it.
  await waitFor(async () => ok(await srv.get(`${channels}/${goneCh.id}`)).status === 'disabled', '410 disables');
  assert.equal(ok(await srv.get(`${channels}/${goneCh.id}`)).disabled_reason, 'gone');
  assert.deepEqual(
    ok(await srv.get(`${channels}/${goneCh.id}/deliveries`)).map((a: any) => [a.status, a.outcome]),
    [[410, 'gone']],
  );
  assert.deepEqual(ok(await srv.get(`${fx.monitors}/${watched.id}`)).notification_channel_ids, [flakyCh.id, goneCh.id]);

  // Retries on the schedule (±20 %), never before their time, until the receiver recovers.
  const entryId = `evt_${alert.id}_opened:${flakyCh.id}`;
  const entry = () => notifier().db.outbox.get(entryId)!;
  await waitFor(() => entry().attempts === 1, 'the first attempt stored');
  for (let k = 0; entry().status === 'pending'; k++) {
    assert.ok(k < RETRY_DELAYS_MS.length, 'delivered within the schedule');
    const last = flaky.hits.at(-1)!.at;
    const next = entry().next_attempt_at!;
    const ratio = (next - last) / RETRY_DELAYS_MS[k]!;
    assert.ok(
      ratio >= 0.8 && ratio <= 1.2,
      `retry ${k + 1} after ${next - last} ms: the schedule's ${RETRY_DELAYS_MS[k]} ±20 %`,
    );
    clock.set(next - 1);
    await notifier().deliverDue();
    assert.equal(flaky.hits.length, k + 1, `retry ${k + 1} not before its time`);
    clock.set(next);
    await notifier().deliverDue();
    assert.equal(flaky.hits.length, k + 2, `retry ${k + 1} at its time`);
  }
  assert.equal(entry().status, 'delivered');
  const failures = flaky.hits.filter((h) => h.answered === 500);
  assert.ok(failures.length >= 4, `4 attempts inside the hour: 0 s, 5 s, 5 min, 30 min (got ${failures.length})`);
  assert.ok(failures.every((h) => h.at < recoverAt));
  assert.equal(flaky.hits.at(-1)!.answered, 204);
  assert.deepEqual(new Set(flaky.hits.map((h) => h.id)), new Set([`evt_${alert.id}_opened`]), 'one event id');
  assert.ok(
    flaky.hits.every((h) => h.type === 'alert.opened' && h.alert === alert.id),
    'the alert was not lost',
  );
  const log = ok(await srv.get(`${channels}/${flakyCh.id}/deliveries`));
  assert.deepEqual(
    log.map((a: any) => [a.attempt, a.status, a.outcome]),
    flaky.hits.map((h, i) => [i + 1, h.answered, h.answered === 204 ? 'delivered' : 'retrying']).reverse(),
    'every attempt in the log, newest first',
  );
  assert.ok(log.every((a: any) => a.event_id === `evt_${alert.id}_opened` && typeof a.latency_ms === 'number'));
  // The alert is still open and the same; the 410 channel got nothing more.
  assert.equal(ok(await srv.get(`/v1/projects/${fx.projectId}/alerts/${alert.id}`)).ended_at, null);
  assert.equal(gone.hits.length, 1);

  // A restart, a day later: nothing acknowledged is sent again.
  await srv.restart();
  clock.advance(24 * 3600_000);
  await notifier().deliverDue();
  assert.equal(flaky.hits.filter((h) => h.answered === 204).length, 1, 'exactly one acknowledged delivery');
  assert.equal(flaky.hits.length, failures.length + 1);
  assert.equal(gone.hits.length, 1);
  // Re-enabled by a person, the 410 channel is sent to again (its test event).
  ok(await srv.post(`${channels}/${goneCh.id}`, { status: 'active' }));
  assert.equal(ok(await srv.post(`${channels}/${goneCh.id}/test`)).status, 410);
});

test('notifications: a receiver that hangs is a timed-out attempt, retried on the schedule and delivered once it answers', async (t) => {
  const clock = new ManualClock(T0);
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0', SLUICE_ALLOW_PRIVATE_TARGETS: '1' }, clock });
  t.after(() => srv.stop());
  let hanging = true;
  const hits: number[] = [];
  const hang = await startHttpsServer((req, res) => {
    hits.push(clock.now());
    req.resume();
    // While hanging, the request is read and never answered (the socket is destroyed at close).
    if (!hanging) req.on('end', () => res.writeHead(200).end('{}'));
  });
  t.after(() => hang.close());
  const svc = srv.sluice.services;
  // The server's own notifier with a short timeout (the default is 10 s), on the server's store.
  const notifier = new Notifier({
    store: svc.store,
    clock,
    log: svc.log,
    outbound: () => createOutboundClient({ allowPrivateTargets: svc.config.allowPrivateTargets, ca: testCa().ca }),
    publicUrl: () => svc.config.publicUrl,
    sendTimeoutMs: 300,
  });
  const project = await createProject(srv);
  const channel = {
    id: 'nch_hhhhhhhhhhhhhhhhhhhh',
    team_id: project.team_id,
    project_id: project.id,
    name: 'Stuck',
    type: 'webhook' as const,
    url: hang.url('/hook'),
    secret: 'whsec_MDEyMzQ1Njc4OWFiY2RlZg==',
    status: 'active' as const,
    disabled_reason: null,
    created_at: '',
    updated_at: '',
  };
  await svc.store.transaction(() => notifier.db.stageChannel(channel));
  const monitor = {
    ...MONITOR_DEFAULTS,
    id: 'mon_hhhhhhhhhhhhhhhhhhhh',
    name: 'Hung',
    slug: 'hung',
    team_id: project.team_id,
    project_id: project.id,
    metric_id: 'met_hhhhhhhhhhhhhhhhhhhh',
    notification_channel_ids: [channel.id],
  } as MonitorRecord;
  const alert = {
    id: 'alr_hhhhhhhhhhhhhhhhhhhh',
    monitor_id: monitor.id,
    created_at: new Date(T0).toISOString(),
    ended_at: null,
  } as AlertRecord;
  await svc.store.transaction(() => notifier.stageAlertEvent('alert.opened', monitor, alert, T0));

  const started = Date.now();
  await notifier.deliverDue();
  assert.ok(Date.now() - started < 5_000, 'bounded by the timeout');
  const entryId = `evt_${alert.id}_opened:${channel.id}`;
  const first = notifier.db.outbox.get(entryId)!;
  assert.equal(first.status, 'pending');
  const ratio = (first.next_attempt_at! - T0) / RETRY_DELAYS_MS[0];
  assert.ok(ratio >= 0.8 && ratio <= 1.2, 'retried on the schedule (5 s ±20 %)');
  // Still hanging at the first retry: a second timed-out attempt, the next step of the schedule.
  clock.set(first.next_attempt_at!);
  await notifier.deliverDue();
  const second = notifier.db.outbox.get(entryId)!;
  assert.equal(second.attempts, 2);
  const ratio2 = (second.next_attempt_at! - first.next_attempt_at!) / RETRY_DELAYS_MS[1];
  assert.ok(ratio2 >= 0.8 && ratio2 <= 1.2, 'then 5 min ±20 %');
  // It answers again: the third attempt is delivered, and nothing is sent after.
  hanging = false;
  clock.set(second.next_attempt_at!);
  await notifier.deliverDue();
  assert.equal(notifier.db.outbox.get(entryId)!.status, 'delivered');
  clock.advance(24 * 3600_000);
  await notifier.deliverDue();
  assert.equal(hits.length, 3);
  assert.deepEqual(
    notifier.db
      .attempts(channel.id)
      .map((a) => [a.attempt, a.status, a.outcome, a.error === null ? null : /timeout/.test(a.error)]),
    [
      [3, 200, 'delivered', null],
      [2, null, 'retrying', true],
      [1, null, 'retrying', true],
    ],
  );
});
