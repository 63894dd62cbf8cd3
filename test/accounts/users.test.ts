import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { assertError, inviteAndSignIn, signIn } from './helpers.js';

const USER_FIELDS = ['object', 'id', 'email', 'name', 'has_password', 'created_at', 'updated_at'];

test('users: list and get members of the team, never the password hash', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { team_id: teamId, user_id: adminId } = srv.sluice.bootstrap!;
  const b = await inviteAndSignIn(srv, teamId, 'bea@example.com');
  const list = await srv.get('/v1/users');
  assert.equal(list.status, 200);
  assert.deepEqual(
    list.body.data.map((u: any) => u.email),
    ['admin@localhost', 'bea@example.com'],
  );
  assert.deepEqual(Object.keys(list.body.data[0]), USER_FIELDS);
  assert.equal(list.body.data[0].object, 'user');
  assert.equal(list.body.data[0].has_password, true);
  assert.ok(!JSON.stringify(list.body).includes('scrypt'));
  const one = await srv.get(`/v1/users/${b.userId}`);
  assert.equal(one.body.data.email, 'bea@example.com');

  // A user in no team of the caller is 404; so is an unknown id; a wrong prefix is 400.
  const admin = await signIn(srv);
  const lone = await srv.post(`/v1/teams/${teamId}/users`, { email: 'lone@example.com' });
  await srv.delete(`/v1/teams/${teamId}/users/${lone.body.data.id}`);
  assertError(await srv.get(`/v1/users/${lone.body.data.id}`, { token: admin }), 404, 'not_found');
  assertError(await srv.get('/v1/users/usr_aaaaaaaaaaaaaaaaaaaa'), 404, 'not_found');
  assertError(await srv.get('/v1/users/team_aaaaaaaaaaaaaaaaaaaa'), 404, 'not_found');
  // The lone user can still read themself, with a session of no team.
  const loneToken = lone.body.data.invite_token;
  assert.equal((await srv.get(`/v1/users/${lone.body.data.id}`, { token: loneToken })).status, 200);
  assertError(await srv.get(`/v1/users/${adminId}`, { token: loneToken }), 404, 'not_found');
});

test('users: change your own name and email; nobody else may', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { team_id: teamId, user_id: adminId } = srv.sluice.bootstrap!;
  const admin = await signIn(srv);
  const b = await inviteAndSignIn(srv, teamId, 'cat@example.com');

  const r = await srv.post(`/v1/users/${b.userId}`, { name: 'Cat', email: 'Cat.New@Example.com' }, { token: b.token });
  assert.equal(r.status, 200);
  assert.equal(r.body.data.name, 'Cat');
  assert.equal(r.body.data.email, 'cat.new@example.com');
  assert.equal(
    (await signIn(srv, 'cat.new@example.com', 'member-password')).startsWith('sls_'),
    true,
    'signs in with the new email',
  );
  assertError(
    await srv.post('/v1/sessions', { email: 'cat@example.com', password: 'member-password' }, { token: null }),
    401,
    'auth_invalid_credentials',
  );
  assert.equal((await srv.post(`/v1/users/${b.userId}`, { name: null }, { token: b.token })).body.data.name, null);

  assert.equal((await srv.post(`/v1/teams/${teamId}/users`, { email: 'taken@example.com' })).status, 201);
  assertError(
    await srv.post(`/v1/users/${b.userId}`, { email: 'TAKEN@example.com' }, { token: b.token }),
    409,
    'conflict',
  );
  assertError(await srv.post(`/v1/users/${b.userId}`, { name: 'By key' }), 403, 'session_required');
  assertError(await srv.post(`/v1/users/${b.userId}`, { name: 'By admin' }, { token: admin }), 403, 'forbidden');
  assertError(await srv.post(`/v1/users/${adminId}`, {}, { token: admin }), 400, 'request_validation_failed', 'body');
  assertError(
    await srv.post(`/v1/users/${adminId}`, { name: 'n'.repeat(101) }, { token: admin }),
    400,
    'request_validation_failed',
    'body.name',
  );
  assertError(
    await srv.post(`/v1/users/${adminId}`, { email: 'nope' }, { token: admin }),
    400,
    'request_validation_failed',
    'body.email',
  );
  assertError(
    await srv.post(`/v1/users/${adminId}`, { password: 'sneaky-password' }, { token: admin }),
    400,
    'request_validation_failed',
    'body.password',
  );
});

test('users: enable_password sets a first password, changes it with current_password, signs out other sessions', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const teamId = srv.sluice.bootstrap!.team_id;
  const invite = await srv.post(`/v1/teams/${teamId}/users`, { email: 'dee@example.com' });
  const { id: userId, invite_token: inviteToken } = invite.body.data;
  const path = `/v1/users/${userId}/enable_password`;
  assertError(
    await srv.post(path, { password: 'short7!' }, { token: inviteToken }),
    400,
    'request_validation_failed',
    'body.password',
  );
  assertError(
    await srv.post(path, { password: 'p'.repeat(129) }, { token: inviteToken }),
    400,
    'request_validation_failed',
    'body.password',
  );
  assertError(await srv.post(path, { password: 'long-enough' }), 403, 'session_required');
  const first = await srv.post(path, { password: 'p'.repeat(8) }, { token: inviteToken });
  assert.equal(first.status, 200);
  assert.equal(first.body.data.has_password, true);

  const s1 = await signIn(srv, 'dee@example.com', 'pppppppp');
  const s2 = await signIn(srv, 'dee@example.com', 'pppppppp');
  assertError(
    await srv.post(path, { password: 'second-password' }, { token: s1 }),
    400,
    'request_validation_failed',
    'body.current_password',
  );
  assertError(
    await srv.post(path, { password: 'second-password', current_password: 'wrong-one' }, { token: s1 }),
    403,
    'current_password_invalid',
  );
  const changed = await srv.post(path, { password: 'p'.repeat(128), current_password: 'pppppppp' }, { token: s1 });
  assert.equal(changed.status, 200);
  assert.equal(
    (await srv.get(`/v1/users/${userId}`, { token: s1 })).status,
    200,
    'the session that changed it stays signed in',
  );
  assertError(await srv.get(`/v1/users/${userId}`, { token: s2 }), 401, 'auth_invalid_credentials');
  assertError(await srv.get(`/v1/users/${userId}`, { token: inviteToken }), 401, 'auth_invalid_credentials');
  assert.ok((await signIn(srv, 'dee@example.com', 'p'.repeat(128))).startsWith('sls_'));
  // Someone else's password: forbidden.
  const admin = await signIn(srv);
  assertError(await srv.post(path, { password: 'takeover-pw' }, { token: admin }), 403, 'forbidden');
});

test("users: a user's teams — all of them for yourself, shared ones for others", async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { team_id: teamId, user_id: adminId } = srv.sluice.bootstrap!;
  const admin = await signIn(srv);
  const e = await inviteAndSignIn(srv, teamId, 'eve@example.com');
  const evesOwn = (await srv.post('/v1/teams', { name: 'Eve private' }, { token: e.token })).body.data;
  const mine = await srv.get(`/v1/users/${e.userId}/teams`, { token: e.token });
  assert.equal(mine.status, 200);
  assert.deepEqual(mine.body.data.map((x: any) => x.name).sort(), ['Eve private', 'Team']);
  assert.equal(mine.body.data[0].object, 'team');
  // Teams without collection files store nothing (each item is serialised with its own storage).
  assert.deepEqual(
    mine.body.data.map((x: any) => x.storage_gb),
    [0, 0],
  );
  const seenByAdmin = await srv.get(`/v1/users/${e.userId}/teams`, { token: admin });
  assert.deepEqual(
    seenByAdmin.body.data.map((x: any) => x.id),
    [teamId],
    "the admin does not see Eve's private team",
  );
  const seenByKey = await srv.get(`/v1/users/${e.userId}/teams`);
  assert.deepEqual(
    seenByKey.body.data.map((x: any) => x.id),
    [teamId],
  );
  // From Eve's private team, the admin is not a member: 404.
  assertError(
    await srv.get(`/v1/users/${adminId}/teams`, { token: e.token, headers: { 'x-team-id': evesOwn.id } }),
    404,
    'not_found',
  );
});
