import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, assertError, inviteAndSignIn, signIn } from './helpers.js';

test('sign in with email and password, act as the user, sign out', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const r = await srv.post('/v1/sessions', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, { token: null });
  assert.equal(r.status, 201);
  const { token, user_id, expires_at } = r.body.data;
  assert.match(token, /^sls_/);
  assert.match(user_id, /^usr_/);
  const ttlDays = (Date.parse(expires_at) - Date.now()) / 86_400_000;
  assert.ok(ttlDays > 29 && ttlDays <= 30, `expires in ${ttlDays} days`);
  // Email matching ignores case.
  assert.equal(
    (await srv.post('/v1/sessions', { email: 'ADMIN@localhost', password: ADMIN_PASSWORD }, { token: null })).status,
    201,
  );

  const me = await srv.get(`/v1/users/${user_id}`, { token });
  assert.equal(me.status, 200);
  assert.equal(me.body.data.email, ADMIN_EMAIL);
  // The session acts in the user's first team with the Owner role's scopes.
  assert.equal((await srv.get('/v1/keys', { token })).status, 200);

  const out = await srv.delete('/v1/sessions', { token });
  assert.equal(out.status, 200);
  assert.equal(out.body.data, null);
  assertError(await srv.get('/v1/keys', { token }), 401, 'auth_invalid_credentials');
});

test('wrong email and wrong password answer the same 401', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const wrongPassword = assertError(
    await srv.post('/v1/sessions', { email: ADMIN_EMAIL, password: 'nope' }, { token: null }),
    401,
    'auth_invalid_credentials',
  );
  const wrongEmail = assertError(
    await srv.post('/v1/sessions', { email: 'ghost@example.com', password: ADMIN_PASSWORD }, { token: null }),
    401,
    'auth_invalid_credentials',
  );
  assert.equal(wrongPassword.message, wrongEmail.message);
  // An invited user without a password cannot sign in, and is told the same.
  const invited = await srv.post(`/v1/teams/${srv.sluice.bootstrap!.team_id}/users`, { email: 'nopass@example.com' });
  assert.equal(invited.status, 201);
  const noPassword = assertError(
    await srv.post('/v1/sessions', { email: 'nopass@example.com', password: 'anything-at-all' }, { token: null }),
    401,
    'auth_invalid_credentials',
  );
  assert.equal(noPassword.message, wrongEmail.message);

  assertError(
    await srv.post('/v1/sessions', { email: ADMIN_EMAIL }, { token: null }),
    400,
    'request_validation_failed',
    'body.password',
  );
  assertError(
    await srv.post('/v1/sessions', { email: ADMIN_EMAIL, password: 'x', remember: true }, { token: null }),
    400,
    'request_validation_failed',
    'body.remember',
  );
});

test('signing out needs a session: an API key gets 403 session_required', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  assertError(await srv.delete('/v1/sessions'), 403, 'session_required');
  assertError(await srv.delete('/v1/sessions', { token: null }), 401, 'auth_missing_credentials');
});

test('X-Team-Id picks the team a session acts in; a foreign team is 403', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const bootTeam = srv.sluice.bootstrap!.team_id;
  const admin = await signIn(srv);
  const created = await srv.post('/v1/teams', { name: 'Second team' }, { token: admin });
  assert.equal(created.status, 201);
  const second = created.body.data.id;

  const key = await srv.post(
    '/v1/keys',
    { name: 'in second', scopes: { projects: ['read'] } },
    { token: admin, headers: { 'x-team-id': second } },
  );
  assert.equal(key.status, 201);
  assert.equal(key.body.data.team_id, second);
  const inSecond = await srv.get('/v1/keys', { token: admin, headers: { 'x-team-id': second } });
  assert.deepEqual(
    inSecond.body.data.map((k: any) => k.name),
    ['in second'],
  );
  // Without the header: the user's first team.
  const inFirst = await srv.get('/v1/keys', { token: admin });
  assert.ok(inFirst.body.data.every((k: any) => k.team_id === bootTeam));

  // Another user with their own team: admin is not a member there.
  const other = await inviteAndSignIn(srv, bootTeam, 'other@example.com');
  const theirs = await srv.post('/v1/teams', { name: 'Their team' }, { token: other.token });
  assert.equal(theirs.status, 201);
  assertError(
    await srv.get('/v1/keys', { token: admin, headers: { 'x-team-id': theirs.body.data.id } }),
    403,
    'forbidden',
  );
  assertError(await srv.get(`/v1/teams/${theirs.body.data.id}`, { token: admin }), 404, 'not_found');
});
