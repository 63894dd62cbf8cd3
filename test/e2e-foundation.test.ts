import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from './helpers/server.js';

/**
 * The "Done when", step by step over HTTP: sign in, create a team with the session, then in
 * that team (X-Team-Id) a project, a source, an ingest key and a collection; page through every list
 * one item at a time, both ways; restart; everything reads back exactly as it was.
 */

type Call = (method: string, path: string, body?: unknown) => Promise<any>;

/** Walk a list with limit=1 forward via next_cursor, then back via prev_cursor; return the ids. */
async function walk(call: Call, path: string): Promise<{ forward: any[]; backward: any[] }> {
  const sep = path.includes('?') ? '&' : '?';
  const forward: any[] = [];
  let page = await call('GET', `${path}${sep}limit=1`);
  assert.equal(page.pagination.prev_cursor, null, `${path}: the first page has no prev_cursor`);
  for (;;) {
    assert.equal(page.data.length, 1, `${path}: one item per page`);
    forward.push(page.data[0]);
    if (!page.pagination.next_cursor) break;
    page = await call('GET', `${path}${sep}limit=1&after=${page.pagination.next_cursor}`);
  }
  const backward: any[] = [page.data[0]];
  while (page.pagination.prev_cursor) {
    page = await call('GET', `${path}${sep}limit=1&before=${page.pagination.prev_cursor}`);
    assert.equal(page.data.length, 1, `${path}: one item per page going back`);
    backward.unshift(page.data[0]);
  }
  return { forward, backward };
}

test('done when: session → team → project, source, ingest key, collection → paginate → restart → all intact', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());

  // 1. Sign in as the bootstrap admin and create a team with the session.
  const signIn = await srv.post(
    '/v1/sessions',
    { email: 'admin@localhost', password: 'admin-password' },
    { token: null },
  );
  assert.equal(signIn.status, 201, JSON.stringify(signIn.body));
  const token: string = signIn.body.data.token;
  const teamRes = await srv.post('/v1/teams', { name: 'Acme' }, { token });
  assert.equal(teamRes.status, 201, JSON.stringify(teamRes.body));
  const team = teamRes.body.data;
  assert.equal(team.name, 'Acme');

  // Every further call acts in the new team through X-Team-Id.
  const call: Call = async (method, path, body) => {
    const r = await srv.call(method, path, {
      token,
      headers: { 'x-team-id': team.id },
      ...(body !== undefined ? { body } : {}),
    });
    assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${JSON.stringify(r.body.error)}`);
    assert.equal(r.body.error, null);
    assert.equal(r.body.status, r.status);
    return r.body;
  };

  // 2. Two of each, so every list has more than one page at limit=1.
  const projects = [
    (await call('POST', '/v1/projects', { name: 'Web shop' })).data,
    (await call('POST', '/v1/projects', { name: 'Backend' })).data,
  ];
  for (const p of projects) assert.equal(p.team_id, team.id, 'created in the X-Team-Id team');
  const P = projects[0].id;
  const sources = [
    (await call('POST', `/v1/projects/${P}/sources`, { name: 'browser' })).data,
    (await call('POST', `/v1/projects/${P}/sources`, { name: 'api' })).data,
  ];
  const S = sources[0].id;
  const ingestKeys = [
    (await call('POST', `/v1/projects/${P}/sources/${S}/ingest_keys`)).data,
    (await call('POST', `/v1/projects/${P}/sources/${S}/ingest_keys`)).data,
  ];
  for (const k of ingestKeys) {
    assert.match(k.key, /^pik_[0-9a-z]{32}$/, 'the full key is returned at creation');
    assert.equal(k.url, `${srv.url}/ingest?key=${k.key}`, 'the url is ready to use on this server');
  }
  const collections = [
    (await call('POST', `/v1/projects/${P}/collections`, { name: 'Page Views', source_id: S })).data,
    (await call('POST', `/v1/projects/${P}/collections`, { name: 'Clicks', source_id: S, slug: 'clicks' })).data,
  ];
  assert.equal(collections[0].slug, 'page-views');
  // Two API keys of the new team, created by the session (X-Team-Id picks the team).
  for (const name of ['deploy', 'ci'])
    assert.equal((await call('POST', '/v1/keys', { name, scopes: { projects: ['read'] } })).data.team_id, team.id);

  // The team itself is not visible to the bootstrap API key (another team), only to the session.
  assert.equal((await srv.get(`/v1/teams/${team.id}`)).status, 404);

  // 3. Lists, one item per page, forward and back; each with its spec default order.
  const lists = {
    teams: '/v1/teams',
    projects: '/v1/projects',
    sources: `/v1/projects/${P}/sources`,
    ingestKeys: `/v1/projects/${P}/sources/${S}/ingest_keys`,
    collections: `/v1/projects/${P}/collections`,
    keys: '/v1/keys',
  };
  const ids = (xs: any[]) => xs.map((x) => x.id);
  const before: Record<string, any[]> = {};
  for (const [name, path] of Object.entries(lists)) {
    const { forward, backward } = await walk(call, path);
    assert.deepEqual(ids(backward), ids(forward), `${name}: prev_cursor walks back over the same items`);
    const whole = (await call('GET', `${path}?limit=200`)).data;
    assert.deepEqual(ids(forward), ids(whole), `${name}: pages add up to the whole list`);
    before[name] = whole;
  }
  // Spec default orders: projects name asc (neither sort nor order_by), sources and collections
  // name asc, ingest keys created_at desc, teams name desc.
  assert.deepEqual(
    before.projects!.map((p) => p.name),
    ['Backend', 'Web shop'],
  );
  assert.deepEqual(
    before.sources!.map((s) => s.name),
    ['api', 'browser'],
  );
  assert.deepEqual(
    before.collections!.map((c) => c.name),
    ['Clicks', 'Page Views'],
  );
  assert.deepEqual(ids(before.ingestKeys!), [ingestKeys[1].id, ingestKeys[0].id]);
  assert.deepEqual(
    before.teams!.map((x) => x.name),
    ['Team', 'Acme'],
  );
  const single = {
    team: (await call('GET', `/v1/teams/${team.id}`)).data,
    project: (await call('GET', `/v1/projects/${P}`)).data,
    source: (await call('GET', `/v1/projects/${P}/sources/${S}`)).data,
    ingestKey: (await call('GET', `/v1/projects/${P}/sources/${S}/ingest_keys/${ingestKeys[0].id}`)).data,
    collection: (await call('GET', `/v1/projects/${P}/collections/${collections[0].id}`)).data,
  };

  // 4. Restart on the same data dir (a new port): the session and everything else survive.
  const oldUrl = srv.url;
  await srv.restart();
  assert.notEqual(srv.url, oldUrl, 'a new port, so port-derived fields change');
  // Fields that carry the server's own address legitimately follow the new port.
  const portless = (x: any): any => {
    if (Array.isArray(x)) return x.map(portless);
    if (x && typeof x === 'object') {
      return Object.fromEntries(
        Object.entries(x).map(([k, v]) => [
          k,
          typeof v === 'string' ? v.replace(oldUrl, '<base>').replace(srv.url, '<base>') : portless(v),
        ]),
      );
    }
    return x;
  };
  for (const [name, path] of Object.entries(lists)) {
    const after = (await call('GET', `${path}?limit=200`)).data;
    assert.deepEqual(portless(after), portless(before[name]), `${name}: identical after restart`);
    const { forward } = await walk(call, path);
    assert.deepEqual(ids(forward), ids(before[name]!), `${name}: pagination identical after restart`);
  }
  const again = {
    team: (await call('GET', `/v1/teams/${team.id}`)).data,
    project: (await call('GET', `/v1/projects/${P}`)).data,
    source: (await call('GET', `/v1/projects/${P}/sources/${S}`)).data,
    ingestKey: (await call('GET', `/v1/projects/${P}/sources/${S}/ingest_keys/${ingestKeys[0].id}`)).data,
    collection: (await call('GET', `/v1/projects/${P}/collections/${collections[0].id}`)).data,
  };
  assert.deepEqual(portless(again), portless(single));
  assert.equal(again.project.server_endpoint, srv.url);
  assert.equal(again.ingestKey.url.startsWith(`${srv.url}/ingest?key=`), true);
});
