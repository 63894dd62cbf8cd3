import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createKey, signIn } from './helpers.js';

test('keys, teams, users, roles, memberships and sessions survive a restart', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const teamId = srv.sluice.bootstrap!.team_id;
  const admin = await signIn(srv);
  const key = await createKey(srv, { projects: ['read'] }, { name: 'durable key' });
  await srv.get('/v1/projects', { token: key.secret });
  const team = (await srv.post('/v1/teams', { name: 'Durable team' }, { token: admin })).body.data;
  const role = (await srv.post('/v1/roles', { name: 'Durable role', scopes: { metrics: ['read'] } })).body.data;
  const member = (
    await srv.post(`/v1/teams/${teamId}/users`, { email: 'durable@example.com', role_id: role.id, name: 'Dur' })
  ).body.data;
  // Let the asynchronous last_used_at write land before stopping.
  await new Promise((r) => setTimeout(r, 100));

  await srv.restart();

  const k = await srv.get(`/v1/keys/${key.id}`);
  assert.equal(k.status, 200);
  assert.equal(k.body.data.name, 'durable key');
  assert.ok(k.body.data.last_used_at, 'last_used_at persisted');
  assert.equal(
    (await srv.get('/v1/projects', { token: key.secret })).status,
    200,
    'the key secret still authenticates',
  );
  assert.equal(
    (await srv.get(`/v1/teams/${team.id}`, { token: admin })).body.data.name,
    'Durable team',
    'the session survived too',
  );
  assert.equal((await srv.get(`/v1/roles/${role.id}`)).body.data.name, 'Durable role');
  const m = await srv.get(`/v1/teams/${teamId}/users/${member.id}`);
  assert.equal(m.body.data.role_name, 'Durable role');
  assert.equal(m.body.data.name, 'Dur');
  assert.ok((await signIn(srv)).startsWith('sls_'), 'the password hash survived');
  assert.equal(srv.sluice.bootstrap, null, 'no second bootstrap');
});
