/**
 * Notification channels on a real server with real HTTPS receivers (a throwaway CA): Standard
 * Webhooks signatures, the Alertmanager v4 payload, the outbox written in a transaction and delivered
 * at least once with a stable id, retries on the schedule, 429 Retry-After, 410 disabling the
 * channel, the delivery log, and no second send of an acknowledged event after a restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { ManualClock } from '../../src/clock.js';
import { createOutboundClient } from '../../src/outbound/client.js';
import type { AlertRecord, MonitorRecord } from '../../src/monitor/monitor-records.js';
import { MONITOR_DEFAULTS } from '../../src/monitor/monitor-records.js';
import { Notifier } from '../../src/notify/notifier.js';
import { TestServer } from '../helpers/server.js';
import { startHttpsServer, testCa, type LocalServer } from '../helpers/test-ca.js';
import { createProject, fails, ok } from '../catalog/helpers.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A receiver answering with the statuses given in turn (the last one repeats). */
async function receiver(
  statuses: Array<number | [number, Record<string, string>]>,
): Promise<{ server: LocalServer; got: Received[] }> {
  const got: Received[] = [];
  const server = await startHttpsServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      const next = statuses[Math.min(got.length - 1, statuses.length - 1)]!;
      const [status, headers] = Array.isArray(next) ? next : [next, {}];
      res.writeHead(status, headers).end('{}');
    });
  });
  return { server, got };
}

/** The server's outbound client, trusting the test CA and allowing loopback (as SLUICE_ALLOW_PRIVATE_TARGETS=1 does). */
function trustLocal(srv: TestServer): void {
  srv.sluice.services.outbound = createOutboundClient({ allowPrivateTargets: true, ca: testCa().ca });
}

function alertOf(monitor: MonitorRecord, over: Partial<AlertRecord> = {}): AlertRecord {
  return {
    id: 'alr_aaaaaaaaaaaaaaaaaaaa',
    slug: 'cpu-1',
    team_id: monitor.team_id,
    project_id: monitor.project_id,
    metric_id: monitor.metric_id,
    metric_name: 'CPU',
    monitor_id: monitor.id,
    monitor_name: monitor.name,
    created_at: new Date(T0).toISOString(),
    ended_at: null,
    series_hash: '__total__',
    series_label: 'all',
    trigger_value: 97,
    threshold_value: 90,
    condition_description: 'max over the last 5 minutes > 90',
    end_reason: null,
    ...over,
  };
}

function monitorWith(projectId: string, channels: string[]): MonitorRecord {
  return {
    ...MONITOR_DEFAULTS,
    name: 'CPU high',
    id: 'mon_aaaaaaaaaaaaaaaaaaaa',
    slug: 'cpu-high',
    team_id: 'team_x',
    project_id: projectId,
    metric_id: 'met_aaaaaaaaaaaaaaaaaaaa',
    created_at: '',
    updated_at: '',
    status: 'active',
    disabled_reason: null,
    last_evaluated_at: null,
    next_evaluation_at: null,
    last_slot_at: null,
    alert_seq: 0,
    last_ready: null,
    notification_channel_ids: channels,
  };
}

test('notification channels: URL rules, secret shown once, test event signed per Standard Webhooks, delivery log', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' }, clock: new ManualClock(T0) });
  t.after(() => srv.stop());
  const { server, got } = await receiver([204]);
  t.after(() => server.close());
  const project = await createProject(srv);
  const base = `/v1/projects/${project.id}/notification_channels`;
  fails(
    await srv.post(base, { name: 'Ops', type: 'webhook', url: server.url('/hook').replace('https:', 'http:') }),
    400,
    'request_validation_failed',
    'body.url',
  );
  const privateRefused = await srv.post(base, { name: 'Ops', type: 'webhook', url: server.url('/hook') });
  fails(privateRefused, 400, 'request_validation_failed', 'body.url');
  assert.match(privateRefused.body.error!.message, /not public/);
  fails(
    await srv.post(base, { name: 'Ops', type: 'slack', url: server.url('/hook') }),
    400,
    'request_validation_failed',
    'body.type',
  );

  trustLocal(srv);
  const ch = ok(await srv.post(base, { name: 'Ops', type: 'webhook', url: server.url('/hook') }), 201);
  assert.match(ch.id, /^nch_/);
  assert.match(ch.secret, /^whsec_/);
  const shown = ok(await srv.get(`${base}/${ch.id}`));
  assert.equal(shown.secret, undefined, 'the secret is shown once');
  assert.equal(shown.secret_last4, ch.secret.slice(-4));
  assert.deepEqual(
    ok(await srv.get(base)).map((c: any) => c.id),
    [ch.id],
  );

  const attempt = ok(await srv.post(`${base}/${ch.id}/test`));
  assert.equal(attempt.status, 204);
  assert.equal(attempt.outcome, 'delivered');
  assert.equal(got.length, 1);
  const h = got[0]!.headers;
  assert.match(String(h['webhook-signature']), /^v1,[A-Za-z0-9+/=]+$/);
  assert.equal(h['webhook-timestamp'], String(Math.floor(T0 / 1000)));
  // The receiver's own check passes (its clock is the signing time).
  const wh = new Webhook(ch.secret);
  const realNow = Date.now;
  Date.now = () => T0;
  try {
    assert.deepEqual((wh.verify(got[0]!.body, h as Record<string, string>) as any).type, 'channel.test');
  } finally {
    Date.now = realNow;
  }
  const log = ok(await srv.get(`${base}/${ch.id}/deliveries`));
  assert.equal(log.length, 1);
  assert.equal(log[0].status, 204);
  assert.equal(typeof log[0].latency_ms, 'number');

  // A monitor may name only channels of its project.
  fails(await srv.post(`${base}/nch_00000000000000000000/test`), 404, 'not_found');
  ok(await srv.delete(`${base}/${ch.id}`));
  fails(await srv.get(`${base}/${ch.id}`), 404, 'not_found');
});

test('notification outbox: retries on the schedule, Retry-After, stable ids, 410 disables; an acknowledged event is never sent again after a restart', async (t) => {
  const clock = new ManualClock(T0);
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' }, clock });
  t.after(() => srv.stop());
  trustLocal(srv);
  const flaky = await receiver([500, [429, { 'retry-after': '900' }], 200]);
  const am = await receiver([200]);
  const gone = await receiver([410]);
  t.after(() => Promise.all([flaky.server.close(), am.server.close(), gone.server.close()]).then(() => undefined));
  const project = await createProject(srv);
  const base = `/v1/projects/${project.id}/notification_channels`;
  const hook = ok(await srv.post(base, { name: 'Hook', type: 'webhook', url: flaky.server.url('/hook') }), 201);
  const manager = ok(
    await srv.post(base, { name: 'Alertmanager', type: 'alertmanager', url: am.server.url('/api/v2/alerts') }),
    201,
  );
  const dead = ok(await srv.post(base, { name: 'Dead', type: 'webhook', url: gone.server.url('/hook') }), 201);
  const svc = () => srv.sluice.services;
  const monitor = monitorWith(project.id, [hook.id, manager.id, dead.id]);
  const alert = alertOf(monitor);

  // Staged in one transaction, as the monitor catalog does; twice: one entry per event and channel.
  for (let i = 0; i < 2; i++)
    await svc().store.transaction(() => svc().notifier.stageAlertEvent('alert.opened', monitor, alert, T0));
  await svc().notifier.deliverDue();
  assert.equal(flaky.got.length, 1, 'first attempt at once');
  assert.equal(am.got.length, 1);
  assert.equal(gone.got.length, 1);
  // Alertmanager v4, firing.
  const amBody = JSON.parse(am.got[0]!.body);
  assert.equal(amBody.version, '4');
  assert.equal(amBody.status, 'firing');
  assert.equal(amBody.alerts[0].labels.alertname, 'CPU high');
  assert.equal(amBody.alerts[0].startsAt, alert.created_at);
  assert.equal(amBody.alerts[0].endsAt, '0001-01-01T00:00:00Z');
  // 410: the channel is disabled with the reason.
  const deadNow = ok(await srv.get(`${base}/${dead.id}`));
  assert.equal(deadNow.status, 'disabled');
  assert.equal(deadNow.disabled_reason, 'gone');
  // 500: retried after ~5 s (±20 %), not before.
  clock.advance(3_900);
  await svc().notifier.deliverDue();
  assert.equal(flaky.got.length, 1);
  clock.advance(2_200);
  await svc().notifier.deliverDue();
  assert.equal(flaky.got.length, 2, 'second attempt after the first retry delay');
  // 429 with Retry-After 900 s: later than the schedule's next step (5 min ±20 %), so it wins.
  clock.advance(7 * 60_000);
  await svc().notifier.deliverDue();
  assert.equal(flaky.got.length, 2, 'not before Retry-After');
  clock.advance(9 * 60_000);
  await svc().notifier.deliverDue();
  assert.equal(flaky.got.length, 3);
  const ids = flaky.got.map((g) => g.headers['webhook-id']);
  assert.equal(new Set(ids).size, 1, 'every attempt carries the same event id');
  assert.equal(new Set(flaky.got.map((g) => g.body)).size, 1, 'and the same bytes');
  const log = ok(await srv.get(`${base}/${hook.id}/deliveries`));
  assert.deepEqual(
    log.map((a: any) => [a.attempt, a.status, a.outcome]),
    [
      [3, 200, 'delivered'],
      [2, 429, 'retrying'],
      [1, 500, 'retrying'],
    ],
  );

  // Restart: nothing acknowledged is sent again; a resolve goes out once.
  await srv.restart();
  trustLocal(srv);
  clock.advance(24 * 3600_000);
  await svc().notifier.deliverDue();
  assert.equal(flaky.got.length, 3);
  assert.equal(am.got.length, 1);
  const ended = { ...alert, ended_at: new Date(T0 + 3600_000).toISOString() };
  await svc().store.transaction(() => svc().notifier.stageAlertEvent('alert.resolved', monitor, ended, T0 + 3600_000));
  await svc().notifier.deliverDue();
  assert.equal(JSON.parse(am.got[1]!.body).status, 'resolved');
  assert.equal(JSON.parse(flaky.got[3]!.body).type, 'alert.resolved');
  assert.equal(gone.got.length, 1, 'a disabled channel gets nothing');
  // Re-enabled by the user.
  assert.equal(ok(await srv.post(`${base}/${dead.id}`, { status: 'active' })).status, 'active');
});

test('notification delivery: a receiver that hangs is a failed attempt after the timeout, retried later; nothing else waits', async (t) => {
  const clock = new ManualClock(T0);
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' }, clock });
  t.after(() => srv.stop());
  const hang = await startHttpsServer(() => undefined);
  const fine = await receiver([200]);
  t.after(() => Promise.all([hang.close(), fine.server.close()]).then(() => undefined));
  const svc = srv.sluice.services;
  const notifier = new Notifier({
    store: svc.store,
    clock,
    log: svc.log,
    outbound: () => createOutboundClient({ allowPrivateTargets: true, ca: testCa().ca }),
    publicUrl: () => svc.config.publicUrl,
    sendTimeoutMs: 300,
  });
  const project = await createProject(srv);
  const stuck = {
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
  const ok2 = { ...stuck, id: 'nch_ffffffffffffffffffff', name: 'Fine', url: fine.server.url('/hook') };
  await svc.store.transaction(() => {
    notifier.db.stageChannel(stuck);
    notifier.db.stageChannel(ok2);
  });
  const monitor = monitorWith(project.id, [stuck.id, ok2.id]);
  await svc.store.transaction(() => notifier.stageAlertEvent('alert.opened', monitor, alertOf(monitor), T0));
  const started = Date.now();
  await notifier.deliverDue();
  assert.ok(Date.now() - started < 5_000, 'bounded by the timeout');
  assert.equal(fine.got.length, 1, 'the other channel got its event');
  const [attempt] = notifier.db.attempts(stuck.id);
  assert.equal(attempt!.status, null);
  assert.match(attempt!.error!, /timeout/);
  assert.equal(attempt!.outcome, 'retrying');
  assert.equal(notifier.db.pendingOf(stuck.id).length, 1, 'kept for the next attempt');
});
