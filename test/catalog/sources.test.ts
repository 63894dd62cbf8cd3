import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createProject, createSource, fails, ok, otherTeamToken, scopedToken } from './helpers.js';

const SOURCE_FIELDS = [
  'object',
  'id',
  'project_id',
  'project_name',
  'name',
  'storage_gb',
  'schema_count',
  'collections_count',
  'deleted_at',
  'created_at',
  'updated_at',
];

test('sources: create, get, list, update, delete, force, with every spec field', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const project = await createProject(srv, 'Shop');
  const base = `/v1/projects/${project.id}/sources`;

  const created = ok(await srv.post(base, { name: 'web', project_id: 'prj_ignored' }), 201);
  assert.deepEqual(Object.keys(created).sort(), [...SOURCE_FIELDS].sort());
  assert.match(created.id, /^src_[0-9a-z]{20}$/);
  assert.equal(created.object, 'source');
  assert.equal(created.project_id, project.id, 'body project_id is ignored: the path supplies it');
  assert.equal(created.project_name, 'Shop');
  assert.equal(created.collections_count, 0);
  assert.equal(created.storage_gb, 0);
  assert.equal(created.deleted_at, null);

  assert.deepEqual(ok(await srv.get(`${base}/${created.id}`)), created);

  const collection = ok(
    await srv.post(`/v1/projects/${project.id}/collections`, { name: 'Events', source_id: created.id }),
    201,
  );
  assert.equal(ok(await srv.get(`${base}/${created.id}`)).collections_count, 1);

  const renamed = ok(await srv.post(`${base}/${created.id}`, { name: 'website' }));
  assert.equal(renamed.name, 'website');
  assert.ok(renamed.updated_at > created.updated_at);

  const list = await srv.get(base);
  assert.deepEqual(
    ok(list).map((x: any) => x.name),
    ['website'],
  );
  assert.deepEqual(list.body.pagination, { next_cursor: null, prev_cursor: null, limit: 25 });

  const scheduled = ok(await srv.delete(`${base}/${created.id}`));
  assert.equal(scheduled.id, created.id);
  assert.ok(scheduled.deleted_at);
  assert.deepEqual(ok(await srv.get(base)), [], 'a scheduled source is hidden at once');
  assert.deepEqual(
    ok(await srv.get(`${base}?deleted_at=not:null`)).map((x: any) => x.id),
    [created.id],
  );
  assert.equal(ok(await srv.get(`${base}/${created.id}`)).deleted_at, scheduled.deleted_at, 'still readable by id');
  // Deleting again is idempotent and answers the same scheduled source.
  assert.equal(ok(await srv.delete(`${base}/${created.id}`)).deleted_at, scheduled.deleted_at);

  const restored = ok(await srv.post(`${base}/${created.id}`, { deleted_at: null }));
  assert.equal(restored.deleted_at, null);
  assert.equal(ok(await srv.get(base)).length, 1);

  const forced = await srv.delete(`${base}/${created.id}/force`);
  assert.equal(ok(forced), null);
  fails(await srv.get(`${base}/${created.id}`), 404, 'not_found');
  fails(await srv.get(`/v1/projects/${project.id}/collections/${collection.id}`), 404, 'not_found');
  assert.equal(srv.sluice.services.collections.byId(collection.id), undefined, 'force delete destroyed the collection');
});

test('sources: name length edges, unknown fields, bad ids and body types', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const project = await createProject(srv);
  const base = `/v1/projects/${project.id}/sources`;

  const cases: { name: string; body: unknown; status: number; field?: string }[] = [
    { name: 'name of 0 characters', body: { name: '' }, status: 400, field: 'body.name' },
    { name: 'name of 1 character', body: { name: 'a' }, status: 201 },
    { name: 'name of 128 characters', body: { name: 'n'.repeat(128) }, status: 201 },
    { name: 'name of 129 characters', body: { name: 'n'.repeat(129) }, status: 400, field: 'body.name' },
    { name: 'missing name', body: {}, status: 400, field: 'body.name' },
    { name: 'name not a string', body: { name: 5 }, status: 400, field: 'body.name' },
    { name: 'unknown field', body: { name: 'ok', colour: 'red' }, status: 400, field: 'body.colour' },
    { name: 'project_id not a string', body: { name: 'ok2', project_id: 7 }, status: 400, field: 'body.project_id' },
  ];
  for (const c of cases) {
    const res = await srv.post(base, c.body);
    if (c.status === 201) ok(res, 201);
    else fails(res, c.status, 'request_validation_failed', c.field);
  }

  const src = ok(await srv.post(base, { name: 'edge' }), 201);
  const updateCases: { body: unknown; status: number; field?: string }[] = [
    { body: { name: '' }, status: 400, field: 'body.name' },
    { body: { name: 'u' }, status: 200 },
    { body: { name: 'u'.repeat(128) }, status: 200 },
    { body: { name: 'u'.repeat(129) }, status: 400, field: 'body.name' },
    { body: { deleted_at: '2026-01-01T00:00:00Z' }, status: 400, field: 'body.deleted_at' },
    { body: { slug: 'x' }, status: 400, field: 'body.slug' },
  ];
  for (const c of updateCases) {
    const res = await srv.post(`${base}/${src.id}`, c.body);
    if (c.status === 200) ok(res);
    else fails(res, c.status, 'request_validation_failed', c.field);
  }

  fails(await srv.get('/v1/projects/prj_bad/sources'), 404, 'not_found');
  fails(await srv.get(`${base}/col_${'a'.repeat(20)}`), 404, 'not_found');
  fails(await srv.get(`${base}/src_${'a'.repeat(19)}`), 404, 'not_found');
  fails(await srv.get(`${base}/src_${'a'.repeat(257)}`), 400, 'request_validation_failed', 'params.source_id');
  fails(await srv.get(`${base}/src_${'a'.repeat(20)}`), 404, 'not_found');
  fails(await srv.get(`/v1/projects/prj_${'b'.repeat(20)}/sources`), 404, 'not_found');
  fails(await srv.get(`${base}?order_by=colour`), 400, 'request_validation_failed', 'query.order_by');
  fails(await srv.get(`${base}?limit=0`), 400, 'request_validation_failed', 'query.limit');
  fails(await srv.get(`${base}?limit=201`), 400, 'request_validation_failed', 'query.limit');
  fails(await srv.get(`${base}?deleted_at=yesterday`), 400, 'request_validation_failed', 'query.deleted_at');
  // Impossible calendar dates are refused, not rolled over into the next month.
  fails(await srv.get(`${base}?deleted_at=gt:2026-02-30`), 400, 'request_validation_failed', 'query.deleted_at');
  fails(
    await srv.get(`${base}?deleted_at=lt:2026-02-31T00:00:00Z`),
    400,
    'request_validation_failed',
    'query.deleted_at',
  );
  assert.equal((await srv.get(`${base}?deleted_at=gt:2026-02-28`)).status, 200);
  fails(await srv.get(`${base}?colour=red`), 400, 'request_validation_failed', 'query.colour');
  fails(await srv.get(`${base}?project_id=nope`), 400, 'request_validation_failed', 'query.project_id');
  assert.equal(ok(await srv.get(`${base}?project_id=${project.id}`)).length, 3);
  assert.deepEqual(
    ok(await srv.get(`${base}?project_id=prj_${'c'.repeat(20)}`)),
    [],
    'another project_id matches nothing',
  );
});

test('sources: names are unique among live sources; restoring into a taken name is a conflict', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const project = await createProject(srv);
  const other = await createProject(srv, 'Other project');
  const base = `/v1/projects/${project.id}/sources`;

  const web = await createSource(srv, project.id, 'web');
  fails(await srv.post(base, { name: 'web' }), 409, 'conflict', 'body.name');
  await createSource(srv, other.id, 'web'); // unique within a project only
  const app = await createSource(srv, project.id, 'app');
  fails(await srv.post(`${base}/${app.id}`, { name: 'web' }), 409, 'conflict');
  ok(await srv.post(`${base}/${app.id}`, { name: 'app' }), 200); // its own name is not a clash

  ok(await srv.delete(`${base}/${web.id}`));
  fails(await srv.post(`${base}/${web.id}`, { name: 'renamed' }), 409, 'conflict'); // must restore first
  const web2 = await createSource(srv, project.id, 'web'); // the scheduled source's name is free
  fails(await srv.post(`${base}/${web.id}`, { deleted_at: null }), 409, 'conflict');
  const restored = ok(await srv.post(`${base}/${web.id}`, { deleted_at: null, name: 'web-old' }));
  assert.equal(restored.name, 'web-old');
  assert.equal(restored.deleted_at, null);
  assert.deepEqual(
    ok(await srv.get(base)).map((x: any) => x.id),
    [app.id, web2.id, web.id],
  );
});

test('sources: another team, missing scopes and a scheduled project answer 404 / 403', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const project = await createProject(srv);
  const src = await createSource(srv, project.id, 'web');
  const base = `/v1/projects/${project.id}/sources`;
  const token = await otherTeamToken(srv);

  fails(await srv.get(base, { token }), 404, 'not_found');
  fails(await srv.get(`${base}/${src.id}`, { token }), 404, 'not_found');
  fails(await srv.post(base, { name: 'x' }, { token }), 404, 'not_found');
  fails(await srv.post(`${base}/${src.id}`, { name: 'x' }, { token }), 404, 'not_found');
  fails(await srv.delete(`${base}/${src.id}`, { token }), 404, 'not_found');
  fails(await srv.delete(`${base}/${src.id}/force`, { token }), 404, 'not_found');
  // A source id from another project of the same team is not found under this one.
  const otherProject = await createProject(srv, 'P2');
  fails(await srv.get(`/v1/projects/${otherProject.id}/sources/${src.id}`), 404, 'not_found');

  const readOnly = await scopedToken(srv, { sources: ['read'] });
  ok(await srv.get(base, { token: readOnly }));
  fails(await srv.post(base, { name: 'x' }, { token: readOnly }), 403, 'forbidden');
  fails(await srv.delete(`${base}/${src.id}`, { token: readOnly }), 403, 'forbidden');
  fails(await srv.get(base, { token: null }), 401, 'auth_missing_credentials');

  ok(await srv.delete(`/v1/projects/${project.id}`));
  fails(await srv.get(base), 404, 'not_found');
});

test('sources: pagination forward and back across inserts and deletes between pages', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const project = await createProject(srv);
  const base = `/v1/projects/${project.id}/sources`;
  const ids: Record<string, string> = {};
  for (const name of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) ids[name] = (await createSource(srv, project.id, name)).id;
  const names = (res: any) => ok(res).map((x: any) => x.name);

  const p1 = await srv.get(`${base}?limit=3`);
  assert.deepEqual(names(p1), ['a', 'b', 'c']);
  assert.equal(p1.body.pagination!.prev_cursor, null);
  // Between pages: one item lands before the cursor, one is deleted ahead of it, one lands at the end.
  await createSource(srv, project.id, 'bb');
  ok(await srv.delete(`${base}/${ids.e}`));
  await createSource(srv, project.id, 'h');

  const p2 = await srv.get(`${base}?limit=3&after=${p1.body.pagination!.next_cursor}`);
  assert.deepEqual(names(p2), ['d', 'f', 'g']);
  const p3 = await srv.get(`${base}?limit=3&after=${p2.body.pagination!.next_cursor}`);
  assert.deepEqual(names(p3), ['h']);
  assert.equal(p3.body.pagination!.next_cursor, null);
  const forward = [...names(p1), ...names(p2), ...names(p3)];
  assert.equal(new Set(forward).size, forward.length, 'no duplicates');
  for (const n of ['a', 'b', 'c', 'd', 'f', 'g', 'h']) assert.ok(forward.includes(n), `no skip: ${n}`);

  // Walk back from the last page; a deletion between back pages must not skip anything either.
  const b1 = await srv.get(`${base}?limit=3&before=${p3.body.pagination!.prev_cursor}`);
  assert.deepEqual(names(b1), ['d', 'f', 'g']);
  ok(await srv.delete(`${base}/${ids.a}`));
  const b2 = await srv.get(`${base}?limit=3&before=${b1.body.pagination!.prev_cursor}`);
  assert.deepEqual(names(b2), ['b', 'bb', 'c']);
  assert.equal(b2.body.pagination!.prev_cursor, null, 'nothing before b once a is deleted');

  // Descending by created_at, and cursors are bound to their ordering.
  const desc = await srv.get(`${base}?limit=2&order_by=created_at&sort=desc`);
  assert.deepEqual(names(desc), ['h', 'bb']);
  fails(await srv.get(`${base}?limit=2&after=${desc.body.pagination!.next_cursor}`), 400, 'request_invalid_cursor');
  fails(await srv.get(`${base}?after=x&before=y`), 400, 'request_validation_failed');
  const updated = await srv.get(`${base}?order_by=updated_at&sort=asc&limit=200`);
  assert.equal(ok(updated).length, 7);
});
