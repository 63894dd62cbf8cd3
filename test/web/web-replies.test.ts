/**
 * Web replies from the route table (docs/pages.md, "Web replies"): hashed assets with ETag/304 and
 * precompressed bodies chosen by Accept-Encoding; the browser's session cookie (HttpOnly, SameSite,
 * Secure behind TLS) and the CSRF guard on its writes; Server-Sent Events; and the OpenAPI document
 * still covering exactly the /v1 routes.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { request } from 'node:http';
import { TestServer } from '../helpers/server.js';
import { fails, ok } from '../catalog/helpers.js';
import { pageSetup } from '../pages/helpers.js';

/** A raw GET (fetch would decompress, hiding what was sent). */
function rawGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function signIn(srv: TestServer, headers: Record<string, string> = {}) {
  const res = await fetch(`${srv.url}/web/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ email: 'admin@localhost', password: 'admin-password' }),
  });
  return { res, body: (await res.json()) as any, cookie: res.headers.get('set-cookie') ?? '' };
}

describe('web replies', () => {
  let srv: TestServer;
  before(async () => {
    srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0', SLUICE_PAGE_WATCH_MS: '100' } });
  });
  after(() => srv.stop());

  test('assets: hashed names, immutable, ETag and 304, br/gzip precompressed by Accept-Encoding', async () => {
    const manifest = srv.sluice.services.webAssets.manifest;
    assert.ok(manifest, 'npm run build wrote dist/web/manifest.json');
    const js = manifest.entries.page!.js;
    assert.match(js, /^page-[A-Z0-9]{8}\.js$/);
    const url = `${srv.url}/assets/${js}`;
    const plain = await rawGet(url);
    assert.equal(plain.status, 200);
    assert.equal(plain.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.body.length, manifest.files[js]!.bytes);
    const etag = plain.headers.etag as string;
    assert.match(etag, /^"[A-Za-z0-9_-]{22}"$/);

    const br = await rawGet(url, { 'accept-encoding': 'gzip, deflate, br' });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(br.headers.vary, 'Accept-Encoding');
    assert.equal(br.body.length, manifest.files[js]!.brotli);
    assert.deepEqual(brotliDecompressSync(br.body), plain.body);
    const gz = await rawGet(url, { 'accept-encoding': 'gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.deepEqual(gunzipSync(gz.body), plain.body);
    const notBr = await rawGet(url, { 'accept-encoding': 'br;q=0, gzip' });
    assert.equal(notBr.headers['content-encoding'], 'gzip', 'q=0 refuses an encoding');

    const again = await rawGet(url, { 'if-none-match': etag, 'accept-encoding': 'br' });
    assert.equal(again.status, 304);
    assert.equal(again.body.length, 0);
    assert.equal(again.headers.etag, etag);
    assert.equal((await rawGet(url, { 'if-none-match': '"other"' })).status, 200);

    const missing = await rawGet(`${srv.url}/assets/page-AAAAAAAA.js`);
    assert.equal(missing.status, 404);
    assert.match(String(missing.headers['content-type']), /^text\/html/);
    assert.match(missing.body.toString(), /data-error-code="not_found"/);
    assert.equal((await rawGet(`${srv.url}/assets/..%2Fmanifest.json`)).status, 400);
  });

  test('session cookie: HttpOnly, SameSite=Lax, Secure behind TLS; reads with it; writes need the CSRF header', async () => {
    const bad = await fetch(`${srv.url}/web/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@localhost', password: 'wrong' }),
    });
    assert.equal(bad.status, 401);
    assert.equal(bad.headers.get('set-cookie'), null);

    const { res, body, cookie } = await signIn(srv);
    assert.equal(res.status, 201);
    assert.match(cookie, /^sluice_session=sls_[0-9a-z]+; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Lax$/);
    assert.ok(!JSON.stringify(body).includes(cookie.split(';')[0]!.split('=')[1]!), 'the token is only in the cookie');
    const csrf = body.data.csrf_token as string;
    const jar = cookie.split(';')[0]!;
    assert.match((await signIn(srv, { 'x-forwarded-proto': 'https' })).cookie, /; Secure$/);
    const crossSite = await signIn(srv, { origin: 'https://evil.example' });
    fails({ status: crossSite.res.status, headers: crossSite.res.headers, body: crossSite.body }, 403, 'csrf_failed');
    assert.equal(crossSite.cookie, '', 'another site cannot sign a browser in');

    ok(await srv.get('/v1/projects', { token: null, headers: { cookie: jar } }));
    fails(
      await srv.post('/v1/projects', { name: 'by cookie' }, { token: null, headers: { cookie: jar } }),
      403,
      'csrf_failed',
    );
    fails(
      await srv.post(
        '/v1/projects',
        { name: 'by cookie' },
        { token: null, headers: { cookie: jar, 'x-sluice-csrf': 'forged' } },
      ),
      403,
      'csrf_failed',
    );
    fails(
      await srv.post(
        '/v1/projects',
        { name: 'by cookie' },
        { token: null, headers: { cookie: jar, 'x-sluice-csrf': csrf, origin: 'https://evil.example' } },
      ),
      403,
      'csrf_failed',
    );
    ok(
      await srv.post(
        '/v1/projects',
        { name: 'by cookie' },
        { token: null, headers: { cookie: jar, 'x-sluice-csrf': csrf } },
      ),
      201,
    );
    // Bearer callers are not held to the CSRF header.
    ok(await srv.post('/v1/projects', { name: 'by key' }), 201);

    const out = await fetch(`${srv.url}/web/session`, {
      method: 'DELETE',
      headers: { cookie: jar, 'x-sluice-csrf': csrf },
    });
    assert.equal(out.status, 200);
    assert.match(
      out.headers.get('set-cookie') ?? '',
      /^sluice_session=; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax$/,
    );
    fails(await srv.get('/v1/projects', { token: null, headers: { cookie: jar } }), 401, 'auth_invalid_credentials');
  });

  test('Server-Sent Events: a page stream says hello, then data on refresh; it ends when the server stops', async () => {
    const s = await pageSetup(srv, { name: 'SSE', metrics: 1 });
    const page = ok(await srv.post(s.pages, { name: 'Live', slug: 'live', visibility: 'public' }), 201);
    const ac = new AbortController();
    const res = await fetch(`${srv.url}/p/live/events`, { signal: ac.signal });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const reader = res.body!.getReader();
    let text = '';
    const until = async (pattern: RegExp) => {
      const deadline = Date.now() + 5_000;
      while (!pattern.test(text) && Date.now() < deadline) {
        const { value, done } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString('utf8');
      }
      assert.match(text, pattern);
    };
    await until(/event: hello\ndata: \{"page":"live"\}\n\n/);
    assert.equal(srv.sluice.services.pageEvents.size, 1);
    ok(await srv.post(`${s.pages}/${page.id}/refresh`));
    await until(/event: data\ndata: \{"at":"[^"]+"\}\n\n/);
    ok(await srv.post(`${s.pages}/${page.id}/components`, { metric_id: s.metrics[0].id }), 201);
    await until(/event: page\n/);
    ac.abort();
    // The server notices the client leaving and drops its subscription.
    for (let i = 0; i < 50 && srv.sluice.services.pageEvents.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(srv.sluice.services.pageEvents.size, 0);
    // A private page's stream needs a session.
    const priv = ok(await srv.post(s.pages, { name: 'Private live', slug: 'private-live' }), 201);
    assert.equal(priv.visibility, 'private');
    const refused = await fetch(`${srv.url}/p/private-live/events`);
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()) as any).error.code, 'sign_in_required');
  });

  test('the OpenAPI document covers every /v1 route and no web route', async () => {
    const doc = ok(await srv.get('/v1/openapi.json', { token: null }));
    const paths = Object.keys(doc.paths);
    assert.ok(
      paths.every((p) => p.startsWith('/v1/')),
      paths.filter((p) => !p.startsWith('/v1/')).join(', '),
    );
    assert.ok(doc.paths['/v1/projects/{project_id}/pages/{page_id}/components'].post);
    const web = srv.sluice.router.routes
      .filter((r) => r.def.web)
      .map((r) => r.endpoint)
      .sort();
    assert.deepEqual(web, [
      'DELETE /web/session',
      'GET /assets/:file',
      'GET /p/:slug',
      'GET /p/:slug/c/:component_id',
      'GET /p/:slug/c/:component_id/data',
      'GET /p/:slug/data',
      'GET /p/:slug/events',
      'POST /web/session',
    ]);
  });
});

test('a stopping server ends open event streams', async () => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  const s = await pageSetup(srv, { name: 'Stop', metrics: 0 });
  ok(await srv.post(s.pages, { name: 'Stop', slug: 'stop', visibility: 'public' }), 201);
  const res = await fetch(`${srv.url}/p/stop/events`);
  const reader = res.body!.getReader();
  await reader.read();
  const started = Date.now();
  await srv.stop();
  assert.ok(Date.now() - started < 5_000, 'stop does not wait for the stream');
  let done = false;
  for (let i = 0; i < 20 && !done; i++) done = (await reader.read().catch(() => ({ done: true }))).done;
  assert.ok(done, 'the stream ended');
});
