import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { assertError, createKey, inviteAndSignIn, signIn } from './helpers.js';

const MEMBER_FIELDS = [
  'object',
  'id',
  'email',
  'name',
  'has_password',
  'created_at',
  'updated_at',
  'role_id',
  'role_name',
  'team_id',
  'joined_at',
];

test('team members: invite, list, get, change role, remove', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const teamId = srv.sluice.bootstrap!.team_id;
  const roles = (await srv.get('/v1/roles')).body.data;
  const memberRole = roles.find((r: any) => r.builtin === 'member');
  const ownerRole = roles.find((r: any) => r.builtin === 'owner');

  const invited = await srv.post(`/v1/teams/${teamId}/users`, { email: 'Dana@Example.com', name: 'Dana' });
  assert.equal(invited.status, 201, JSON.stringify(invited.body));
  const dana = invited.body.data;
  assert.deepEqual(Object.keys(dana), [...MEMBER_FIELDS, 'invite_token', 'invite_expires_at']);
  assert.equal(dana.object, 'team_member');
  assert.match(dana.id, /^usr_/);
  assert.equal(dana.email, 'dana@example.com');
  assert.equal(dana.name, 'Dana');
  assert.equal(dana.has_password, false);
  assert.equal(dana.role_id, memberRole.id);
  assert.equal(dana.role_name, 'Member');
  assert.equal(dana.team_id, teamId);
  assert.match(dana.invite_token, /^sls_/);
  assertError(await srv.post(`/v1/teams/${teamId}/users`, { email: 'dana@example.com' }), 409, 'conflict');

  const list = await srv.get(`/v1/teams/${teamId}/users`);
  assert.equal(list.status, 200);
  assert.deepEqual(
    list.body.data.map((m: any) => [m.email, m.role_name]),
    [
      ['admin@localhost', 'Owner'],
      ['dana@example.com', 'Member'],
    ],
  );
  assert.deepEqual(Object.keys(list.body.data[0]), MEMBER_FIELDS);
  assert.deepEqual(
    (await srv.get(`/v1/teams/${teamId}/users?order_by=email&sort=desc`)).body.data.map((m: any) => m.email),
    ['dana@example.com', 'admin@localhost'],
  );
  const one = await srv.get(`/v1/teams/${teamId}/users/${dana.id}`);
  assert.equal(one.body.data.email, 'dana@example.com');
  assert.equal(one.body.data.invite_token, undefined);

  // Only Owners hand out the Owner role: the all-scope bootstrap key is not an Owner.
  assertError(await srv.post(`/v1/teams/${teamId}/users/${dana.id}`, { role_id: ownerRole.id }), 403, 'owner_required');
  const admin = await signIn(srv);
  const promoted = await srv.post(`/v1/teams/${teamId}/users/${dana.id}`, { role_id: ownerRole.id }, { token: admin });
  assert.equal(promoted.status, 200);
  assert.equal(promoted.body.data.role_name, 'Owner');
  const demoted = await srv.post(`/v1/teams/${teamId}/users/${dana.id}`, { role_id: memberRole.id }, { token: admin });
  assert.equal(demoted.body.data.role_name, 'Member');

  const removed = await srv.delete(`/v1/teams/${teamId}/users/${dana.id}`);
  assert.equal(removed.status, 200);
  assert.equal(removed.body.data, null);
  assertError(await srv.get(`/v1/teams/${teamId}/users/${dana.id}`), 404, 'not_found');
  assertError(await srv.delete(`/v1/teams/${teamId}/users/${dana.id}`), 404, 'not_found');
  // Re-inviting a known user adds the membership without a new invitation token.
  const again = await srv.post(`/v1/teams/${teamId}/users`, { email: 'dana@example.com' });
  assert.equal(again.status, 201);
  assert.equal(again.body.data.id, dana.id);
  assert.equal(again.body.data.invite_token, null);
});

test('team members: the last Owner cannot be demoted or removed', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { team_id: teamId, user_id: adminId } = srv.sluice.bootstrap!;
  const admin = await signIn(srv);
  const roles = (await srv.get('/v1/roles')).body.data;
  const memberRole = roles.find((r: any) => r.builtin === 'member');
  const ownerRole = roles.find((r: any) => r.builtin === 'owner');
  assertError(
    await srv.post(`/v1/teams/${teamId}/users/${adminId}`, { role_id: memberRole.id }, { token: admin }),
    409,
    'conflict',
  );
  assertError(await srv.delete(`/v1/teams/${teamId}/users/${adminId}`, { token: admin }), 409, 'conflict');
  // With a second Owner, the first may step down.
  const second = await inviteAndSignIn(srv, teamId, 'second@example.com');
  assert.equal(
    (await srv.post(`/v1/teams/${teamId}/users/${second.userId}`, { role_id: ownerRole.id }, { token: admin })).status,
    200,
  );
  assertError(await srv.delete(`/v1/teams/${teamId}/users/${adminId}`), 403, 'owner_required', undefined);
  const left = await srv.delete(`/v1/teams/${teamId}/users/${adminId}`, { token: admin });
  assert.equal(left.status, 200, 'an Owner may leave once another Owner exists');
  assertError(await srv.delete(`/v1/teams/${teamId}/users/${second.userId}`, { token: second.token }), 409, 'conflict');
});

test('team members: permissions, foreign team and validation', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const teamId = srv.sluice.bootstrap!.team_id;
  const admin = await signIn(srv);
  const other = (await srv.post('/v1/teams', { name: 'Other team' }, { token: admin })).body.data;
  // team_id must be the caller's current team.
  assertError(await srv.get(`/v1/teams/${other.id}/users`), 404, 'not_found');
  assertError(await srv.post(`/v1/teams/${other.id}/users`, { email: 'x@example.com' }), 404, 'not_found');
  assert.equal(
    (await srv.get(`/v1/teams/${other.id}/users`, { token: admin, headers: { 'x-team-id': other.id } })).status,
    200,
  );

  assertError(
    await srv.post(`/v1/teams/${teamId}/users`, { email: 'not-an-email' }),
    400,
    'request_validation_failed',
    'body.email',
  );
  assertError(await srv.post(`/v1/teams/${teamId}/users`, {}), 400, 'request_validation_failed', 'body.email');
  assertError(
    await srv.post(`/v1/teams/${teamId}/users`, { email: 'a@example.com', admin: true }),
    400,
    'request_validation_failed',
    'body.admin',
  );
  assertError(
    await srv.post(`/v1/teams/${teamId}/users`, { email: 'a@example.com', role_id: 'owner' }),
    400,
    'request_validation_failed',
    'body.role_id',
  );
  assertError(
    await srv.post(`/v1/teams/${teamId}/users`, { email: 'a@example.com', role_id: 'rol_aaaaaaaaaaaaaaaaaaaa' }),
    400,
    'request_validation_failed',
    'body.role_id',
  );
  assertError(
    await srv.post(`/v1/teams/${teamId}/users`, { email: 'a@example.com', name: '' }),
    400,
    'request_validation_failed',
    'body.name',
  );
  assertError(await srv.get(`/v1/teams/${teamId}/users/key_aaaaaaaaaaaaaaaaaaaa`), 404, 'not_found');
  assertError(await srv.get(`/v1/teams/${teamId}/users/usr_aaaaaaaaaaaaaaaaaaaa`), 404, 'not_found');

  // A Member (users:read only) may list, but not invite or remove others; may leave.
  const m = await inviteAndSignIn(srv, teamId, 'plain@example.com');
  assert.equal((await srv.get(`/v1/teams/${teamId}/users`, { token: m.token })).status, 200);
  assertError(
    await srv.post(`/v1/teams/${teamId}/users`, { email: 'z@example.com' }, { token: m.token }),
    403,
    'forbidden',
  );
  assertError(
    await srv.delete(`/v1/teams/${teamId}/users/${srv.sluice.bootstrap!.user_id}`, { token: m.token }),
    403,
    'forbidden',
  );
  // Granting a role with scopes the caller lacks is refused.
  const limited = await createKey(srv, { users: ['read', 'write'] });
  const analyst = (await srv.post('/v1/roles', { name: 'Analyst', scopes: { projects: ['read'] } })).body.data;
  assertError(
    await srv.post(`/v1/teams/${teamId}/users/${m.userId}`, { role_id: analyst.id }, { token: limited.secret }),
    403,
    'forbidden',
  );
  assert.equal(
    (await srv.delete(`/v1/teams/${teamId}/users/${m.userId}`, { token: m.token })).status,
    200,
    'a member may leave',
  );
});
