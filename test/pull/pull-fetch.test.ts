import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { startHttpsServer, testCa, type LocalServer } from '../helpers/test-ca.js';
import { fetchSetup, guardedOutbound } from './helpers.js';

/**
 * Every format and every way a response goes wrong, through POST …/test (fetch once, ingest
 * nothing) against local HTTPS servers under the test CA, with the address guard ON.
 */

const PROM = '# TYPE up gauge\nup{job="x"} 1\nreq_total 5 1700000000000\n';
const OM = '# TYPE up gauge\nup 1 1700000000.5\n# EOF\n';
let srv: TestServer;
let site: LocalServer;
let hidden: https.Server;
let hiddenPort = 0;
let hiddenHits = 0;
const flakyHits = new Map<string, number>();
let setup: Awaited<ReturnType<typeof fetchSetup>>;
let counter = 0;

function sd(n: number, extra: object[] = []) {
  return JSON.stringify([
    { targets: Array.from({ length: n }, () => `public.test:${site.port}`), labels: { env: 'prod' } },
    ...extra,
  ]);
}

before(async () => {
  site = await startHttpsServer((req, res) => {
    const u = new URL(req.url ?? '/', 'https://x');
    const send = (type: string, body: string | Buffer) => {
      res.setHeader('content-type', type);
      res.end(body);
    };
    switch (u.pathname) {
      case '/json':
        return send('application/json', '{"id":1,"name":"a"}');
      case '/json-list':
        return send('application/json; charset=utf-8', '{"data":{"items":[{"id":1},{"id":2},{"id":3}]}}');
      case '/jsonl':
        return send('application/x-ndjson', '{"id":1}\n{"id":2}\n');
      case '/csv':
        return send('text/csv', 'id,name\n1,"Smith, J"\n2,"two\nlines"\n');
      case '/tsv':
        return send('text/tab-separated-values', 'id\tname\n1\ta\n');
      case '/prom':
        return send('text/plain; version=0.0.4', PROM);
      case '/om':
        return send('application/openmetrics-text; version=1.0.0', OM);
      case '/sniff':
        return send('text/plain', PROM);
      case '/bad-json':
        return send('application/json', '{"id":1,\n"name": nope}');
      case '/bad-prom':
        return send('text/plain; version=0.0.4', 'up 1\nup{ 2\n');
      case '/truncated-om':
        return send('application/openmetrics-text', '# TYPE up gauge\nup 1\n');
      case '/gzip':
        res.setHeader('content-encoding', 'gzip');
        return send(
          'application/x-ndjson',
          zlib.gzipSync(Array.from({ length: 500 }, (_, i) => JSON.stringify({ i })).join('\n')),
        );
      case '/huge':
        return send('application/json', `[${Array.from({ length: 20000 }, (_, i) => `{"i":${i}}`).join(',')}]`);
      case '/slow': {
        const t = setTimeout(() => send('application/json', '{}'), 3000);
        res.on('close', () => clearTimeout(t));
        return;
      }
      case '/cut':
        // Promises 1000 bytes, sends 12, then drops the connection.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"id":1,"na');
        setTimeout(() => res.destroy(), 20);
        return;
      case '/redirect-private':
        res.writeHead(302, { location: `https://loop2.test:${hiddenPort}/secret` });
        return res.end();
      case '/redirect-ok':
        res.writeHead(301, { location: '/json' });
        return res.end();
      case '/fail':
        res.statusCode = 500;
        return res.end('boom');
      case '/flaky': {
        const key = u.searchParams.get('k') ?? '';
        const n = (flakyHits.get(key) ?? 0) + 1;
        flakyHits.set(key, n);
        if (n === 1) {
          res.statusCode = 502;
          return res.end('first try fails');
        }
        return send('text/plain; version=0.0.4', 'flaky_ok 1\n');
      }
      case '/metrics':
        return send('text/plain; version=0.0.4', 'up{job="node",env="dev"} 1\n');
      case '/sd0':
        return send('application/json', JSON.stringify([{ targets: [], labels: { env: 'prod' } }]));
      case '/sd50':
        return send('application/json', sd(50));
      case '/sd51':
        return send('application/json', sd(51));
      case '/sd-mixed': {
        const k = String(++counter);
        return send(
          'application/json',
          JSON.stringify([
            { targets: [`public.test:${site.port}`], labels: { group: 'good' } },
            {
              targets: [`public.test:${site.port}`],
              labels: { group: 'flaky', __metrics_path__: '/flaky', __param_k: k },
            },
            { targets: [`public.test:${site.port}`], labels: { group: 'broken', __metrics_path__: '/fail' } },
            { targets: [`private.test:${site.port}`], labels: { group: 'private' } },
          ]),
        );
      }
      case '/sd-all-fail':
        return send(
          'application/json',
          JSON.stringify([{ targets: [`private.test:${site.port}`, `loop2.test:${hiddenPort}`] }]),
        );
      default:
        res.statusCode = 404;
        return res.end('no');
    }
  });
  // A server on another loopback address the guard must never reach.
  const { cert, key } = testCa();
  hidden = https.createServer({ cert, key }, (_req, res) => {
    hiddenHits++;
    res.end('{"secret":true}');
  });
  await new Promise<void>((r) => hidden.listen(0, '127.0.0.2', r));
  hiddenPort = (hidden.address() as AddressInfo).port;
  srv = await TestServer.start({
    outbound: guardedOutbound(),
    env: { SLUICE_PIPELINE: '0', SLUICE_PULL_MAX_BYTES: '100000', SLUICE_FETCH_TIMEOUT_MS: '1000' },
  });
  setup = await fetchSetup(srv);
});

after(async () => {
  await srv.stop();
  await site.close();
  await new Promise((r) => hidden.close(r));
});

async function tryPull(path: string, extra: Record<string, unknown> = {}) {
  const pull = ok(
    await srv.post(setup.pulls, {
      name: `P ${++counter}`,
      source_id: setup.source.id,
      endpoint_url: site.url(path, 'public.test'),
      ...extra,
    }),
    201,
  );
  return ok(await srv.post(`${setup.pulls}/${pull.id}/test`));
}

test('every format is read, by Content-Type or by content', async () => {
  const cases: Array<[string, Record<string, unknown>, number]> = [
    ['/json', {}, 1],
    ['/json-list', { json_records_path: 'data.items' }, 3],
    ['/json-list', {}, 1],
    ['/jsonl', {}, 2],
    ['/csv', {}, 2],
    ['/tsv', {}, 1],
    ['/prom', {}, 2],
    ['/om', {}, 1],
    ['/sniff', {}, 2],
    ['/gzip', {}, 500],
    ['/redirect-ok', {}, 1],
  ];
  for (const [path, extra, count] of cases) {
    const r = await tryPull(path, extra);
    assert.deepEqual(
      [r.ok, r.status, r.record_count, r.error_stage, r.error],
      [true, 200, count, null, null],
      `${path}: ${JSON.stringify(r)}`,
    );
    assert.ok(r.byte_length > 0 && r.body_preview.length > 0);
  }
  const json = await tryPull('/json');
  assert.equal(json.body_preview, '{"id":1,"name":"a"}');
  assert.equal(json.status_text, 'OK');
});

test('malformed bodies fail at parse with the position; nothing is counted', async () => {
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['/bad-json', {}, /json: line 2, column 9: unexpected character "n"/],
    ['/bad-prom', {}, /prometheus: line 2, column 4/],
    ['/truncated-om', {}, /# EOF/],
    ['/json', { json_records_path: 'data.items' }, /has no key "data"/],
    ['/json-list', { json_records_path: 'data.items.id' }, /is not an object/],
  ];
  for (const [path, extra, msg] of cases) {
    const r = await tryPull(path, extra);
    assert.deepEqual([r.ok, r.record_count, r.error_stage], [false, 0, 'parse'], `${path}: ${JSON.stringify(r)}`);
    assert.match(r.error, msg);
  }
});

test('slow, huge, truncated and failing responses; redirects to private addresses refused with the guard on', async () => {
  let r = await tryPull('/slow');
  assert.deepEqual([r.ok, r.status, r.error_stage], [false, 0, 'request'], JSON.stringify(r));
  assert.match(r.error, /time/i);
  r = await tryPull('/huge');
  assert.deepEqual([r.ok, r.error_stage, r.record_count], [false, 'response', 0], JSON.stringify(r));
  assert.match(r.error, /larger than the limit of 100000 bytes/);
  r = await tryPull('/cut');
  assert.deepEqual([r.ok, r.error_stage], [false, 'response'], JSON.stringify(r));
  r = await tryPull('/fail');
  assert.deepEqual([r.ok, r.status, r.error_stage, r.body_preview], [false, 500, 'response', 'boom']);
  r = await tryPull('/redirect-private');
  assert.deepEqual([r.ok, r.error_stage], [false, 'request'], JSON.stringify(r));
  assert.match(r.error, /127\.0\.0\.2|not public|private|loopback/i);
  assert.equal(hiddenHits, 0, 'nothing was fetched from the private address');
});

test('service discovery: 0, 50 and 51 targets; retried, failing and private targets; labels merged', async () => {
  let r = await tryPull('/sd0');
  assert.deepEqual([r.ok, r.record_count, r.error], [true, 0, null], JSON.stringify(r));
  r = await tryPull('/sd50');
  assert.deepEqual([r.ok, r.record_count, r.error], [true, 50, null], JSON.stringify(r));
  r = await tryPull('/sd51');
  assert.deepEqual([r.ok, r.record_count, r.error_stage], [false, 0, 'parse']);
  assert.match(r.error, /51 targets; at most 50/);
  r = await tryPull('/sd-mixed');
  // good and flaky (second attempt) succeed; the 500 and the private target fail.
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(r.record_count, 2);
  assert.match(r.error, /^2 of 4 discovered targets failed/);
  r = await tryPull('/sd-all-fail');
  assert.deepEqual([r.ok, r.error_stage, r.record_count], [false, 'request', 0], JSON.stringify(r));
  assert.match(r.error, /all 2 discovered targets failed/);
  assert.equal(hiddenHits, 0);
});
