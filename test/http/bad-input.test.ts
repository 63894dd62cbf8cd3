import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { BOOTSTRAP_KEY, TestServer } from '../helpers/server.js';

/** Send a body with chunked transfer encoding (no Content-Length), as a streaming client would. */
function postChunked(url: string, path: string, chunks: Buffer[]): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url + path,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${BOOTSTRAP_KEY}`,
          'content-type': 'application/json',
          'transfer-encoding': 'chunked',
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

test('bad input classes answer a 4xx envelope with a stable code', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_MAX_BODY_BYTES: '2048' } });
  t.after(() => srv.stop());

  const malformed = await srv.call('POST', '/v1/projects', {
    raw: '{"name": ',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(malformed.status, 400);
  assert.equal(malformed.body.error?.code, 'request_malformed_json');
  assert.equal(malformed.body.data, null);
  assert.equal(malformed.body.endpoint, 'POST /v1/projects');

  const notObject = await srv.post('/v1/projects', [1, 2]);
  assert.equal(notObject.status, 400);
  assert.equal(notObject.body.error?.code, 'request_validation_failed');

  const wrongType = await srv.post('/v1/projects', { name: 42 });
  assert.equal(wrongType.status, 400);
  assert.equal(wrongType.body.error?.details[0].field, 'body.name');

  const huge = await srv.post('/v1/projects', { name: 'x'.repeat(5000) });
  assert.equal(huge.status, 413);
  assert.equal(huge.body.error?.code, 'payload_too_large');

  const chunked = await postChunked(srv.url, '/v1/projects', [
    Buffer.from('{"name":"'),
    Buffer.alloc(3000, 'y'),
    Buffer.from('"}'),
  ]);
  assert.equal(chunked.status, 413);
  assert.equal(chunked.body.error.code, 'payload_too_large');
  // The server stays healthy after refusing.
  assert.equal((await srv.get('/v1/projects')).status, 200);

  const multipart = await srv.call('POST', '/v1/projects', {
    raw: 'x',
    headers: { 'content-type': 'multipart/form-data; boundary=x' },
  });
  assert.equal(multipart.status, 415);
  assert.equal(multipart.body.error?.code, 'unsupported_media_type');

  const badCursor = await srv.get('/v1/projects?after=not-a-cursor!');
  assert.equal(badCursor.status, 400);
  assert.equal(badCursor.body.error?.code, 'request_invalid_cursor');
  const forgedCursor = await srv.get(`/v1/projects?after=${Buffer.from('{"x":1}').toString('base64url')}`);
  assert.equal(forgedCursor.status, 400);
  assert.equal(forgedCursor.body.error?.code, 'request_invalid_cursor');

  const both = await srv.get('/v1/projects?after=abc&before=abc');
  assert.equal(both.status, 400);
  assert.match(both.body.error!.message, /mutually exclusive/);

  for (const [limit, status] of [
    ['0', 400],
    ['1', 200],
    ['200', 200],
    ['201', 400],
    ['ten', 400],
    ['2.5', 400],
  ] as const) {
    const r = await srv.get(`/v1/projects?limit=${limit}`);
    assert.equal(r.status, status, `limit=${limit}`);
    if (status === 200) assert.equal(r.body.pagination?.limit, Number(limit));
    else assert.equal(r.body.error?.details[0].field, 'query.limit');
  }
  const badSort = await srv.get('/v1/projects?sort=sideways');
  assert.equal(badSort.status, 400);
  assert.equal(badSort.body.error?.details[0].field, 'query.sort');
  const badOrder = await srv.get('/v1/projects?order_by=colour');
  assert.equal(badOrder.status, 400);
  const unknownParam = await srv.get('/v1/projects?colour=red');
  assert.equal(unknownParam.status, 400);
  assert.equal(unknownParam.body.error?.details[0].field, 'query.colour');
  const repeated = await srv.get('/v1/projects?limit=2&limit=3');
  assert.equal(repeated.status, 400);

  const badId = await srv.get('/v1/projects/prj_%E0%A4%A');
  assert.ok(badId.status === 400 || badId.status === 404, `got ${badId.status}`);
  assert.ok(badId.body.error);
});

test('401 for missing or invalid credentials, 403 for a missing scope', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const none = await srv.get('/v1/projects', { token: null });
  assert.equal(none.status, 401);
  assert.equal(none.body.error?.code, 'auth_missing_credentials');
  const basic = await srv.get('/v1/projects', { token: null, headers: { authorization: 'Basic YWxhZGRpbjpvcGVu' } });
  assert.equal(basic.status, 401);
  assert.equal(basic.body.error?.code, 'auth_missing_credentials');
  const wrong = await srv.get('/v1/projects', { token: 'slk_wrong' });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.body.error?.code, 'auth_invalid_credentials');
  const expiredSession = await srv.get('/v1/projects', { token: 'sls_not_a_session' });
  assert.equal(expiredSession.status, 401);

  const s = srv.sluice.services;
  const team = s.accounts.teamIdsOf((await s.accounts.getUserByEmail('admin@localhost'))!.id)[0]!;
  const { secret } = await s.accounts.createKey({
    teamId: team,
    name: 'reader',
    scopes: { projects: ['read'] },
    updatedBy: null,
  });
  assert.equal((await srv.get('/v1/projects', { token: secret })).status, 200);
  const denied = await srv.post('/v1/projects', { name: 'nope' }, { token: secret });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error?.code, 'forbidden');
  assert.match(denied.body.error!.message, /projects:write/);
  // The scope check runs before validation: a caller without the scope learns nothing about the body.
  const deniedInvalid = await srv.post('/v1/projects', { bogus: true }, { token: secret });
  assert.equal(deniedInvalid.status, 403);
});

test('the OpenAPI document lists every route the server validates', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const res = await srv.get('/v1/openapi.json', { token: null });
  assert.equal(res.status, 200);
  const doc = res.body.data;
  assert.equal(doc.openapi, '3.1.0');
  for (const r of srv.sluice.router.routes) {
    if (r.def.web) {
      assert.ok(!r.def.path.startsWith('/v1/'), `${r.endpoint}: web routes live outside /v1`);
      continue;
    }
    const path = r.def.path.replace(/:([a-z_]+)/g, '{$1}');
    const op = doc.paths[path]?.[r.def.method.toLowerCase()];
    assert.ok(op, `${r.endpoint} is documented`);
    assert.equal(op['x-scope'], r.def.auth === 'none' ? null : r.def.scope);
    if (r.def.schema?.body) assert.ok(op.requestBody, `${r.endpoint} documents its body`);
  }
  const createProject = doc.paths['/v1/projects'].post.requestBody.content['application/json'].schema;
  assert.equal(createProject.properties.name.maxLength, 60);
  assert.equal(createProject.additionalProperties, false);
});
