import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { startHttpsServer, type LocalServer } from '../helpers/test-ca.js';
import { fetchSetup, guardedOutbound } from './helpers.js';

/**
 * Header names go on the wire as the user spelled them (spec rule 6: "the spelling sent is the one
 * stored and sent"), read back from the raw request head of a local HTTPS server; and a discovery
 * pull's headers reach the targets it discovers.
 */

let srv: TestServer;
let site: LocalServer;
let setup: Awaited<ReturnType<typeof fetchSetup>>;
/** Raw header lines ([name, value] as received, case kept) of each request, by path. */
const seen = new Map<string, Array<[string, string]>>();

function raw(path: string): Array<[string, string]> {
  const r = seen.get(path);
  assert.ok(r, `${path} was not requested`);
  return r;
}
function names(path: string): string[] {
  return raw(path).map(([n]) => n);
}
function value(path: string, name: string): string | undefined {
  return raw(path).find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1];
}

before(async () => {
  site = await startHttpsServer((req, res) => {
    const u = new URL(req.url ?? '/', 'https://x');
    const pairs: Array<[string, string]> = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) pairs.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
    seen.set(u.pathname, pairs);
    if (u.pathname === '/sd') {
      res.setHeader('content-type', 'application/json');
      res.setHeader('etag', '"sd1"');
      return res.end(
        JSON.stringify([{ targets: [`public.test:${site.port}`], labels: { __metrics_path__: '/target-metrics' } }]),
      );
    }
    if (u.pathname === '/target-metrics') {
      res.setHeader('content-type', 'text/plain; version=0.0.4');
      return res.end('up 1\n');
    }
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
  srv = await TestServer.start({ outbound: guardedOutbound(), env: { SLUICE_PIPELINE: '0' } });
  setup = await fetchSetup(srv);
});

after(async () => {
  await srv.stop();
  await site.close();
});

test("a pull's header names are sent with the user's spelling, and an update's spelling replaces it", async () => {
  const pull = ok(
    await srv.post(setup.pulls, {
      name: 'Spelled',
      source_id: setup.source.id,
      endpoint_url: site.url('/spelled', 'public.test'),
      headers: { 'X-API-Key': 'k1', authorization: 'Bearer t1', 'X-MiXeD-CaSe': 'v' },
    }),
    201,
  );
  const r = ok(await srv.post(`${setup.pulls}/${pull.id}/test`));
  assert.equal(r.ok, true, JSON.stringify(r));
  const sent = names('/spelled');
  for (const n of ['X-API-Key', 'authorization', 'X-MiXeD-CaSe'])
    assert.ok(sent.includes(n), `${n} on the wire as spelled: ${sent.join(', ')}`);
  assert.ok(!sent.includes('x-api-key') && !sent.includes('x-mixed-case'), sent.join(', '));
  assert.equal(value('/spelled', 'X-API-Key'), 'k1');
  assert.equal(value('/spelled', 'authorization'), 'Bearer t1');

  ok(await srv.post(`${setup.pulls}/${pull.id}`, { headers: { 'x-api-key': 'k2' } }));
  ok(await srv.post(`${setup.pulls}/${pull.id}/test`));
  const again = names('/spelled');
  assert.ok(again.includes('x-api-key') && !again.includes('X-API-Key'), again.join(', '));
  assert.equal(value('/spelled', 'x-api-key'), 'k2');
  assert.equal(again.filter((n) => n.toLowerCase() === 'x-api-key').length, 1, 'one header per name');
});

test("a check's header names keep their spelling too", async () => {
  const check = ok(
    await srv.post(setup.checks, {
      name: 'Spelled check',
      source_id: setup.source.id,
      collection_slug: 'uptime',
      endpoint_url: site.url('/check-spelled', 'public.test'),
      headers: { 'X-Probe-Token': 'p' },
    }),
    201,
  );
  const r = ok(await srv.post(`${setup.checks}/${check.id}/test`));
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.ok(names('/check-spelled').includes('X-Probe-Token'), names('/check-spelled').join(', '));
});

test("a discovery pull's headers reach its targets, with the metrics Accept and no conditional headers", async () => {
  const pull = ok(
    await srv.post(setup.pulls, {
      name: 'Discovery with a token',
      source_id: setup.source.id,
      endpoint_url: site.url('/sd', 'public.test'),
      headers: { Authorization: 'Bearer scrape-token', 'X-Tenant': 'acme', Accept: 'application/json' },
    }),
    201,
  );
  const r = ok(await srv.post(`${setup.pulls}/${pull.id}/test`));
  assert.deepEqual([r.ok, r.record_count, r.error], [true, 1, null], JSON.stringify(r));
  assert.equal(value('/sd', 'Accept'), 'application/json', "the document gets the pull's own Accept");
  assert.equal(value('/target-metrics', 'Authorization'), 'Bearer scrape-token');
  assert.equal(value('/target-metrics', 'X-Tenant'), 'acme');
  assert.ok(names('/target-metrics').includes('X-Tenant'), 'spelling kept for targets too');
  assert.match(value('/target-metrics', 'Accept') ?? '', /openmetrics-text/, 'targets are asked for metrics');
  assert.equal(value('/target-metrics', 'If-None-Match'), undefined);
});
