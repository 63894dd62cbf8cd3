import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { assertError, createKey } from './helpers.js';

const ROLE_FIELDS = [
  'object',
  'id',
  'team_id',
  'name',
  'description',
  'scopes',
  'builtin',
  'members_count',
  'created_at',
  'updated_at',
];

test('roles: built-ins listed; create, get, update, delete a custom role', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const teamId = srv.sluice.bootstrap!.team_id;
  const list = await srv.get('/v1/roles');
  assert.equal(list.status, 200);
  assert.deepEqual(
    list.body.data.map((r: any) => [r.name, r.builtin, r.members_count]),
    [
      ['Member', 'member', 0],
      ['Owner', 'owner', 1],
    ],
  );
  assert.deepEqual(Object.keys(list.body.data[0]), ROLE_FIELDS);
  const [member, owner] = list.body.data;

  const created = await srv.post('/v1/roles', {
    name: 'Analyst',
    description: 'Reads dashboards',
    scopes: { metrics: ['read'], projects: ['read'] },
  });
  assert.equal(created.status, 201);
  const role = created.body.data;
  assert.match(role.id, /^rol_[0-9a-z]{20}$/);
  assert.equal(role.object, 'role');
  assert.equal(role.team_id, teamId);
  assert.equal(role.builtin, null);
  assert.deepEqual(role.scopes, { projects: ['read'], metrics: ['read'] });
  assert.equal((await srv.get(`/v1/roles/${role.id}`)).body.data.name, 'Analyst');

  const updated = await srv.post(`/v1/roles/${role.id}`, {
    name: 'Analysts',
    description: null,
    scopes: { metrics: ['read', 'write'] },
  });
  assert.equal(updated.status, 200);
  assert.equal(updated.body.data.name, 'Analysts');
  assert.equal(updated.body.data.description, null);
  assert.deepEqual(updated.body.data.scopes, { metrics: ['read', 'write'] });

  assertError(await srv.post(`/v1/roles/${owner.id}`, { name: 'Boss' }), 403, 'builtin_role_immutable');
  assertError(await srv.post(`/v1/roles/${member.id}`, { scopes: {} }), 403, 'builtin_role_immutable');
  assertError(await srv.delete(`/v1/roles/${owner.id}`), 403, 'builtin_role_immutable');

  // In use: cannot be deleted until nobody holds it.
  const invite = await srv.post(`/v1/teams/${teamId}/users`, { email: 'analyst@example.com', role_id: role.id });
  assert.equal(invite.status, 201);
  assert.equal(invite.body.data.role_name, 'Analysts');
  assertError(await srv.delete(`/v1/roles/${role.id}`), 409, 'conflict');
  assert.equal(
    (await srv.post(`/v1/teams/${teamId}/users/${invite.body.data.id}`, { role_id: member.id })).status,
    200,
  );
  const del = await srv.delete(`/v1/roles/${role.id}`);
  assert.equal(del.status, 200);
  assert.equal(del.body.data, null);
  assertError(await srv.get(`/v1/roles/${role.id}`), 404, 'not_found');
  assertError(await srv.delete(`/v1/roles/${role.id}`), 404, 'not_found');
});

test('roles: validation edges', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  assertError(await srv.post('/v1/roles', { name: '', scopes: {} }), 400, 'request_validation_failed', 'body.name');
  assert.equal((await srv.post('/v1/roles', { name: 'a', scopes: {} })).status, 201, 'one character is enough');
  assert.equal((await srv.post('/v1/roles', { name: 'r'.repeat(60), scopes: {} })).status, 201);
  assertError(
    await srv.post('/v1/roles', { name: 'r'.repeat(61), scopes: {} }),
    400,
    'request_validation_failed',
    'body.name',
  );
  assertError(await srv.post('/v1/roles', { name: 'No scopes' }), 400, 'request_validation_failed', 'body.scopes');
  assertError(
    await srv.post('/v1/roles', { name: 'x', scopes: {}, colour: 'red' }),
    400,
    'request_validation_failed',
    'body.colour',
  );
  assertError(
    await srv.post('/v1/roles', { name: 'x', scopes: {}, description: 'd'.repeat(501) }),
    400,
    'request_validation_failed',
    'body.description',
  );
  assertError(await srv.post('/v1/roles', { name: 'OWNER', scopes: {} }), 409, 'conflict');
  assertError(await srv.post('/v1/roles', { name: 'A', scopes: {} }), 409, 'conflict');
  assertError(await srv.get('/v1/roles/usr_aaaaaaaaaaaaaaaaaaaa'), 404, 'not_found');
  assertError(await srv.get('/v1/roles/rol_aaaaaaaaaaaaaaaaaaaa'), 404, 'not_found');
  const some = (await srv.get('/v1/roles?order_by=created_at&sort=desc&limit=1')).body.data[0];
  assertError(await srv.post(`/v1/roles/${some.id}`, {}), 400, 'request_validation_failed', 'body');
});

test('roles: a caller cannot put scopes it lacks into a role; roles:* scopes are enforced', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const limited = await createKey(srv, { roles: ['read', 'write'], projects: ['read'] });
  const denied = assertError(
    await srv.post('/v1/roles', { name: 'Writer', scopes: { projects: ['read', 'write'] } }, { token: limited.secret }),
    403,
    'forbidden',
  );
  assert.deepEqual(denied.details.missing_scopes, ['projects:write']);
  const ok = await srv.post('/v1/roles', { name: 'Reader', scopes: { projects: ['read'] } }, { token: limited.secret });
  assert.equal(ok.status, 201);
  assertError(
    await srv.post(
      `/v1/roles/${ok.body.data.id}`,
      { scopes: { projects: ['read', 'delete'] } },
      { token: limited.secret },
    ),
    403,
    'forbidden',
  );
  assertError(await srv.delete(`/v1/roles/${ok.body.data.id}`, { token: limited.secret }), 403, 'forbidden');
  const none = await createKey(srv, { projects: ['read'] });
  assertError(await srv.get('/v1/roles', { token: none.secret }), 403, 'forbidden');
});
