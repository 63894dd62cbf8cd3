import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestServer } from '../helpers/server.js';
import { fails, ok, otherTeamToken, scopedToken } from '../catalog/helpers.js';
import { startHttpsServer, type LocalServer } from '../helpers/test-ca.js';
import { fetchSetup, guardedOutbound } from './helpers.js';

const PULL_FIELDS = [
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
  'status',
  'next_fetch_at',
  'missed_slot_count',
  'json_records_path',
  'last_attempt_at',
  'last_success_at',
  'last_failure_at',
  'consecutive_failure_count',
  'last_error',
  'last_error_stage',
  'last_http_status',
  'last_response_time_ms',
  'last_record_count',
  'records_pulled_hourly',
  'created_at',
  'updated_at',
];

let srv: TestServer;
let target: LocalServer;
let setup: Awaited<ReturnType<typeof fetchSetup>>;
let url: string;

before(async () => {
  target = await startHttpsServer((_req, res) => res.end('{"a":1}'));
  srv = await TestServer.start({ outbound: guardedOutbound(), env: { SLUICE_PIPELINE: '0' } });
  setup = await fetchSetup(srv);
  url = target.url('/data', 'public.test');
});

after(async () => {
  await srv.stop();
  await target.close();
});

test('create: defaults, derived slug, header names only, 24 hourly entries, next_fetch_at', async () => {
  const pull = ok(
    await srv.post(setup.pulls, {
      name: 'Orders Feed',
      source_id: setup.source.id,
      endpoint_url: url,
      headers: { Authorization: 'Bearer s3cret-value', 'X-Skip': null },
    }),
    201,
  );
  assert.deepEqual(Object.keys(pull).sort(), [...PULL_FIELDS].sort());
  assert.equal(pull.object, 'pull');
  assert.match(pull.id, /^pul_[0-9a-z]{20}$/);
  assert.equal(pull.collection_slug, 'orders-feed');
  assert.equal(pull.method, 'get');
  assert.equal(pull.schedule_cron, '* * * * *');
  assert.equal(pull.status, 'active');
  assert.equal(pull.source_name, 'Scraped');
  assert.deepEqual(pull.headers_configured, ['Authorization']);
  assert.equal(pull.records_pulled_hourly.length, 24);
  assert.deepEqual(Object.keys(pull.records_pulled_hourly[0]).sort(), ['failures', 'fetches', 'hour', 'records']);
  assert.ok(
    Date.parse(pull.records_pulled_hourly[0].hour) < Date.parse(pull.records_pulled_hourly[23].hour),
    'oldest first',
  );
  assert.ok(pull.next_fetch_at && Date.parse(pull.next_fetch_at) > Date.now() - 1000);
  assert.equal(new Date(pull.next_fetch_at).getUTCSeconds(), 0);
  // Never returned, never stored in the clear.
  const text = JSON.stringify(ok(await srv.get(`${setup.pulls}/${pull.id}`)));
  assert.ok(!text.includes('s3cret-value'));
  const stored = srv.sluice.services.pulls.repo.byId(pull.id)!;
  assert.ok(!JSON.stringify(stored).includes('s3cret-value'));
  assert.match(stored.headers[0]!.sealed, /^v1\./);
  const keyFile = join(srv.dataDir, 'secret.key');
  assert.equal(statSync(keyFile).mode & 0o777, 0o600);
  assert.match(readFileSync(keyFile, 'utf8').trim(), /^[0-9a-f]{64}$/);
  fails(
    await srv.post(setup.pulls, { name: 'Orders Feed', source_id: setup.source.id, endpoint_url: url }),
    409,
    'conflict',
    'body.name',
  );
});

test('create: every rule answers 400 naming the field', async () => {
  const base = { name: 'Rules', source_id: setup.source.id, endpoint_url: url };
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ...base, name: 'x' }, 'body.name'],
    [{ ...base, name: 'x'.repeat(129) }, 'body.name'],
    [{ ...base, source_id: '' }, 'body.source_id'],
    [{ ...base, endpoint_url: 'http://public.test/x' }, 'body.endpoint_url'],
    [{ ...base, endpoint_url: 'not a url' }, 'body.endpoint_url'],
    [{ ...base, endpoint_url: 'https://10.1.2.3/x' }, 'body.endpoint_url'],
    [{ ...base, endpoint_url: 'https://127.0.0.2/x' }, 'body.endpoint_url'],
    [{ ...base, endpoint_url: 'https://localhost/x' }, 'body.endpoint_url'],
    [{ ...base, endpoint_url: 'https://private.test/x' }, 'body.endpoint_url'],
    [{ ...base, endpoint_url: `https://public.test/${'x'.repeat(2050)}` }, 'body.endpoint_url'],
    [{ ...base, method: 'put' }, 'body.method'],
    [{ ...base, request_body: 'x' }, 'body.request_body'],
    [{ ...base, method: 'get', request_body: 'x' }, 'body.request_body'],
    [{ ...base, schedule_cron: '* * * * * *' }, 'body.schedule_cron'],
    [{ ...base, schedule_cron: '61 * * * *' }, 'body.schedule_cron'],
    [{ ...base, schedule_cron: 'every minute' }, 'body.schedule_cron'],
    [{ ...base, schedule_cron: '' }, 'body.schedule_cron'],
    [{ ...base, collection_slug: 'Bad Slug' }, 'body.collection_slug'],
    [{ ...base, collection_slug: '-x' }, 'body.collection_slug'],
    [{ ...base, json_records_path: 'items[0]' }, 'body.json_records_path'],
    [{ ...base, json_records_path: 'data.*' }, 'body.json_records_path'],
    [{ ...base, json_records_path: 'a..b' }, 'body.json_records_path'],
    [{ ...base, headers: { 'Bad Name': 'x' } }, 'body.headers.Bad Name'],
    [{ ...base, headers: { Host: 'x' } }, 'body.headers.Host'],
    [{ ...base, headers: { 'X-A': 'line\nbreak' } }, 'body.headers.X-A'],
    [{ ...base, headers: { 'X-A': 3 } }, 'body.headers.X-A'],
    [{ ...base, headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, 'v'])) }, 'body.headers'],
    [{ ...base, status: 'paused' }, 'body.status'],
    [{ name: 'No source', endpoint_url: url }, 'body.source_id'],
  ];
  for (const [body, field] of cases) fails(await srv.post(setup.pulls, body), 400, 'request_validation_failed', field);
  fails(
    await srv.post(setup.pulls, { ...base, source_id: 'src_00000000000000000000' }),
    404,
    'not_found',
    'body.source_id',
  );
  // Two spellings of one name store one header (the later spelling); null values are ignored; 20 is fine.
  const twenty = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`X-H${i}`, 'v']));
  const p = ok(
    await srv.post(setup.pulls, {
      ...base,
      name: 'Spellings',
      headers: { ...twenty, 'x-h0': 'again', 'X-None': null },
    }),
    201,
  );
  assert.equal(p.headers_configured.length, 20);
  assert.ok(p.headers_configured.includes('x-h0') && !p.headers_configured.includes('X-H0'));
  const post = ok(
    await srv.post(setup.pulls, {
      ...base,
      name: 'Posting',
      method: 'post',
      request_body: '{"q":1}',
      schedule_cron: '*/5 * * * *',
      collection_slug: 'raw_in',
      json_records_path: 'data.items',
    }),
    201,
  );
  assert.deepEqual(
    [post.method, post.request_body, post.collection_slug, post.json_records_path],
    ['post', '{"q":1}', 'raw_in', 'data.items'],
  );
});

test('update: header patch semantics of rule 6, method/body rule, cron edit restarts missed count, fixed fields refused', async () => {
  const p = ok(
    await srv.post(setup.pulls, {
      name: 'Patchy',
      source_id: setup.source.id,
      endpoint_url: url,
      headers: { 'X-Keep': 'k', 'X-Drop': 'd', 'X-Case': 'c' },
    }),
    201,
  );
  const one = `${setup.pulls}/${p.id}`;
  const sealedKeep = srv.sluice.services.pulls.repo.byId(p.id)!.headers.find((h) => h.name === 'X-Keep')!.sealed;
  let u = ok(await srv.post(one, { headers: { 'x-drop': null, 'X-CASE': 'C2', 'X-New': 'n' } }));
  assert.deepEqual(u.headers_configured, ['X-Keep', 'X-CASE', 'X-New']);
  // Unmentioned names keep their (sealed) value untouched.
  assert.equal(srv.sluice.services.pulls.repo.byId(p.id)!.headers.find((h) => h.name === 'X-Keep')!.sealed, sealedKeep);
  u = ok(await srv.post(one, { name: 'Patchy 2' }));
  assert.deepEqual(u.headers_configured, ['X-Keep', 'X-CASE', 'X-New'], 'omitting headers leaves them');
  assert.equal(u.collection_slug, 'patchy', 'a new name does not move the collection');
  u = ok(await srv.post(one, { collection_slug: null }));
  assert.equal(u.collection_slug, 'patchy-2', 'null derives the slug from the name again');
  const many = Object.fromEntries(Array.from({ length: 18 }, (_, i) => [`X-M${i}`, 'v']));
  fails(await srv.post(one, { headers: many }), 400, 'request_validation_failed', 'body.headers');
  ok(await srv.post(one, { headers: { ...many, 'X-Keep': null } }));
  u = ok(await srv.post(one, { headers: null }));
  assert.deepEqual(u.headers_configured, []);

  fails(await srv.post(one, {}), 400, 'request_validation_failed', 'body');
  fails(await srv.post(one, { source_id: setup.source.id }), 400, 'request_validation_failed', 'body.source_id');
  fails(await srv.post(one, { request_body: 'x' }), 400, 'request_validation_failed', 'body.request_body');
  ok(await srv.post(one, { method: 'post', request_body: 'x' }));
  fails(await srv.post(one, { method: 'get' }), 400, 'request_validation_failed', 'body.method');
  u = ok(await srv.post(one, { method: 'get', request_body: null }));
  assert.deepEqual([u.method, u.request_body], ['get', null]);
  fails(await srv.post(one, { schedule_cron: '0 0 * *' }), 400, 'request_validation_failed', 'body.schedule_cron');
  fails(
    await srv.post(one, { endpoint_url: 'https://private.test/' }),
    400,
    'request_validation_failed',
    'body.endpoint_url',
  );
  fails(await srv.post(one, { name: 'Orders Feed' }), 409, 'conflict', 'body.name');

  await srv.sluice.services.pulls.repo.update(p.project_id, p.id, () => ({ missed_slot_count: 4 }), { touch: false });
  assert.equal(ok(await srv.get(one)).missed_slot_count, 4);
  u = ok(await srv.post(one, { schedule_cron: '0 * * * *' }));
  assert.equal(u.missed_slot_count, 0);
  assert.equal(new Date(u.next_fetch_at).getUTCMinutes(), 0);
});

test('pause, resume, delete; lists filter and order; scopes and other teams', async () => {
  const a = ok(await srv.post(setup.pulls, { name: 'Alpha', source_id: setup.source.id, endpoint_url: url }), 201);
  const one = `${setup.pulls}/${a.id}`;
  let x = ok(await srv.post(`${one}/pause`));
  assert.deepEqual([x.status, x.next_fetch_at], ['paused', null]);
  x = ok(await srv.post(`${one}/pause`));
  assert.equal(x.status, 'paused', 'pausing a paused pull succeeds unchanged');
  const paused = ok(await srv.get(`${setup.pulls}?status=paused`));
  assert.deepEqual(
    paused.map((p: any) => p.id),
    [a.id],
  );
  await srv.sluice.services.pulls.repo.update(
    a.project_id,
    a.id,
    () => ({ consecutive_failure_count: 7, missed_slot_count: 2 }),
    { touch: false },
  );
  x = ok(await srv.post(`${one}/resume`));
  assert.deepEqual([x.status, x.consecutive_failure_count, x.missed_slot_count], ['active', 0, 0]);
  assert.ok(x.next_fetch_at);
  // The service's own stop: only resume brings it back; pause is refused.
  await srv.sluice.services.pulls.repo.update(
    a.project_id,
    a.id,
    () => ({ status: 'disabled', consecutive_failure_count: 100 }),
    { touch: false },
  );
  fails(await srv.post(`${one}/pause`), 409, 'conflict');
  x = ok(await srv.post(`${one}/resume`));
  assert.deepEqual([x.status, x.consecutive_failure_count], ['active', 0]);

  const byName = ok(await srv.get(`${setup.pulls}?order_by=name&sort=asc&limit=200`)).map((p: any) => p.name);
  assert.deepEqual(
    byName,
    [...byName].sort((l: string, r: string) => l.toLowerCase().localeCompare(r.toLowerCase())),
  );
  const created = ok(await srv.get(setup.pulls)).map((p: any) => p.created_at);
  assert.deepEqual(created, [...created].sort().reverse(), 'default: created_at desc');
  ok(await srv.get(`${setup.pulls}?order_by=last_success_at`));
  fails(await srv.get(`${setup.pulls}?order_by=status`), 400, 'request_validation_failed', 'query.order_by');
  fails(await srv.get(`${setup.pulls}?status=broken`), 400, 'request_validation_failed', 'query.status');
  assert.equal(ok(await srv.get(`${setup.pulls}?source_id=src_00000000000000000000`)).length, 0);

  const readOnly = await scopedToken(srv, { pulls: ['read'] });
  ok(await srv.get(one, { token: readOnly }));
  fails(await srv.post(`${one}/pause`, undefined, { token: readOnly }), 403, 'forbidden');
  fails(await srv.delete(one, { token: readOnly }), 403, 'forbidden');
  const other = await otherTeamToken(srv);
  fails(await srv.get(one, { token: other }), 404, 'not_found');

  assert.equal(ok(await srv.delete(one)), null);
  fails(await srv.get(one), 404, 'not_found');
  fails(await srv.get(`${setup.pulls}/pul_nope`), 404, 'not_found');
});
