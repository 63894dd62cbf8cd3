import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { fails, ok } from '../catalog/helpers.js';
import { startHttpsServer, type LocalServer } from '../helpers/test-ca.js';
import { fetchSetup, guardedOutbound } from './helpers.js';

const CHECK_FIELDS = [
  'object',
  'id',
  'project_id',
  'team_id',
  'name',
  'source_id',
  'source_name',
  'collection_slug',
  'endpoint_url',
  'method',
  'headers_configured',
  'request_body',
  'schedule_cron',
  'check_retry_seconds',
  'status',
  'next_fetch_at',
  'missed_slot_count',
  'last_up',
  'results_hourly',
  'last_checked_at',
  'last_success_at',
  'last_failure_at',
  'consecutive_failure_count',
  'last_error',
  'last_error_stage',
  'last_http_status',
  'last_response_time_ms',
  'created_at',
  'updated_at',
];

let srv: TestServer;
let target: LocalServer;
let setup: Awaited<ReturnType<typeof fetchSetup>>;

before(async () => {
  target = await startHttpsServer((req, res) => {
    if (req.url === '/down') {
      res.statusCode = 503;
      res.end('maintenance');
    } else res.end('x'.repeat(3000));
  });
  srv = await TestServer.start({ outbound: guardedOutbound(), env: { SLUICE_PIPELINE: '0' } });
  setup = await fetchSetup(srv);
});

after(async () => {
  await srv.stop();
  await target.close();
});

test('checks: create defaults, slug stored as sent and shared, rules, pause/resume clearing, test endpoint', async () => {
  const body = {
    name: 'Home',
    source_id: setup.source.id,
    collection_slug: 'uptime',
    endpoint_url: target.url('/', 'public.test'),
  };
  const c = ok(await srv.post(setup.checks, body), 201);
  assert.deepEqual(Object.keys(c).sort(), [...CHECK_FIELDS].sort());
  assert.match(c.id, /^chk_[0-9a-z]{20}$/);
  assert.deepEqual(
    [c.object, c.collection_slug, c.check_retry_seconds, c.status, c.last_up, c.method],
    ['check', 'uptime', 10, 'active', null, 'get'],
  );
  assert.equal(c.results_hourly.length, 24);
  assert.deepEqual(Object.keys(c.results_hourly[0]).sort(), ['down', 'hour', 'up']);
  // Several checks may share a slug to chart together.
  const d = ok(
    await srv.post(setup.checks, {
      ...body,
      name: 'Down page',
      endpoint_url: target.url('/down', 'public.test'),
      check_retry_seconds: null,
    }),
    201,
  );
  assert.equal(d.collection_slug, 'uptime');
  assert.equal(d.check_retry_seconds, null);
  fails(await srv.post(setup.checks, body), 409, 'conflict', 'body.name');

  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ...body, name: 'A', collection_slug: undefined }, 'body.collection_slug'],
    [{ ...body, name: 'No slug', collection_slug: undefined }, 'body.collection_slug'],
    [{ ...body, name: 'Null slug', collection_slug: null }, 'body.collection_slug'],
    [{ ...body, name: 'Long slug', collection_slug: 'a'.repeat(65) }, 'body.collection_slug'],
    [{ ...body, name: 'Retry 0', check_retry_seconds: 0 }, 'body.check_retry_seconds'],
    [{ ...body, name: 'Retry 21', check_retry_seconds: 21 }, 'body.check_retry_seconds'],
    [{ ...body, name: 'Retry 1.5', check_retry_seconds: 1.5 }, 'body.check_retry_seconds'],
    [{ ...body, name: 'Plain http', endpoint_url: 'http://public.test/' }, 'body.endpoint_url'],
    [{ ...body, name: 'Private', endpoint_url: 'https://192.168.1.1/' }, 'body.endpoint_url'],
    [{ ...body, name: 'Body on get', request_body: 'x' }, 'body.request_body'],
    [{ ...body, name: 'Seconds', schedule_cron: '0 * * * * *' }, 'body.schedule_cron'],
    [{ ...body, name: 'Path', json_records_path: 'a' }, 'body.json_records_path'],
  ];
  for (const [b, field] of cases) fails(await srv.post(setup.checks, b), 400, 'request_validation_failed', field);

  const one = `${setup.checks}/${c.id}`;
  fails(await srv.post(one, { source_id: setup.source.id }), 400, 'request_validation_failed', 'body.source_id');
  let u = ok(
    await srv.post(one, { collection_slug: 'uptime-v2', check_retry_seconds: 3, headers: { 'X-Probe': '1' } }),
  );
  assert.deepEqual([u.collection_slug, u.check_retry_seconds, u.headers_configured], ['uptime-v2', 3, ['X-Probe']]);

  // Resume clears the failure count, last_up and last_checked_at; success and failure times survive.
  await srv.sluice.services.checks.repo.update(
    c.project_id,
    c.id,
    () => ({
      last_up: false,
      last_checked_at: '2026-01-01T00:00:00.000Z',
      last_failure_at: '2026-01-01T00:00:00.000Z',
      consecutive_failure_count: 3,
    }),
    { touch: false },
  );
  u = ok(await srv.post(`${one}/pause`));
  assert.deepEqual([u.status, u.next_fetch_at, u.last_up], ['paused', null, false]);
  u = ok(await srv.post(`${one}/resume`));
  assert.deepEqual(
    [u.status, u.last_up, u.last_checked_at, u.consecutive_failure_count, u.last_failure_at],
    ['active', null, null, 0, '2026-01-01T00:00:00.000Z'],
  );
  // Stopped by the service (team not in good standing): resume is a 400.
  await srv.sluice.services.checks.repo.update(c.project_id, c.id, () => ({ status: 'disabled' }), { touch: false });
  fails(await srv.post(`${one}/resume`), 400, 'check_disabled_by_service');
  await srv.sluice.services.checks.repo.update(c.project_id, c.id, () => ({ status: 'active' }), { touch: false });

  const before = ok(await srv.get(one));
  const t = ok(await srv.post(`${one}/test`));
  assert.deepEqual(
    [t.ok, t.status, t.status_text, t.byte_length, t.error_stage, t.error],
    [true, 200, 'OK', 3000, null, null],
  );
  assert.equal(t.body_preview.length, 2048);
  assert.equal(typeof t.response_time_ms, 'number');
  const down = ok(await srv.post(`${setup.checks}/${d.id}/test`));
  assert.deepEqual(
    [down.ok, down.status, down.error_stage, down.body_preview],
    [false, 503, 'response', 'maintenance'],
  );
  assert.match(down.error, /503/);
  assert.deepEqual(ok(await srv.get(one)), before, 'a test changes nothing');

  const list = ok(await srv.get(`${setup.checks}?order_by=name&sort=asc`)).map((x: any) => x.name);
  assert.deepEqual(list, ['Down page', 'Home']);
  fails(await srv.get(`${setup.checks}?order_by=last_success_at`), 400, 'request_validation_failed', 'query.order_by');
  assert.equal(ok(await srv.delete(`${setup.checks}/${d.id}`)), null);
  fails(await srv.get(`${setup.checks}/${d.id}`), 404, 'not_found');
});
