import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer, BOOTSTRAP_KEY } from '../helpers/server.js';
import { ManualClock } from '../../src/clock.js';
import { assertError, createKey, eventually, signIn } from './helpers.js';

const KEY_FIELDS = [
  'created_at',
  'id',
  'last4',
  'last_used_at',
  'name',
  'object',
  'scopes',
  'team_id',
  'updated_at',
  'updated_by',
];

test('API keys: create, get, list, update and delete, with every Key field', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const boot = (await srv.get('/v1/keys')).body.data.find((k: any) => k.name === 'Bootstrap key');
  assert.equal(boot.last4, BOOTSTRAP_KEY.slice(-4));

  // Duplicate actions are rejected by the schema.
  assertError(
    await srv.post('/v1/keys', { name: 'CI key', scopes: { projects: ['write', 'read', 'read'] } }),
    400,
    'request_validation_failed',
    'body.scopes.projects',
  );
  const r = await srv.post('/v1/keys', { name: 'CI key', scopes: { projects: ['write', 'read'] } });
  assert.equal(r.status, 201);
  const key = r.body.data;
  assert.deepEqual(Object.keys(key).sort(), [...KEY_FIELDS, 'api_key'].sort());
  assert.equal(key.object, 'key');
  assert.match(key.id, /^key_[0-9a-z]{20}$/);
  assert.match(key.api_key, /^slk_/);
  assert.equal(key.last4, key.api_key.slice(-4));
  assert.deepEqual(key.scopes, { projects: ['read', 'write'] }, 'scopes are normalised');
  assert.equal(key.team_id, boot.team_id);
  assert.equal(key.updated_by, boot.id, 'updated_by is the key that created it');
  assert.equal(key.last_used_at, null);

  const got = await srv.get(`/v1/keys/${key.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(Object.keys(got.body.data).sort(), KEY_FIELDS);
  assert.equal(got.body.data.api_key, undefined, 'the secret is shown only at creation');

  // The new key works.
  assert.equal((await srv.get('/v1/projects', { token: key.api_key })).status, 200);

  // Update by a session: updated_by becomes the user id.
  const session = await signIn(srv);
  const renamed = await srv.post(
    `/v1/keys/${key.id}`,
    { name: 'CI key 2', scopes: { projects: ['read'] } },
    { token: session },
  );
  assert.equal(renamed.status, 200);
  assert.equal(renamed.body.data.name, 'CI key 2');
  assert.deepEqual(renamed.body.data.scopes, { projects: ['read'] });
  assert.match(renamed.body.data.updated_by, /^usr_/);
  assert.ok(renamed.body.data.updated_at >= key.updated_at);
  assertError(await srv.post('/v1/projects', { name: 'x' }, { token: key.api_key }), 403, 'forbidden');

  const del = await srv.delete(`/v1/keys/${key.id}`);
  assert.equal(del.status, 200);
  assert.equal(del.body.data, null);
  assertError(await srv.get(`/v1/keys/${key.id}`), 404, 'not_found');
  assertError(await srv.delete(`/v1/keys/${key.id}`), 404, 'not_found');
  assertError(await srv.get('/v1/projects', { token: key.api_key }), 401, 'auth_invalid_credentials');
});

test('API keys: list order and pagination', async (t) => {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));
  const srv = await TestServer.start({ clock });
  t.after(() => srv.stop());
  for (const name of ['bravo', 'alpha', 'charlie']) {
    clock.advance(1000);
    await createKey(srv, {}, { name });
  }
  const byDefault = await srv.get('/v1/keys');
  assert.deepEqual(
    byDefault.body.data.map((k: any) => k.name),
    ['charlie', 'alpha', 'bravo', 'Bootstrap key'],
    'created_at desc',
  );
  const byName = await srv.get('/v1/keys?order_by=name&sort=asc');
  assert.deepEqual(
    byName.body.data.map((k: any) => k.name),
    ['alpha', 'Bootstrap key', 'bravo', 'charlie'],
  );
  const p1 = await srv.get('/v1/keys?order_by=name&sort=asc&limit=2');
  assert.equal(p1.body.data.length, 2);
  const p2 = await srv.get(`/v1/keys?order_by=name&sort=asc&limit=2&after=${p1.body.pagination!.next_cursor}`);
  assert.deepEqual(
    p2.body.data.map((k: any) => k.name),
    ['bravo', 'charlie'],
  );
  assert.equal(p2.body.pagination!.next_cursor, null);
  assertError(await srv.get('/v1/keys?order_by=last4'), 400, 'request_validation_failed', 'query.order_by');
  assertError(await srv.get('/v1/keys?limit=201'), 400, 'request_validation_failed', 'query.limit');
});

test('API keys: validation edges', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  assertError(await srv.post('/v1/keys', { name: 'a' }), 400, 'request_validation_failed', 'body.name');
  assert.equal((await srv.post('/v1/keys', { name: 'ab' })).status, 201);
  assert.equal((await srv.post('/v1/keys', { name: 'x'.repeat(60) })).status, 201);
  assertError(await srv.post('/v1/keys', { name: 'x'.repeat(61) }), 400, 'request_validation_failed', 'body.name');
  assertError(await srv.post('/v1/keys', {}), 400, 'request_validation_failed', 'body.name');
  assertError(
    await srv.post('/v1/keys', { name: 'ok', colour: 'red' }),
    400,
    'request_validation_failed',
    'body.colour',
  );
  assertError(
    await srv.post('/v1/keys', { name: 'ok', scopes: { everything: ['read'] } }),
    400,
    'request_validation_failed',
    'body.scopes',
  );
  assertError(
    await srv.post('/v1/keys', { name: 'ok', scopes: { projects: ['admin'] } }),
    400,
    'request_validation_failed',
    'body.scopes.projects[0]',
  );
  assertError(
    await srv.post('/v1/keys', { name: 'ok', scopes: ['projects:read'] }),
    400,
    'request_validation_failed',
    'body.scopes',
  );
  assertError(await srv.get('/v1/keys/nope'), 404, 'not_found');
  assertError(await srv.get('/v1/keys/team_aaaaaaaaaaaaaaaaaaaa'), 404, 'not_found');
  assertError(await srv.get('/v1/keys/key_aaaaaaaaaaaaaaaaaaaa'), 404, 'not_found');
  assertError(await srv.post('/v1/keys/key_aaaaaaaaaaaaaaaaaaaa', { name: 'renamed' }), 404, 'not_found');
  const { id } = await createKey(srv, {});
  assertError(await srv.post(`/v1/keys/${id}`, {}), 400, 'request_validation_failed', 'body');
  assertError(await srv.post(`/v1/keys/${id}`, { name: 'a' }), 400, 'request_validation_failed', 'body.name');
  assertError(await srv.post(`/v1/keys/${id}`, { last4: 'abcd' }), 400, 'request_validation_failed', 'body.last4');
});

test('API keys: a caller grants only scopes it holds, on create and update', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const limited = await createKey(srv, { projects: ['read'], keys: ['read', 'write'] });

  const tooMuch = await srv.post(
    '/v1/keys',
    { name: 'escalate', scopes: { projects: ['read', 'write'] } },
    { token: limited.secret },
  );
  const err = assertError(tooMuch, 403, 'forbidden');
  assert.match(err.message, /projects:write/);
  assert.deepEqual(err.details.missing_scopes, ['projects:write']);

  const ok = await srv.post('/v1/keys', { name: 'reader', scopes: { projects: ['read'] } }, { token: limited.secret });
  assert.equal(ok.status, 201);
  assert.deepEqual(ok.body.data.scopes, { projects: ['read'] });

  const defaulted = await srv.post('/v1/keys', { name: 'same as me' }, { token: limited.secret });
  assert.equal(defaulted.status, 201);
  assert.deepEqual(
    defaulted.body.data.scopes,
    { keys: ['read', 'write'], projects: ['read'] },
    'omitted scopes default to the caller',
  );

  assertError(
    await srv.post(
      `/v1/keys/${ok.body.data.id}`,
      { scopes: { projects: ['read', 'delete'] } },
      { token: limited.secret },
    ),
    403,
    'forbidden',
  );
  // Narrowing (and keeping scopes the key already has) is not granting.
  const all = await createKey(srv, { projects: ['read', 'write', 'delete'] });
  const narrowed = await srv.post(
    `/v1/keys/${all.id}`,
    { scopes: { projects: ['read', 'write'] } },
    { token: limited.secret },
  );
  assert.equal(narrowed.status, 200);
  assert.deepEqual(narrowed.body.data.scopes, { projects: ['read', 'write'] });
});

test('401 missing vs invalid credentials, 403 missing scope', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  assertError(await srv.get('/v1/keys', { token: null }), 401, 'auth_missing_credentials');
  assertError(
    await srv.get('/v1/keys', { token: null, headers: { authorization: 'Basic abc' } }),
    401,
    'auth_missing_credentials',
  );
  assertError(await srv.get('/v1/keys', { token: 'slk_not_a_real_key' }), 401, 'auth_invalid_credentials');
  assertError(await srv.get('/v1/keys', { token: 'sls_not_a_real_session' }), 401, 'auth_invalid_credentials');
  const reader = await createKey(srv, { projects: ['read'] });
  const denied = assertError(await srv.get('/v1/keys', { token: reader.secret }), 403, 'forbidden');
  assert.match(denied.message, /keys:read/);
  assertError(await srv.post('/v1/keys', { name: 'nope' }, { token: reader.secret }), 403, 'forbidden');
});

test('a key may always delete itself, but not others without keys:delete', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const a = await createKey(srv, { projects: ['read'] });
  const b = await createKey(srv, { projects: ['read'] });
  assertError(await srv.delete(`/v1/keys/${b.id}`, { token: a.secret }), 403, 'forbidden');
  const self = await srv.delete(`/v1/keys/${a.id}`, { token: a.secret });
  assert.equal(self.status, 200);
  assert.equal(self.body.data, null);
  assertError(await srv.get('/v1/projects', { token: a.secret }), 401, 'auth_invalid_credentials');
  assert.equal((await srv.get(`/v1/keys/${b.id}`)).status, 200);
});

test('last_used_at is recorded on use, at most every five minutes', async (t) => {
  const clock = new ManualClock(Date.parse('2026-03-01T12:00:00Z'));
  const srv = await TestServer.start({ clock });
  t.after(() => srv.stop());
  const k = await createKey(srv, { projects: ['read'] });
  assert.equal((await srv.get(`/v1/keys/${k.id}`)).body.data.last_used_at, null);

  assert.equal((await srv.get('/v1/projects', { token: k.secret })).status, 200);
  const first = await eventually(async () => (await srv.get(`/v1/keys/${k.id}`)).body.data.last_used_at);
  assert.equal(first, '2026-03-01T12:00:00.000Z');

  clock.advance(60_000);
  await srv.get('/v1/projects', { token: k.secret });
  await new Promise((r) => setTimeout(r, 100));
  assert.equal((await srv.get(`/v1/keys/${k.id}`)).body.data.last_used_at, first, 'not rewritten within five minutes');

  clock.advance(5 * 60_000);
  await srv.get('/v1/projects', { token: k.secret });
  const later = await eventually(async () => {
    const v = (await srv.get(`/v1/keys/${k.id}`)).body.data.last_used_at;
    return v !== first ? v : null;
  });
  assert.equal(later, '2026-03-01T12:06:00.000Z');
});
