import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { decodeRecords } from '../../src/ingest/framing.js';
import { checkDownProvider, pullSuspendedProvider } from '../../src/pull/attention.js';
import { pullRuns } from '../../src/self-metrics/registry.js';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { startHttpsServer, type LocalServer } from '../helpers/test-ca.js';
import { fetchSetup, guardedOutbound } from './helpers.js';

/**
 * Scheduled runs of pulls and checks, driven by a ManualClock and the scheduler's runDue, against a
 * local HTTPS server (test CA, guard on), with the pipeline off so the spool shows what was written.
 */

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 28, 6, 0, 30);
let clock: ManualClock;
let srv: TestServer;
let site: LocalServer;
let setup: Awaited<ReturnType<typeof fetchSetup>>;
const hits = new Map<string, number>();
const seen: Array<{ path: string; inm: string | undefined }> = [];
let sdDocUp = true;
let flaky = 0;

before(async () => {
  site = await startHttpsServer((req, res) => {
    const u = new URL(req.url ?? '/', 'https://x');
    hits.set(u.pathname, (hits.get(u.pathname) ?? 0) + 1);
    seen.push({ path: u.pathname, inm: req.headers['if-none-match'] as string | undefined });
    const json = (body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(200, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    switch (u.pathname) {
      case '/etag':
        if (req.headers['if-none-match'] === '"v1"') {
          res.writeHead(304, { etag: '"v1"' });
          return res.end();
        }
        return json({ data: { items: [{ id: 1 }, { id: 2 }, { id: 3 }] } }, { etag: '"v1"' });
      case '/bad':
        return json('oops');
      case '/bad-time':
        return json([{ timestamp: 'March 7', v: 1 }]);
      case '/fail':
        res.statusCode = 500;
        return res.end('boom');
      case '/metrics':
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        return res.end('up{job="node",env="dev"} 1\n');
      case '/sd':
        if (!sdDocUp) {
          res.statusCode = 503;
          return res.end('sd down');
        }
        return json([{ targets: [`public.test:${site.port}`], labels: { env: 'prod', team: 'core' } }]);
      case '/flaky':
        // Down on the first request of every pair: a failed run's confirming retry sees it up.
        flaky++;
        res.statusCode = flaky % 2 === 1 ? 503 : 200;
        return res.end(flaky % 2 === 1 ? 'blip' : 'fine');
      case '/slow-ok':
        return res.end('ok');
      case '/old': {
        // Answers after a while, so an update can land while this run is in flight.
        const t = setTimeout(() => json([{ from: 'old' }]), 400);
        res.on('close', () => clearTimeout(t));
        return;
      }
      case '/new':
        return json([{ from: 'new' }]);
      default:
        res.statusCode = 404;
        return res.end();
    }
  });
  clock = new ManualClock(T0);
  srv = await TestServer.start({
    clock,
    outbound: guardedOutbound(),
    env: { SLUICE_PIPELINE: '0', SLUICE_FETCH_SPREAD_MS: '0' },
  });
  setup = await fetchSetup(srv);
});

after(async () => {
  await srv.stop();
  await site.close();
});

/** Move the clock to the next minute (plus `extra` ms) and run what is due. */
async function tick(extra = 0) {
  clock.set(Math.floor(clock.now() / MINUTE) * MINUTE + MINUTE + extra);
  await srv.sluice.services.scheduler.runDue();
}

function spooled(slug: string) {
  const c = [...srv.sluice.services.collections.list(setup.source.id)].find((x) => x.slug === slug);
  if (!c) return [];
  return [...srv.sluice.services.spool.scan()]
    .filter((e) => e.collection_id === c.id)
    .flatMap((e) => decodeRecords(e.format, e.body));
}

const get = async (path: string) => ok(await srv.get(path));

test('a pull run writes its records, keeps validators, and a 304 is an unchanged run; failures keep their stage', async () => {
  const pull = ok(
    await srv.post(setup.pulls, {
      name: 'Items',
      source_id: setup.source.id,
      endpoint_url: site.url('/etag', 'public.test'),
      json_records_path: 'data.items',
    }),
    201,
  );
  const one = `${setup.pulls}/${pull.id}`;
  await tick(500);
  let p = await get(one);
  assert.deepEqual(spooled('items'), [{ id: 1 }, { id: 2 }, { id: 3 }]);
  assert.deepEqual(
    [p.last_record_count, p.last_http_status, p.consecutive_failure_count, p.last_error, p.last_error_stage],
    [3, 200, 0, null, null],
  );
  assert.ok(p.last_success_at && p.last_attempt_at && p.last_failure_at === null);
  assert.deepEqual(p.records_pulled_hourly[23], {
    hour: '2026-11-28T06:00:00.000Z',
    records: 3,
    fetches: 1,
    failures: 0,
  });
  assert.equal(p.records_pulled_hourly.length, 24);
  assert.equal(p.next_fetch_at, '2026-11-28T06:02:00.000Z');

  await tick(500);
  p = await get(one);
  assert.equal(seen.filter((s) => s.path === '/etag').at(-1)?.inm, '"v1"', 'If-None-Match sent from the last answer');
  assert.deepEqual(
    [p.last_http_status, p.last_record_count, p.consecutive_failure_count, p.last_error],
    [304, 0, 0, null],
  );
  assert.equal(spooled('items').length, 3, 'an unchanged run writes nothing');
  assert.equal(p.records_pulled_hourly[23].fetches, 2);

  // A changed request forgets the validators.
  ok(await srv.post(one, { headers: { 'X-Version': '2' } }));
  await tick(500);
  assert.equal(seen.filter((s) => s.path === '/etag').at(-1)?.inm, undefined);
  assert.equal(spooled('items').length, 6);

  // Parse and ingest failures: the stage, the streak, nothing written.
  const bad = ok(
    await srv.post(setup.pulls, {
      name: 'Bad',
      source_id: setup.source.id,
      endpoint_url: site.url('/bad', 'public.test'),
    }),
    201,
  );
  const badTime = ok(
    await srv.post(setup.pulls, {
      name: 'Bad time',
      source_id: setup.source.id,
      endpoint_url: site.url('/bad-time', 'public.test'),
    }),
    201,
  );
  const failing = ok(
    await srv.post(setup.pulls, {
      name: 'Failing',
      source_id: setup.source.id,
      endpoint_url: site.url('/fail', 'public.test'),
    }),
    201,
  );
  await tick(500);
  await tick(500);
  const b = await get(`${setup.pulls}/${bad.id}`);
  assert.deepEqual(
    [b.last_error_stage, b.consecutive_failure_count, b.last_http_status, b.last_success_at],
    ['parse', 2, 200, null],
  );
  assert.match(b.last_error, /not an object or an array/);
  assert.equal(spooled('bad').length, 0);
  const bt = await get(`${setup.pulls}/${badTime.id}`);
  assert.equal(bt.last_error_stage, 'ingest');
  assert.match(bt.last_error, /frame_invalid/);
  const f = await get(`${setup.pulls}/${failing.id}`);
  assert.deepEqual([f.last_error_stage, f.last_http_status, f.consecutive_failure_count], ['response', 500, 2]);
  assert.deepEqual(f.records_pulled_hourly[23], {
    hour: '2026-11-28T06:00:00.000Z',
    records: 0,
    fetches: 2,
    failures: 2,
  });

  // The failure streak: the 100th failure in a row, a day after the first, disables the pull.
  await srv.sluice.services.pulls.repo.update(
    failing.project_id,
    failing.id,
    () => ({ consecutive_failure_count: 98, failing_since: new Date(clock.now() - 25 * 3_600_000).toISOString() }),
    { touch: false },
  );
  await tick(500);
  let fd = await get(`${setup.pulls}/${failing.id}`);
  assert.equal(fd.status, 'active');
  await tick(500);
  fd = await get(`${setup.pulls}/${failing.id}`);
  assert.deepEqual([fd.status, fd.consecutive_failure_count, fd.next_fetch_at], ['disabled', 100, null]);
  const items = pullSuspendedProvider(srv.sluice.services.pulls.repo).items(setup.project.id, clock.now()) as any[];
  assert.deepEqual(
    items.map((i) => [i.type, i.tier, i.resource_id, i.count]),
    [['pull_suspended', 'suspended', failing.id, 100]],
  );
  const before = hits.get('/fail');
  await tick(500);
  assert.equal(hits.get('/fail'), before, 'a disabled pull is not fetched');
  fd = ok(await srv.post(`${setup.pulls}/${failing.id}/resume`));
  assert.deepEqual([fd.status, fd.consecutive_failure_count], ['active', 0]);
  assert.equal(
    (pullSuspendedProvider(srv.sluice.services.pulls.repo).items(setup.project.id, clock.now()) as any[]).length,
    0,
  );
  // Counted for GET /metrics (sluice_pull_runs_total).
  const runs = (await pullRuns.get()).values;
  for (const outcome of ['success', 'failure'])
    assert.ok(
      runs.some((v) => v.labels.kind === 'pull' && v.labels.outcome === outcome && v.value > 0),
      outcome,
    );
  for (const id of [pull.id, bad.id, badTime.id, failing.id]) ok(await srv.post(`${setup.pulls}/${id}/pause`));
});

test('a discovery pull merges target labels, keeps its last good list, and uses it when the document fails', async () => {
  const pull = ok(
    await srv.post(setup.pulls, {
      name: 'Fleet',
      source_id: setup.source.id,
      endpoint_url: site.url('/sd', 'public.test'),
    }),
    201,
  );
  await tick(500);
  const rows = spooled('fleet') as any[];
  assert.equal(rows.length, 1);
  assert.deepEqual(rows[0].labels, {
    job: 'node',
    env: 'prod',
    exported_env: 'dev',
    team: 'core',
    instance: `public.test:${site.port}`,
  });
  assert.deepEqual([rows[0].name, rows[0].value], ['up', 1]);
  const stored = srv.sluice.services.pulls.repo.byId(pull.id)!;
  assert.deepEqual(stored.discovered_targets, [
    { target: `public.test:${site.port}`, labels: { env: 'prod', team: 'core' } },
  ]);

  // Across a restart the list survives; the document then fails and the list is used.
  await srv.restart();
  sdDocUp = false;
  await tick(500);
  const p = await get(`${setup.pulls}/${pull.id}`);
  assert.equal(spooled('fleet').length, 2);
  assert.equal(p.consecutive_failure_count, 0);
  assert.match(p.last_error, /discovery document could not be read .*503.*last good list of 1 targets/);
  sdDocUp = true;
  ok(await srv.post(`${setup.pulls}/${pull.id}/pause`));
});

test('a check confirms a failure once before recording it; one observation per run at the scheduled minute', async () => {
  const flakyCheck = ok(
    await srv.post(setup.checks, {
      name: 'Flaky',
      source_id: setup.source.id,
      collection_slug: 'uptime',
      endpoint_url: site.url('/flaky', 'public.test'),
      check_retry_seconds: 1,
    }),
    201,
  );
  const down = ok(
    await srv.post(setup.checks, {
      name: 'Down',
      source_id: setup.source.id,
      collection_slug: 'uptime',
      endpoint_url: site.url('/fail', 'public.test'),
      check_retry_seconds: null,
    }),
    201,
  );
  await tick(700);
  const slot = new Date(Math.floor(clock.now() / MINUTE) * MINUTE).toISOString();
  const obs = spooled('uptime') as any[];
  assert.equal(obs.length, 2);
  const f = obs.find((o) => o.check_id === flakyCheck.id);
  assert.deepEqual(
    [f.check_name, f.checked_at, f.timestamp, f.up, f.http_status, f.attempts, f.error_stage, f.error_message],
    ['Flaky', slot, slot, 1, 200, 2, null, null],
  );
  for (const k of ['dns_ms', 'connect_ms', 'tls_ms', 'first_byte_ms', 'download_ms', 'response_time_ms'])
    assert.equal(typeof f[k], 'number', k);
  assert.equal(f.address, '127.0.0.1');
  assert.ok(Date.parse(f.tls_expires_at) > Date.now(), 'the certificate expiry is recorded');
  const d = obs.find((o) => o.check_id === down.id);
  assert.deepEqual([d.up, d.http_status, d.attempts, d.error_stage], [0, 500, 1, 'response']);
  assert.match(d.error_message, /500/);

  const fc = await get(`${setup.checks}/${flakyCheck.id}`);
  assert.deepEqual(
    [fc.last_up, fc.last_checked_at, fc.consecutive_failure_count, fc.last_http_status],
    [true, slot, 0, 200],
  );
  const dc = await get(`${setup.checks}/${down.id}`);
  assert.deepEqual(
    [dc.last_up, dc.consecutive_failure_count, dc.last_error_stage, dc.last_http_status],
    [false, 1, 'response', 500],
  );
  assert.deepEqual(dc.results_hourly[23], { hour: '2026-11-28T06:00:00.000Z', up: 0, down: 1 });
  await tick(700);
  const items = checkDownProvider(srv.sluice.services.checks.repo).items(setup.project.id, clock.now()) as any[];
  assert.deepEqual(
    items.map((i) => [i.type, i.tier, i.resource_id, i.count]),
    [['check_down', 'firing', down.id, 2]],
  );
  const registered = await srv.sluice.services.attention.itemsFor(setup.project.id, clock.now());
  assert.ok(
    registered.some((i) => i.type === 'check_down' && i.resource_id === down.id && i.count === 2),
    'registered with the attention registry',
  );
  assert.equal((await get(`${setup.checks}/${down.id}`)).status, 'active', 'failures never stop a check');
  for (const id of [flakyCheck.id, down.id]) ok(await srv.post(`${setup.checks}/${id}/pause`));
});

test('a check stops while its team is not in good standing and starts again on its own', async () => {
  const c = ok(
    await srv.post(setup.checks, {
      name: 'Standing',
      source_id: setup.source.id,
      collection_slug: 'standing',
      endpoint_url: site.url('/slow-ok', 'public.test'),
    }),
    201,
  );
  const one = `${setup.checks}/${c.id}`;
  const accounts = srv.sluice.services.accounts;
  const fetched = () => hits.get('/slow-ok') ?? 0;
  const start = fetched();
  await accounts.updateTeam(c.team_id, () => ({ status: 'delinquent' }));
  await tick(100);
  let x = await get(one);
  assert.deepEqual([x.status, x.next_fetch_at], ['disabled', null]);
  assert.equal(fetched(), start, 'nothing fetched while the team is not in good standing');
  const r = await srv.post(`${one}/resume`);
  assert.deepEqual([r.status, r.body.error?.code], [400, 'check_disabled_by_service']);
  await accounts.updateTeam(c.team_id, () => ({ status: 'active' }));
  await tick(100);
  x = await get(one);
  assert.equal(x.status, 'active');
  assert.equal(fetched(), start + 1);
  assert.equal(spooled('standing').length, 1);
  ok(await srv.post(`${one}/pause`));
});

test('a run in flight finishes with the configuration it started with (rule 10)', async () => {
  const pull = ok(
    await srv.post(setup.pulls, {
      name: 'Moving',
      source_id: setup.source.id,
      endpoint_url: site.url('/old', 'public.test'),
    }),
    201,
  );
  clock.set(Math.floor(clock.now() / MINUTE) * MINUTE + MINUTE + 100);
  const running = srv.sluice.services.scheduler.runDue();
  while ((hits.get('/old') ?? 0) === 0) await new Promise((r) => setTimeout(r, 10));
  ok(
    await srv.post(`${setup.pulls}/${pull.id}`, {
      endpoint_url: site.url('/new', 'public.test'),
      collection_slug: 'moved',
    }),
  );
  await running;
  assert.deepEqual(
    spooled('moving'),
    [{ from: 'old' }],
    'the run in flight wrote what the old endpoint answered, where it wrote before',
  );
  assert.deepEqual(spooled('moved'), []);
  await tick(100);
  assert.deepEqual(spooled('moved'), [{ from: 'new' }]);
  ok(await srv.post(`${setup.pulls}/${pull.id}/pause`));
});

test('a restart in the middle of a schedule misses no slot silently and doubles none', async () => {
  const pull = ok(
    await srv.post(setup.pulls, {
      name: 'Steady',
      source_id: setup.source.id,
      endpoint_url: site.url('/metrics', 'public.test'),
    }),
    201,
  );
  const one = `${setup.pulls}/${pull.id}`;
  const fetched = () => hits.get('/metrics') ?? 0;
  const start = fetched();
  await tick(100);
  assert.equal(fetched(), start + 1);
  // Stop and start within the same minute: the next slot runs once.
  await srv.restart();
  await srv.sluice.services.scheduler.runDue();
  assert.equal(fetched(), start + 1, 'the slot already run is not run again');
  await tick(100);
  assert.equal(fetched(), start + 2);
  assert.equal((await get(one)).missed_slot_count, 0);
  // Down across three slots: they are counted, not fetched late.
  await srv.sluice.stop();
  clock.advance(3 * MINUTE + 30_000);
  await srv.restart();
  await srv.sluice.services.scheduler.runDue();
  assert.equal(fetched(), start + 2, 'nothing is fetched late');
  await tick(100);
  assert.equal(fetched(), start + 3);
  const p = await get(one);
  assert.equal(p.missed_slot_count, 3);
  assert.equal(spooled('steady').length, 3);
});
