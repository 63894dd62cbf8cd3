import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { purgeExpired } from '../../src/catalog/purge-scheduler.js';
import { TestServer, BOOTSTRAP_KEY } from '../helpers/server.js';
import { assertError, createKey, inviteAndSignIn, signIn } from './helpers.js';

const DAY = 24 * 3600 * 1000;

/** Bootstrap team T (the admin's first team) plus a second live team B of the admin, created by session. */
async function twoTeams(srv: TestServer) {
  const session = await signIn(srv);
  const teamT = srv.sluice.bootstrap!.team_id;
  const b = await srv.post('/v1/teams', { name: 'Backup' }, { token: session });
  assert.equal(b.status, 201, JSON.stringify(b.body));
  return { session, teamT, teamB: b.body.data.id as string };
}

test('a team scheduled for deletion stops its keys and sessions; only its Owners read and restore it', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { session, teamT, teamB } = await twoTeams(srv);
  const project = await srv.post('/v1/projects', { name: 'Kept' });
  assert.equal(project.status, 201);
  const member = await inviteAndSignIn(srv, teamT, 'member@example.com');

  assert.equal((await srv.delete(`/v1/teams/${teamT}`, { token: session })).status, 200);

  // Every use of the team's API keys answers 403 with a code that says why.
  for (const [method, path] of [
    ['GET', '/v1/projects'],
    ['POST', '/v1/projects'],
    ['GET', `/v1/teams/${teamT}`],
    ['GET', '/v1/keys'],
  ] as const) {
    const r = await srv.call(method, path, method === 'POST' ? { body: { name: 'x' } } : {});
    const err = assertError(r, 403, 'team_scheduled_for_deletion');
    assert.match(err.message, /scheduled for deletion/);
  }
  // A session acting in the team (X-Team-Id) is refused the same way, Owner or not.
  assertError(
    await srv.get('/v1/projects', { token: session, headers: { 'x-team-id': teamT } }),
    403,
    'team_scheduled_for_deletion',
  );
  assertError(
    await srv.get('/v1/projects', { token: member.token, headers: { 'x-team-id': teamT } }),
    403,
    'team_scheduled_for_deletion',
  );
  // Without X-Team-Id a session defaults to the user's first team that is not scheduled for deletion.
  const inB = await srv.get('/v1/projects', { token: session });
  assert.equal(inB.status, 200, JSON.stringify(inB.body));
  assert.deepEqual(inB.body.data, []);
  // The Owner still reads the team (from any of their teams) and sees it in the list of scheduled teams.
  for (const headers of [{}, { 'x-team-id': teamT }, { 'x-team-id': teamB }] as Record<string, string>[]) {
    const r = await srv.get(`/v1/teams/${teamT}`, { token: session, headers });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.data.deleted_at);
  }
  assert.deepEqual(
    (await srv.get('/v1/teams?deleted_at=not:null', { token: session })).body.data.map((x: any) => x.id),
    [teamT],
  );
  // A member who is not Owner does not see it at all.
  assertError(
    await srv.get(`/v1/teams/${teamT}`, { token: member.token, headers: { 'x-team-id': teamT } }),
    404,
    'not_found',
  );

  // Changing a scheduled team other than restoring it is a conflict.
  assertError(await srv.post(`/v1/teams/${teamT}`, { name: 'Renamed' }, { token: session }), 409, 'conflict');
  // Restoring brings every credential back.
  const restored = await srv.post(
    `/v1/teams/${teamT}`,
    { deleted_at: null },
    { token: session, headers: { 'x-team-id': teamT } },
  );
  assert.equal(restored.status, 200, JSON.stringify(restored.body));
  assert.equal(restored.body.data.deleted_at, null);
  const back = await srv.get('/v1/projects');
  assert.equal(back.status, 200);
  assert.deepEqual(
    back.body.data.map((p: any) => p.id),
    [project.body.data.id],
  );
  assert.equal((await srv.get('/v1/projects', { token: member.token, headers: { 'x-team-id': teamT } })).status, 200);
});

test('a team scheduled for deletion is removed after 30 days with everything beneath it', async (t) => {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));
  const srv = await TestServer.start({ clock });
  t.after(() => srv.stop());
  const s = srv.sluice.services;
  const { session, teamT, teamB } = await twoTeams(srv);
  const member = await inviteAndSignIn(srv, teamT, 'member@example.com');
  const extraKey = await createKey(srv, { projects: ['read'] });
  const project = (await srv.post('/v1/projects', { name: 'Doomed' })).body.data;
  const source = (await srv.post(`/v1/projects/${project.id}/sources`, { name: 'web' })).body.data;
  const ingestKey = (await srv.post(`/v1/projects/${project.id}/sources/${source.id}/ingest_keys`)).body.data;
  const collection = (
    await srv.post(`/v1/projects/${project.id}/collections`, { name: 'Events', source_id: source.id })
  ).body.data;
  const destroyed: string[] = [];
  s.collectionDestroyers.push(async (c) => void destroyed.push(c.id));

  assert.equal((await srv.delete(`/v1/teams/${teamT}`, { token: session })).status, 200);
  clock.advance(30 * DAY - 1);
  assert.deepEqual((await purgeExpired(s)).teams, [], 'kept until the 30 days are over');
  assert.ok(s.accounts.getTeam(teamT));
  clock.advance(1);
  const result = await purgeExpired(s);
  assert.deepEqual(result.teams, [teamT]);

  // The team, its projects and everything beneath, its keys, roles and memberships are gone.
  assert.equal(s.accounts.getTeam(teamT), undefined);
  assert.equal(s.projects.byId(project.id), undefined);
  assert.equal(s.sources.byId(source.id), undefined);
  assert.equal(s.ingestKeys.byId(ingestKey.id), undefined);
  assert.equal(s.collections.byId(collection.id), undefined);
  assert.deepEqual(destroyed, [collection.id]);
  assert.deepEqual(s.accounts.listKeys(teamT), []);
  assert.deepEqual(s.accounts.roles.list(teamT), []);
  assert.deepEqual(s.accounts.memberships.list(teamT), []);
  assertError(await srv.get('/v1/projects', { token: BOOTSTRAP_KEY }), 401, 'auth_invalid_credentials');
  assertError(await srv.get('/v1/projects', { token: extraKey.secret }), 401, 'auth_invalid_credentials');
  // Users remain (they may belong to other teams) and sign in again (30 days outlived the sessions):
  // the Owner keeps team B, the member has no team left.
  const owner = await signIn(srv);
  assertError(await srv.get(`/v1/teams/${teamT}`, { token: owner }), 404, 'not_found');
  assert.deepEqual((await srv.get('/v1/teams?deleted_at=not:null', { token: owner })).body.data, []);
  assert.deepEqual(
    (await srv.get('/v1/teams', { token: owner })).body.data.map((x: any) => x.id),
    [teamB],
  );
  const memberToken = await signIn(srv, 'member@example.com', 'member-password');
  const memberTeams = await srv.get(`/v1/users/${member.userId}/teams`, { token: memberToken });
  assert.equal(memberTeams.status, 200, JSON.stringify(memberTeams.body));
  assert.deepEqual(memberTeams.body.data, []);
});

test('a restricted team: a key may still delete itself, and team deletion checks the team it names', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { session, teamT, teamB } = await twoTeams(srv);
  const self = await createKey(srv, { keys: ['read'] });
  const other = await createKey(srv, { projects: ['read'] });
  await srv.sluice.services.accounts.updateTeam(teamT, () => ({ status: 'restricted' }));

  assertError(await srv.delete(`/v1/keys/${other.id}`), 403, 'team_restricted');
  assert.equal(
    (await srv.delete(`/v1/keys/${self.id}`, { token: self.secret })).status,
    200,
    'logout works while restricted',
  );
  assertError(await srv.get('/v1/keys', { token: self.secret }), 401, 'auth_invalid_credentials');

  // Acting in restricted T, the Owner may still delete active team B, but not T itself.
  assertError(
    await srv.delete(`/v1/teams/${teamT}`, { token: session, headers: { 'x-team-id': teamB } }),
    403,
    'team_restricted',
  );
  assert.equal(
    (await srv.delete(`/v1/teams/${teamB}`, { token: session, headers: { 'x-team-id': teamT } })).status,
    200,
  );
});
