import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createProject, createSource, fails, ok, otherTeamToken, scopedToken } from './helpers.js';

const KEY_FIELDS = [
  'object',
  'id',
  'source_id',
  'source_name',
  'url',
  'custom_urls',
  'key',
  'status',
  'created_at',
  'last_used_at',
];

test('ingest keys: create returns the key once; reads mask it; delete is immediate', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PUBLIC_URL: 'https://ingest.example.com/' } });
  t.after(() => srv.stop());
  const s = srv.sluice.services;
  const project = await createProject(srv);
  const source = await createSource(srv, project.id, 'web');
  const base = `/v1/projects/${project.id}/sources/${source.id}/ingest_keys`;

  const created = ok(await srv.post(base), 201); // an empty body is allowed
  assert.deepEqual(Object.keys(created).sort(), [...KEY_FIELDS].sort());
  assert.match(created.id, /^ik_[0-9a-z]{20}$/);
  assert.match(created.key, /^pik_[0-9a-z]{32}$/);
  assert.equal(created.url, `https://ingest.example.com/ingest?key=${created.key}`);
  assert.deepEqual(created.custom_urls, []);
  assert.equal(created.status, 'active');
  assert.equal(created.source_id, source.id);
  assert.equal(created.source_name, 'web');
  assert.equal(created.last_used_at, null);

  // The ingest front's lookup finds it by secret, and only by the exact secret.
  assert.equal(s.ingestKeys.findBySecret(created.key)?.id, created.id);
  assert.equal(
    s.ingestKeys.findBySecret(created.key.slice(0, -1) + (created.key.endsWith('a') ? 'b' : 'a')),
    undefined,
  );
  const stored = s.ingestKeys.byId(created.id)!;
  assert.ok(!JSON.stringify(stored).includes(created.key), 'the secret itself is never stored');

  const masked = `pik_…${created.key.slice(-4)}`;
  const read = ok(await srv.get(`${base}/${created.id}`));
  assert.equal(read.key, masked);
  assert.equal(read.url, `https://ingest.example.com/ingest?key=${masked}`);
  assert.deepEqual({ ...read, key: created.key, url: created.url }, created);

  s.activity.touch(created.id);
  assert.ok(ok(await srv.get(`${base}/${created.id}`)).last_used_at, 'last_used_at reads the activity tracker');

  const second = ok(await srv.post(base, { source_id: 'src_ignored' }), 201);
  assert.equal(second.source_id, source.id);
  const list = ok(await srv.get(base));
  assert.deepEqual(new Set(list.map((k: any) => k.id)), new Set([created.id, second.id]));
  assert.ok(
    list.every((k: any) => k.key.startsWith('pik_…')),
    'lists never show a full key',
  );

  assert.equal(ok(await srv.delete(`${base}/${created.id}`)), null);
  assert.equal(s.ingestKeys.findBySecret(created.key), undefined, 'deleted keys stop authenticating at once');
  fails(await srv.get(`${base}/${created.id}`), 404, 'not_found');
  fails(await srv.delete(`${base}/${created.id}`), 404, 'not_found');
  assert.deepEqual(
    ok(await srv.get(base)).map((k: any) => k.id),
    [second.id],
  );
});

test('ingest keys: list order, filters, validation, scopes and ownership', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const project = await createProject(srv);
  const source = await createSource(srv, project.id, 'web');
  const otherSource = await createSource(srv, project.id, 'app');
  const base = `/v1/projects/${project.id}/sources/${source.id}/ingest_keys`;
  const keys: string[] = [];
  for (let i = 0; i < 5; i++) keys.push(ok(await srv.post(base, {}), 201).id);
  ok(await srv.post(`/v1/projects/${project.id}/sources/${otherSource.id}/ingest_keys`), 201);

  // Default: newest first, by created_at; keys of other sources are not listed.
  const all = ok(await srv.get(`${base}?limit=200`)).map((k: any) => k.id);
  assert.equal(all.length, 5);
  const p1 = await srv.get(`${base}?limit=2`);
  const p2 = await srv.get(`${base}?limit=2&after=${p1.body.pagination!.next_cursor}`);
  const p3 = await srv.get(`${base}?limit=2&after=${p2.body.pagination!.next_cursor}`);
  const walked = [...ok(p1), ...ok(p2), ...ok(p3)].map((k: any) => k.id);
  assert.deepEqual(walked, all);
  assert.equal(p3.body.pagination!.next_cursor, null);
  assert.equal(ok(await srv.get(`${base}?order_by=status&sort=asc`)).length, 5);
  assert.equal(ok(await srv.get(`${base}?status=active`)).length, 5);
  assert.equal(ok(await srv.get(`${base}?status=revoked`)).length, 0);
  assert.equal(ok(await srv.get(`${base}?status=in:revoked,disabled`)).length, 0);
  assert.equal(ok(await srv.get(`${base}?source_id=${source.id}&project_id=${project.id}`)).length, 5);
  assert.equal(ok(await srv.get(`${base}?source_id=${otherSource.id}`)).length, 0);
  fails(await srv.get(`${base}?status=lost`), 400, 'request_validation_failed', 'query.status');
  fails(await srv.get(`${base}?order_by=name`), 400, 'request_validation_failed', 'query.order_by');
  fails(await srv.get(`${base}?source_id=prj_${'a'.repeat(20)}`), 400, 'request_validation_failed', 'query.source_id');
  fails(await srv.post(base, { name: 'x' }), 400, 'request_validation_failed', 'body.name');
  fails(await srv.post(base, { source_id: 1 }), 400, 'request_validation_failed', 'body.source_id');
  fails(await srv.get(`${base}/key_${'a'.repeat(20)}`), 404, 'not_found');
  fails(await srv.get(`${base}/ik_${'a'.repeat(20)}`), 404, 'not_found');
  // A key is reachable only under its own source.
  fails(await srv.get(`/v1/projects/${project.id}/sources/${otherSource.id}/ingest_keys/${keys[0]}`), 404, 'not_found');

  const token = await otherTeamToken(srv);
  fails(await srv.get(base, { token }), 404, 'not_found');
  fails(await srv.post(base, {}, { token }), 404, 'not_found');
  fails(await srv.delete(`${base}/${keys[0]}`, { token }), 404, 'not_found');

  const readOnly = await scopedToken(srv, { ingest_keys: ['read'] });
  ok(await srv.get(base, { token: readOnly }));
  fails(await srv.post(base, {}, { token: readOnly }), 403, 'forbidden');
  fails(await srv.delete(`${base}/${keys[0]}`, { token: readOnly }), 403, 'forbidden');
  const sourcesOnly = await scopedToken(srv, { sources: ['read', 'write', 'delete'] });
  fails(await srv.get(base, { token: sourcesOnly }), 403, 'forbidden');

  // The source must be live.
  ok(await srv.delete(`/v1/projects/${project.id}/sources/${source.id}`));
  fails(await srv.post(base), 404, 'not_found');
  fails(await srv.get(base), 404, 'not_found');
});

test('ingest keys, sources and collections survive a restart', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const project = await createProject(srv);
  const source = await createSource(srv, project.id, 'web');
  const key = ok(await srv.post(`/v1/projects/${project.id}/sources/${source.id}/ingest_keys`), 201);
  const collection = ok(
    await srv.post(`/v1/projects/${project.id}/collections`, { name: 'Events', source_id: source.id, slug: 'events' }),
    201,
  );
  const tuned = ok(
    await srv.post(`/v1/projects/${project.id}/collections/${collection.id}`, {
      schema_max_depth: 3,
      schema_opaque_paths: [['payload']],
    }),
  );

  await srv.restart();
  const s = srv.sluice.services;
  assert.equal(ok(await srv.get(`/v1/projects/${project.id}/sources/${source.id}`)).name, 'web');
  assert.equal(ok(await srv.get(`/v1/projects/${project.id}/sources/${source.id}/ingest_keys/${key.id}`)).id, key.id);
  assert.equal(s.ingestKeys.findBySecret(key.key)?.id, key.id);
  assert.deepEqual(ok(await srv.get(`/v1/projects/${project.id}/collections/${collection.id}`)), tuned);
  assert.equal(s.collections.bySlug(source.id, 'events')?.id, collection.id);
  assert.equal(s.sources.byId(source.id)?.id, source.id);
});
