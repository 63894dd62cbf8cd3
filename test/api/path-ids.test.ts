import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { idPrefix, isId, MAX_PATH_ID_LENGTH } from '../../src/ids.js';

test('isId: the prefix of its kind and 20 lowercase letters or digits, nothing else', () => {
  const cases: [string, boolean][] = [
    [`prj_${'a1'.repeat(10)}`, true],
    [`prj_${'a'.repeat(19)}`, false],
    [`prj_${'a'.repeat(21)}`, false],
    [`prj_${'A'.repeat(20)}`, false],
    [`prj_${'a'.repeat(19)}-`, false],
    [`src_${'a'.repeat(20)}`, false],
    ['a'.repeat(24), false],
    ['prj_', false],
    ['', false],
  ];
  for (const [value, expected] of cases) assert.equal(isId('project', value), expected, value);
  assert.equal(isId('ingestKey', `ik_${'0'.repeat(20)}`), true);
  assert.equal(isId('team', `team_${'0'.repeat(20)}`), true);
});

test('a path id that names nothing answers 404 not_found, whatever its shape; past 256 characters 400', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const project = (await srv.post('/v1/projects', { name: 'ids' })).body.data.id as string;
  const source = (await srv.post(`/v1/projects/${project}/sources`, { name: 'web' })).body.data.id as string;
  const collection = (await srv.post(`/v1/projects/${project}/collections`, { name: 'events', source_id: source })).body
    .data.id as string;
  assert.ok(isId('collection', collection));

  // Each route, with the kind its last path id takes and the label messages name it by.
  const routes: { path: (id: string) => string; kind: keyof typeof idPrefix; label: string; settle?: true }[] = [
    { path: (id) => `/v1/projects/${id}`, kind: 'project', label: 'Project' },
    { path: (id) => `/v1/projects/${id}/sources`, kind: 'project', label: 'Project' },
    { path: (id) => `/v1/projects/${project}/sources/${id}`, kind: 'source', label: 'Source' },
    { path: (id) => `/v1/projects/${project}/collections/${id}`, kind: 'collection', label: 'Collection' },
    {
      path: (id) => `/v1/projects/${project}/sources/${source}/ingest_keys/${id}`,
      kind: 'ingestKey',
      label: 'Ingest key',
    },
    {
      path: (id) => `/v1/projects/${project}/collections/${collection}/schemas/${id}`,
      kind: 'schemaVersion',
      label: 'Schema version',
      settle: true,
    },
    { path: (id) => `/v1/keys/${id}`, kind: 'key', label: 'API key' },
    { path: (id) => `/v1/roles/${id}`, kind: 'role', label: 'Role' },
    { path: (id) => `/v1/users/${id}`, kind: 'user', label: 'User' },
  ];
  for (const r of routes) {
    const prefix = idPrefix[r.kind];
    const call = (path: string) => (r.settle ? srv.post(path, { state: 'settled' }) : srv.get(path));
    const shapes = [
      `${prefix}${'a'.repeat(5)}`, // right prefix, too short
      `${prefix}${'a'.repeat(40)}`, // right prefix, too long
      `${prefix}${'A'.repeat(20)}`, // right prefix, not lowercase
      `${r.kind === 'source' ? 'col_' : 'src_'}${'a'.repeat(20)}`, // another kind's id
      'nope', // no prefix
      `${prefix}a%2Fb`, // an encoded slash: one segment
      `${prefix}${'z'.repeat(20)}`, // well formed, absent
    ];
    for (const id of shapes) {
      const res = await call(r.path(id));
      assert.equal(res.status, 404, `${r.path(id)}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error?.code, 'not_found');
      assert.equal(res.body.data, null);
    }
    // The message names the kind and the id as sent (decoded).
    const malformed = await call(r.path(`${prefix}bad`));
    assert.match(malformed.body.error!.message, new RegExp(`^${r.label} ${prefix}bad\\b.*not found`));
    assert.match((await call(r.path(`${prefix}a%2Fb`))).body.error!.message, new RegExp(`${prefix}a/b`));

    assert.equal(
      (await call(r.path(`${prefix}${'a'.repeat(MAX_PATH_ID_LENGTH - prefix.length)}`))).status,
      404,
      'exactly 256 characters is looked up',
    );
    const long = await call(r.path(`${prefix}${'a'.repeat(MAX_PATH_ID_LENGTH)}`));
    assert.equal(long.status, 400, r.path('…'));
    assert.equal(long.body.error?.code, 'request_validation_failed');
    assert.match(long.body.error!.details[0].field, /^params\./);
    assert.match(long.body.error!.details[0].message, /at most 256 characters/);
  }
});

test('a malformed path id is refused like an absent one: scope and body are checked first', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const absent = `prj_${'z'.repeat(20)}`;
  for (const id of ['prj_bad', absent]) {
    const badBody = await srv.post(`/v1/projects/${id}`, { name: 42 });
    assert.equal(badBody.status, 400, id);
    assert.equal(badBody.body.error?.details[0].field, 'body.name');
    const goodBody = await srv.post(`/v1/projects/${id}`, { name: 'x' });
    assert.equal(goodBody.status, 404, id);
    assert.equal(goodBody.body.error?.code, 'not_found');
  }
  const s = srv.sluice.services;
  const team = s.accounts.teamIdsOf((await s.accounts.getUserByEmail('admin@localhost'))!.id)[0]!;
  const { secret } = await s.accounts.createKey({
    teamId: team,
    name: 'no projects',
    scopes: { keys: ['read'] },
    updatedBy: null,
  });
  for (const id of ['prj_bad', absent])
    assert.equal((await srv.get(`/v1/projects/${id}`, { token: secret })).status, 403, id);
});

test('OpenAPI: path ids are documented as strings of at most 256 characters, without our keyword', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const doc = (await srv.get('/v1/openapi.json', { token: null })).body.data;
  const param = doc.paths['/v1/projects/{project_id}'].get.parameters.find(
    (p: { name: string }) => p.name === 'project_id',
  );
  assert.equal(param.schema.type, 'string');
  assert.equal(param.schema.maxLength, 256);
  assert.equal(param.schema.pattern, undefined);
  assert.equal(param.schema.pathId, undefined);
  assert.match(param.schema.description, /prj_/);
});
