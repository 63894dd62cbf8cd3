import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import zlib from 'node:zlib';
import type { ApiError } from '../../src/errors.js';
import { assertCallableTarget } from '../../src/outbound/check-target.js';
import { createOutboundClient, type OutboundLookup } from '../../src/outbound/client.js';
import { OutboundError, type OutboundClient } from '../../src/outbound/types.js';
import { startHttpServer, startHttpsServer, testCa, type LocalServer } from '../helpers/test-ca.js';

/**
 * The guard is really on here: the loopback test servers count as public only through the
 * test-only allow-list (127.0.0.1 alone), so every other loopback/private address stays refused.
 */
function guarded(
  lookup: OutboundLookup,
  extra: Parameters<typeof createOutboundClient>[0]['defaults'] = {},
): OutboundClient {
  return createOutboundClient({
    allowPrivateTargets: false,
    lookup,
    ca: testCa().ca,
    testOnlyPublicAddresses: ['127.0.0.1'],
    defaults: extra,
  });
}

const names: Record<string, string> = {
  'public.test': '127.0.0.1',
  'sluice.test': '127.0.0.1',
  'evil.test': '10.0.0.1',
  'loop2.test': '127.0.0.2',
};
const mapped: OutboundLookup = async (host) => {
  const a = names[host];
  if (!a) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return [{ address: a, family: 4 }];
};

async function failure(p: Promise<unknown>): Promise<OutboundError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof OutboundError, `expected an OutboundError, got ${String(err)}`);
  return err;
}

describe('outbound client over HTTPS with a test CA', () => {
  let server: LocalServer;
  let slowTimers: NodeJS.Timeout[] = [];
  const big = Buffer.alloc(256 * 1024, 'a');
  const gzipped = zlib.gzipSync(big, { level: 1 });
  const brotlied = zlib.brotliCompressSync(big, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1 } });
  before(async () => {
    server = await startHttpsServer((req, res) => {
      const url = new URL(req.url ?? '/', 'https://x');
      switch (url.pathname) {
        case '/hello':
          res.setHeader('x-seen-host', req.headers.host ?? '');
          res.end(`hello ${req.method}`);
          break;
        case '/gzip':
          res.setHeader('content-encoding', 'gzip');
          res.end(gzipped);
          break;
        case '/br':
          res.setHeader('content-encoding', 'br');
          res.end(brotlied);
          break;
        case '/bad-gzip':
          res.setHeader('content-encoding', 'gzip');
          res.end('this is not gzip');
          break;
        case '/big':
          res.end(big);
          break;
        case '/stream-forever': {
          // Never ends: the cap must cut the stream while it is read.
          const t = setInterval(() => res.write(Buffer.alloc(16 * 1024, 'b')), 1);
          slowTimers.push(t);
          res.on('close', () => clearInterval(t));
          break;
        }
        case '/slow-headers':
          slowTimers.push(setTimeout(() => res.end('late'), 5_000));
          break;
        case '/slow-body': {
          res.writeHead(200);
          res.write('first part');
          slowTimers.push(setTimeout(() => res.end('rest'), 5_000));
          break;
        }
        case '/redirect': {
          const to = url.searchParams.get('to') ?? '/hello';
          res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: to });
          res.end('moved');
          break;
        }
        case '/loop':
          res.writeHead(302, { location: '/loop' });
          res.end();
          break;
        case '/echo-method': {
          let body = '';
          req.on('data', (c: Buffer) => (body += c.toString()));
          req.on('end', () => res.end(`${req.method} ${body} auth=${req.headers.authorization ?? '-'}`));
          break;
        }
        default:
          res.writeHead(404);
          res.end('no');
      }
    });
  });
  after(async () => {
    for (const t of slowTimers) clearTimeout(t);
    slowTimers = [];
    await server.close();
  });

  it('verifies the certificate against the host name, reports timings and the certificate expiry', async () => {
    const res = await guarded(mapped).fetch({ url: server.url('/hello', 'public.test') });
    assert.equal(res.status, 200);
    assert.equal(res.statusText, 'OK');
    assert.equal(res.body.toString(), 'hello GET');
    assert.equal(res.headers['x-seen-host'], `public.test:${server.port}`);
    assert.equal(res.address, '127.0.0.1');
    assert.equal(res.redirects, 0);
    assert.ok(res.tlsExpiresAt && Date.parse(res.tlsExpiresAt) > Date.now(), `tlsExpiresAt ${res.tlsExpiresAt}`);
    const t = res.timings;
    for (const k of ['dnsMs', 'connectMs', 'tlsMs', 'firstByteMs', 'downloadMs', 'totalMs'] as const)
      assert.ok(Number.isFinite(t[k]) && t[k] >= 0, `${k}=${t[k]}`);
    assert.ok(t.tlsMs > 0, 'TLS handshake measured');
    assert.ok(t.totalMs >= t.connectMs + t.tlsMs);
  });

  it('refuses a certificate it does not trust, and a name the certificate does not cover', async () => {
    const untrusted = createOutboundClient({
      allowPrivateTargets: false,
      lookup: mapped,
      testOnlyPublicAddresses: ['127.0.0.1'],
    });
    const e1 = await failure(untrusted.fetch({ url: server.url('/hello', 'public.test') }));
    assert.equal(e1.code, 'tls_failed', e1.message);
    assert.equal(e1.stage, 'request');
    names['uncovered.test'] = '127.0.0.1';
    const e2 = await failure(guarded(mapped).fetch({ url: server.url('/hello', 'uncovered.test') }));
    assert.equal(e2.code, 'tls_failed', e2.message);
  });

  it('decodes gzip and br', async () => {
    for (const path of ['/gzip', '/br']) {
      const res = await guarded(mapped).fetch({ url: server.url(path, 'public.test') });
      assert.equal(res.body.length, big.length, path);
      assert.ok(res.body.equals(big));
    }
    const err = await failure(guarded(mapped).fetch({ url: server.url('/bad-gzip', 'public.test') }));
    assert.equal(err.code, 'decode_failed');
    assert.equal(err.stage, 'response');
  });

  it('cuts a body past the cap while streaming (plain, compressed, endless)', async () => {
    for (const path of ['/big', '/gzip', '/br']) {
      const err = await failure(guarded(mapped).fetch({ url: server.url(path, 'public.test'), maxBytes: 100 * 1024 }));
      assert.equal(err.code, 'too_large', path);
      assert.equal(err.stage, 'response');
    }
    const started = performance.now();
    const err = await failure(
      guarded(mapped).fetch({ url: server.url('/stream-forever', 'public.test'), maxBytes: 64 * 1024 }),
    );
    assert.equal(err.code, 'too_large');
    assert.ok(performance.now() - started < 3_000);
  });

  it('times out slow headers (request stage) and slow bodies (response stage)', async () => {
    const e1 = await failure(
      guarded(mapped).fetch({ url: server.url('/slow-headers', 'public.test'), headersTimeoutMs: 150 }),
    );
    assert.equal(e1.code, 'timeout', e1.message);
    assert.equal(e1.stage, 'request');
    const e2 = await failure(
      guarded(mapped).fetch({ url: server.url('/slow-body', 'public.test'), bodyTimeoutMs: 150 }),
    );
    assert.equal(e2.code, 'timeout', e2.message);
    assert.equal(e2.stage, 'response');
    assert.ok(e2.timings && typeof e2.timings.firstByteMs === 'number');
  });

  it('times out a connection whose TLS handshake never completes (the connect timeout covers TCP and TLS)', async () => {
    // A TCP server that accepts and then says nothing.
    const held: net.Socket[] = [];
    const silent = net.createServer((s) => held.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const port = (silent.address() as net.AddressInfo).port;
      const started = performance.now();
      const err = await failure(guarded(mapped).fetch({ url: `https://public.test:${port}/`, connectTimeoutMs: 150 }));
      assert.equal(err.code, 'timeout', err.message);
      assert.equal(err.stage, 'request');
      const took = performance.now() - started;
      assert.ok(took >= 140 && took < 2_000, `took ${took} ms`);
    } finally {
      for (const s of held) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('follows redirects, re-checking every hop', async () => {
    const res = await guarded(mapped).fetch({
      url: server.url(`/redirect?to=${encodeURIComponent(server.url('/hello', 'sluice.test'))}`, 'public.test'),
    });
    assert.equal(res.status, 200);
    assert.equal(res.redirects, 1);
    assert.equal(res.url, server.url('/hello', 'sluice.test'));

    for (const to of [
      `https://evil.test:${server.port}/hello`,
      `https://loop2.test:${server.port}/hello`,
      `https://127.0.0.2:${server.port}/hello`,
      `https://[::1]:${server.port}/hello`,
      `https://[::ffff:127.0.0.1]:${server.port}/hello`,
      'https://169.254.169.254/latest/meta-data/',
    ]) {
      const before = server.connections();
      const err = await failure(
        guarded(mapped).fetch({ url: server.url(`/redirect?to=${encodeURIComponent(to)}`, 'public.test') }),
      );
      assert.equal(err.code, 'blocked_address', `${to}: ${err.message}`);
      assert.equal(server.connections(), before + 1, 'only the first hop connected');
    }
    const e = await failure(
      guarded(mapped).fetch({
        url: server.url(`/redirect?to=${encodeURIComponent(`http://public.test:${server.port}/hello`)}`, 'public.test'),
      }),
    );
    assert.equal(e.code, 'not_https');
  });

  it('stops after the redirect limit; maxRedirects 0 returns the 3xx', async () => {
    const err = await failure(guarded(mapped).fetch({ url: server.url('/loop', 'public.test') }));
    assert.equal(err.code, 'too_many_redirects');
    const e2 = await failure(guarded(mapped).fetch({ url: server.url('/loop', 'public.test'), maxRedirects: 2 }));
    assert.match(e2.message, /More than 2 redirects/);
    const res = await guarded(mapped).fetch({ url: server.url('/loop', 'public.test'), maxRedirects: 0 });
    assert.equal(res.status, 302);
    assert.equal(res.headers.location, '/loop');
  });

  it('turns POST into GET on 303, keeps it on 307, and drops credentials across origins', async () => {
    const post = (status: number, to: string) =>
      guarded(mapped).fetch({
        url: server.url(`/redirect?status=${status}&to=${encodeURIComponent(to)}`, 'public.test'),
        method: 'POST',
        body: 'payload',
        headers: { Authorization: 'Bearer s3cret', 'content-type': 'text/plain' },
      });
    assert.equal((await post(303, '/echo-method')).body.toString(), 'GET  auth=Bearer s3cret');
    assert.equal((await post(307, '/echo-method')).body.toString(), 'POST payload auth=Bearer s3cret');
    assert.equal((await post(307, server.url('/echo-method', 'sluice.test'))).body.toString(), 'POST payload auth=-');
  });

  it('connects to the address it checked: a name whose second lookup would change is looked up once', async () => {
    let calls = 0;
    const rebinding: OutboundLookup = async () => {
      calls++;
      return [{ address: calls === 1 ? '127.0.0.1' : '10.0.0.1', family: 4 }];
    };
    const res = await guarded(rebinding).fetch({ url: server.url('/hello', 'public.test') });
    assert.equal(res.status, 200);
    assert.equal(res.address, '127.0.0.1');
    assert.equal(calls, 1, 'the connection did not resolve the name again');
    // The same name now resolves to a private address and is refused.
    const err = await failure(guarded(rebinding).fetch({ url: server.url('/hello', 'public.test') }));
    assert.equal(err.code, 'blocked_address');
  });

  it('answers bad URLs and unknown names with their own codes', async () => {
    assert.equal((await failure(guarded(mapped).fetch({ url: 'not a url' }))).code, 'invalid_url');
    assert.equal((await failure(guarded(mapped).fetch({ url: 'file:///etc/passwd' }))).code, 'invalid_url');
    assert.equal((await failure(guarded(mapped).fetch({ url: 'https://u:p@public.test/' }))).code, 'invalid_url');
    assert.equal((await failure(guarded(mapped).fetch({ url: 'http://public.test/' }))).code, 'not_https');
    assert.equal((await failure(guarded(mapped).fetch({ url: 'https://nowhere.test/' }))).code, 'dns_failed');
    const check = await guarded(mapped).checkTarget('https://nowhere.test/');
    assert.equal(!check.ok && check.code, 'dns_failed');
    assert.deepEqual(await guarded(mapped).checkTarget(server.url('/', 'public.test')), { ok: true });
  });

  it('aborts on the caller signal', async () => {
    const ac = new AbortController();
    const p = guarded(mapped).fetch({ url: server.url('/slow-headers', 'public.test'), signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    const err = await failure(p);
    assert.equal(err.code, 'aborted', err.message);
  });
});

describe('outbound client over plain HTTP', () => {
  let server: LocalServer;
  before(async () => {
    server = await startHttpServer((_req, res) => res.end('plain'));
  });
  after(() => server.close());

  it('is allowed only with requireHttps false, and reports tlsMs 0 and no certificate', async () => {
    const res = await guarded(mapped).fetch({ url: server.url('/', 'public.test'), requireHttps: false });
    assert.equal(res.body.toString(), 'plain');
    assert.equal(res.timings.tlsMs, 0);
    assert.equal(res.tlsExpiresAt, null);
  });

  it('reports a refused connection as connect_failed', async () => {
    const port = server.port;
    await server.close();
    const err = await failure(guarded(mapped).fetch({ url: `http://public.test:${port}/`, requireHttps: false }));
    assert.equal(err.code, 'connect_failed', err.message);
    server = await startHttpServer((_req, res) => res.end('plain'));
  });
});

describe('outbound trust and target checks', () => {
  it('trusts a CA from NODE_EXTRA_CA_CERTS (no ca option) in a fresh process, and refuses without it', async () => {
    const server = await startHttpsServer((_req, res) => res.end('trusted'));
    try {
      const clientJs = new URL('../../src/outbound/client.js', import.meta.url).href;
      const script = `import { createOutboundClient } from ${JSON.stringify(clientJs)};
        const c = createOutboundClient({ allowPrivateTargets: true });
        c.fetch({ url: ${JSON.stringify(server.url('/'))} }).then((r) => console.log('OK ' + r.body.toString() + ' ' + (r.tlsExpiresAt !== null)), (e) => console.log('ERR ' + e.code));`;
      const run = async (env: Record<string, string>) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
          env: { ...process.env, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        await once(child, 'exit');
        return out.trim();
      };
      assert.equal(await run({ NODE_EXTRA_CA_CERTS: testCa().caPath }), 'OK trusted true');
      assert.equal(await run({ NODE_EXTRA_CA_CERTS: '' }), 'ERR tls_failed');
    } finally {
      await server.close();
    }
  });

  it('assertCallableTarget throws request_validation_failed naming the field', async () => {
    const c = guarded(mapped);
    await assertCallableTarget(c, 'https://public.test/', 'body.url');
    await assert.rejects(assertCallableTarget(c, 'https://evil.test/', 'body.url'), (e: ApiError) => {
      assert.equal(e.code, 'request_validation_failed');
      assert.equal(e.status, 400);
      assert.deepEqual((e.details as any[])[0].field, 'body.url');
      assert.equal((e.details as any[])[0].code, 'blocked_address');
      assert.match(e.message, /10\.0\.0\.1/);
      return true;
    });
    await assert.rejects(
      assertCallableTarget(c, 'http://public.test/', 'body.url'),
      (e: ApiError) => (e.details as any[])[0].code === 'not_https',
    );
  });
});
