import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { otherTeamToken } from '../catalog/helpers.js';

/** docs/architecture.md, "Fixed contracts": another team's resources answer 404, never their data — on every route that names one. */
test("every route naming another team's resource answers 404 not_found", async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const data = async (r: Promise<any>) => (await r).body.data;
  const P = (await data(srv.post('/v1/projects', { name: 'Mine' }))).id;
  const S = (await data(srv.post(`/v1/projects/${P}/sources`, { name: 'web' }))).id;
  const IK = (await data(srv.post(`/v1/projects/${P}/sources/${S}/ingest_keys`))).id;
  const C = (await data(srv.post(`/v1/projects/${P}/collections`, { name: 'Events', source_id: S }))).id;
  const K = (await data(srv.get('/v1/keys')))[0].id;
  const R = (await data(srv.get('/v1/roles')))[0].id;
  const U = (await data(srv.get('/v1/users')))[0].id;
  const T = srv.sluice.bootstrap!.team_id;
  const other = await otherTeamToken(srv);

  const cases: [string, string, unknown?][] = [
    ['GET', `/v1/keys/${K}`],
    ['POST', `/v1/keys/${K}`, { name: 'mine now' }],
    ['DELETE', `/v1/keys/${K}`],
    ['GET', `/v1/roles/${R}`],
    ['POST', `/v1/roles/${R}`, { name: 'x' }],
    ['DELETE', `/v1/roles/${R}`],
    ['GET', `/v1/users/${U}`],
    ['GET', `/v1/users/${U}/teams`],
    ['GET', `/v1/teams/${T}`],
    ['GET', `/v1/teams/${T}/billing`],
    ['GET', `/v1/teams/${T}/users`],
    ['GET', `/v1/teams/${T}/users/${U}`],
    ['POST', `/v1/teams/${T}/users`, { email: 'x@example.com' }],
    ['POST', `/v1/teams/${T}/users/${U}`, { role_id: R }],
    ['DELETE', `/v1/teams/${T}/users/${U}`],
    ['GET', `/v1/projects/${P}`],
    ['POST', `/v1/projects/${P}`, { name: 'x' }],
    ['DELETE', `/v1/projects/${P}`],
    ['DELETE', `/v1/projects/${P}/force`],
    ['GET', `/v1/projects/${P}/sources`],
    ['GET', `/v1/projects/${P}/sources/${S}`],
    ['POST', `/v1/projects/${P}/sources`, { name: 'x' }],
    ['POST', `/v1/projects/${P}/sources/${S}`, { name: 'x' }],
    ['DELETE', `/v1/projects/${P}/sources/${S}`],
    ['DELETE', `/v1/projects/${P}/sources/${S}/force`],
    ['GET', `/v1/projects/${P}/sources/${S}/ingest_keys`],
    ['POST', `/v1/projects/${P}/sources/${S}/ingest_keys`],
    ['GET', `/v1/projects/${P}/sources/${S}/ingest_keys/${IK}`],
    ['DELETE', `/v1/projects/${P}/sources/${S}/ingest_keys/${IK}`],
    ['GET', `/v1/projects/${P}/collections`],
    ['POST', `/v1/projects/${P}/collections`, { name: 'x', source_id: S }],
    ['GET', `/v1/projects/${P}/collections/${C}`],
    ['POST', `/v1/projects/${P}/collections/${C}`, { name: 'x' }],
    ['DELETE', `/v1/projects/${P}/collections/${C}`],
    ['DELETE', `/v1/projects/${P}/collections/${C}/force`],
  ];
  for (const [method, path, body] of cases) {
    const r = await srv.call(method, path, { token: other, ...(body !== undefined ? { body } : {}) });
    assert.equal(r.status, 404, `${method} ${path}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error?.code, 'not_found', `${method} ${path}`);
    assert.equal(r.body.data, null);
  }
  // Nothing of ours changed meanwhile.
  assert.equal((await srv.get(`/v1/projects/${P}/collections/${C}`)).body.data.name, 'Events');
  assert.equal((await srv.get(`/v1/keys/${K}`)).status, 200);
  assert.equal((await srv.get(`/v1/projects/${P}/sources/${S}/ingest_keys/${IK}`)).status, 200);
});
