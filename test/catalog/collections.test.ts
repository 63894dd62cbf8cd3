import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createProject, createSource, fails, ok, otherTeamToken } from './helpers.js';
import { slugFromName, uniqueSlug } from '../../src/catalog/collection-slug.js';

const COLLECTION_FIELDS = [
  'object',
  'id',
  'source_id',
  'project_id',
  'source_name',
  'slug',
  'name',
  'storage_gb',
  'schema_count',
  'views_count',
  'drains_count',
  'schema_opaque_paths',
  'schema_tracked_paths',
  'schema_max_depth',
  'schema_nulls',
  'schema_optional_keys',
  'schema_detector',
  'schema_recurrence_gap_ms',
  'schema_bulk_rows',
  'schema_stale_after_ms',
  'schema_identity_limit',
  'schema_candidate_pool',
  'schema_alias_pool',
  'schema_writer_limit',
  'schema_unclassified_retention_days',
  'deleted_at',
  'created_at',
  'updated_at',
];

async function setup(srv: TestServer) {
  const project = await createProject(srv);
  const source = await createSource(srv, project.id, 'web');
  return { project, source, base: `/v1/projects/${project.id}/collections` };
}

test('collections: create with defaults, get, list, update, delete, restore, force', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { project, source, base } = await setup(srv);

  const created = ok(await srv.post(base, { name: 'Page Views', source_id: source.id }), 201);
  assert.deepEqual(Object.keys(created).sort(), [...COLLECTION_FIELDS].sort());
  assert.match(created.id, /^col_[0-9a-z]{20}$/);
  assert.equal(created.object, 'collection');
  assert.equal(created.slug, 'page-views');
  assert.equal(created.source_name, 'web');
  assert.equal(created.project_id, project.id);
  assert.deepEqual(
    { ...created, id: 0, created_at: 0, updated_at: 0 },
    {
      object: 'collection',
      id: 0,
      source_id: source.id,
      project_id: project.id,
      source_name: 'web',
      slug: 'page-views',
      name: 'Page Views',
      storage_gb: 0,
      schema_count: 0,
      views_count: 0,
      drains_count: 0,
      schema_opaque_paths: [],
      schema_tracked_paths: [],
      schema_max_depth: 6,
      schema_nulls: 'auto',
      schema_optional_keys: 'auto',
      schema_detector: 'auto',
      schema_recurrence_gap_ms: 3_600_000,
      schema_bulk_rows: 1000,
      schema_stale_after_ms: 604_800_000,
      schema_identity_limit: 256,
      schema_candidate_pool: 512,
      schema_alias_pool: 4096,
      schema_writer_limit: 32,
      schema_unclassified_retention_days: 30,
      deleted_at: null,
      created_at: 0,
      updated_at: 0,
    },
  );
  assert.deepEqual(ok(await srv.get(`${base}/${created.id}`)), created);

  const updated = ok(
    await srv.post(`${base}/${created.id}`, {
      name: 'Views',
      schema_opaque_paths: [['payload'], ['meta', 'tags']],
      schema_tracked_paths: [['payload', 'type']],
      schema_max_depth: 4,
      schema_nulls: 'manual',
      schema_optional_keys: 'manual',
      schema_detector: 'manual',
      schema_unclassified_retention_days: null,
    }),
  );
  assert.equal(updated.name, 'Views');
  assert.equal(updated.slug, 'page-views', 'the slug never changes');
  assert.deepEqual(updated.schema_opaque_paths, [['payload'], ['meta', 'tags']]);
  assert.deepEqual(updated.schema_tracked_paths, [['payload', 'type']]);
  assert.equal(updated.schema_max_depth, 4);
  assert.equal(updated.schema_nulls, 'manual');
  assert.equal(updated.schema_unclassified_retention_days, null);
  assert.equal(updated.schema_bulk_rows, 1000, 'omitted settings keep their value');

  const scheduled = ok(await srv.delete(`${base}/${created.id}`));
  assert.ok(scheduled.deleted_at);
  assert.deepEqual(ok(await srv.get(base)), []);
  assert.deepEqual(
    ok(await srv.get(`${base}?deleted_at=not:null`)).map((c: any) => c.id),
    [created.id],
  );
  assert.equal(ok(await srv.get(`/v1/projects/${project.id}/sources/${source.id}`)).collections_count, 0);
  fails(await srv.post(`${base}/${created.id}`, { name: 'x' }), 409, 'conflict');
  // The slug stays held while scheduled.
  fails(
    await srv.post(base, { name: 'again', slug: 'page-views', source_id: source.id }),
    409,
    'conflict',
    'body.slug',
  );
  assert.equal(ok(await srv.post(base, { name: 'Page Views', source_id: source.id }), 201).slug, 'page-views-2');

  assert.equal(ok(await srv.post(`${base}/${created.id}`, { deleted_at: null })).deleted_at, null);
  assert.equal(ok(await srv.delete(`${base}/${created.id}/force`)), null);
  fails(await srv.get(`${base}/${created.id}`), 404, 'not_found');
  // Force works on scheduled collections too, and frees the slug.
  const other = ok(await srv.post(base, { name: 'Other', source_id: source.id }), 201);
  ok(await srv.delete(`${base}/${other.id}`));
  assert.equal(ok(await srv.delete(`${base}/${other.id}/force`)), null);
  assert.equal(
    ok(await srv.post(base, { name: 'x', slug: 'page-views', source_id: source.id }), 201).slug,
    'page-views',
  );
});

test('collections: slug derivation, explicit slugs, uniqueness per source and immutability', async (t) => {
  const cases: [string, string][] = [
    ['Page Views', 'page-views'],
    ['  Café — Events!! ', 'cafe-events'],
    ['orders_v2', 'orders-v2'],
    ['%%%', 'collection'],
    ['A'.repeat(100), 'a'.repeat(64)],
    [`${'b'.repeat(63)} x`, 'b'.repeat(63)],
  ];
  for (const [name, slug] of cases) assert.equal(slugFromName(name), slug, name);
  assert.equal(
    uniqueSlug('a'.repeat(64), (s) => s === 'a'.repeat(64)),
    `${'a'.repeat(62)}-2`,
  );

  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { project, source, base } = await setup(srv);
  const second = await createSource(srv, project.id, 'app');

  const slugs = [];
  for (let i = 0; i < 3; i++) slugs.push(ok(await srv.post(base, { name: 'Events', source_id: source.id }), 201).slug);
  assert.deepEqual(slugs, ['events', 'events-2', 'events-3']);
  assert.equal(
    ok(await srv.post(base, { name: 'Events', source_id: second.id }), 201).slug,
    'events',
    'slugs are unique per source',
  );
  const explicit = ok(await srv.post(base, { name: 'Anything', slug: 'my_slug-1', source_id: source.id }), 201);
  assert.equal(explicit.slug, 'my_slug-1');
  fails(await srv.post(base, { name: 'Dup', slug: 'events', source_id: source.id }), 409, 'conflict', 'body.slug');

  fails(await srv.post(`${base}/${explicit.id}`, { slug: 'other' }), 400, 'request_validation_failed', 'body.slug');
  fails(await srv.post(`${base}/${explicit.id}`, { slug: 'my_slug-1' }), 400, 'request_validation_failed', 'body.slug');

  const createCases: { name: string; body: Record<string, unknown>; status: number; field?: string }[] = [
    { name: 'name 0', body: { name: '' }, status: 400, field: 'body.name' },
    { name: 'name 1', body: { name: 'n' }, status: 201 },
    { name: 'name 128', body: { name: 'n'.repeat(128) }, status: 201 },
    { name: 'name 129', body: { name: 'n'.repeat(129) }, status: 400, field: 'body.name' },
    { name: 'slug 0', body: { name: 'x', slug: '' }, status: 400, field: 'body.slug' },
    { name: 'slug 1', body: { name: 'x', slug: 's' }, status: 201 },
    { name: 'slug 64', body: { name: 'x', slug: 's'.repeat(64) }, status: 201 },
    { name: 'slug 65', body: { name: 'x', slug: 's'.repeat(65) }, status: 400, field: 'body.slug' },
    { name: 'slug uppercase', body: { name: 'x', slug: 'Events' }, status: 400, field: 'body.slug' },
    { name: 'slug starting with -', body: { name: 'x', slug: '-events' }, status: 400, field: 'body.slug' },
    { name: 'slug with a space', body: { name: 'x', slug: 'a b' }, status: 400, field: 'body.slug' },
    { name: 'missing source_id', body: { name: 'x', source_id: undefined }, status: 400, field: 'body.source_id' },
    {
      name: 'source_id of another kind',
      body: { name: 'x', source_id: project.id },
      status: 400,
      field: 'body.source_id',
    },
    { name: 'unknown field', body: { name: 'x', colour: 1 }, status: 400, field: 'body.colour' },
  ];
  for (const c of createCases) {
    const body = { source_id: source.id, ...c.body };
    const res = await srv.post(base, JSON.parse(JSON.stringify(body)));
    if (c.status === 201) ok(res, 201);
    else fails(res, c.status, 'request_validation_failed', c.field);
  }
  fails(await srv.post(base, { name: 'x', source_id: `src_${'z'.repeat(20)}` }), 404, 'not_found');
  const otherProject = await createProject(srv, 'P2');
  const foreign = await createSource(srv, otherProject.id, 'foreign');
  fails(await srv.post(base, { name: 'x', source_id: foreign.id }), 404, 'not_found');
  ok(await srv.delete(`/v1/projects/${project.id}/sources/${second.id}`));
  const res = await srv.post(base, { name: 'x', source_id: second.id });
  fails(res, 404, 'not_found');
  assert.match(res.body.error!.message, /scheduled for deletion/);
});

test('collections: every schema setting at both edges of its range', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { source, base } = await setup(srv);
  const col = ok(await srv.post(base, { name: 'Events', source_id: source.id }), 201);
  const ranges: [string, number, number][] = [
    ['schema_max_depth', 1, 10],
    ['schema_recurrence_gap_ms', 60_000, 604_800_000],
    ['schema_bulk_rows', 0, 1_000_000],
    ['schema_stale_after_ms', 3_600_000, 7_776_000_000],
    ['schema_identity_limit', 1, 4096],
    ['schema_candidate_pool', 1, 8192],
    ['schema_alias_pool', 16, 100_000],
    ['schema_writer_limit', 1, 256],
    ['schema_unclassified_retention_days', 0, 36_500],
  ];
  const cases: { body: Record<string, unknown>; ok: boolean }[] = [];
  for (const [field, min, max] of ranges) {
    cases.push(
      { body: { [field]: min - 1 }, ok: false },
      { body: { [field]: min }, ok: true },
      { body: { [field]: max }, ok: true },
      { body: { [field]: max + 1 }, ok: false },
    );
    cases.push({ body: { [field]: min + 0.5 }, ok: false }, { body: { [field]: String(min) }, ok: false });
  }
  for (const field of ['schema_nulls', 'schema_optional_keys', 'schema_detector']) {
    cases.push(
      { body: { [field]: 'auto' }, ok: true },
      { body: { [field]: 'manual' }, ok: true },
      { body: { [field]: 'sometimes' }, ok: false },
      { body: { [field]: null }, ok: false },
    );
  }
  const seg = 's'.repeat(256);
  for (const field of ['schema_opaque_paths', 'schema_tracked_paths']) {
    cases.push(
      { body: { [field]: [[]] }, ok: false },
      { body: { [field]: [['']] }, ok: false },
      { body: { [field]: [['a', 5]] }, ok: false },
      { body: { [field]: ['a'] }, ok: false },
      { body: { [field]: [['s'.repeat(257)]] }, ok: false },
      { body: { [field]: [Array(33).fill('a')] }, ok: false },
      { body: { [field]: Array.from({ length: 257 }, (_, i) => [`k${i}`]) }, ok: false },
      { body: { [field]: [['a'], ['a']] }, ok: false },
    );
  }
  cases.push(
    { body: { schema_opaque_paths: [[seg], Array(32).fill('a')] }, ok: true },
    { body: { schema_opaque_paths: Array.from({ length: 256 }, (_, i) => [`k${i}`]) }, ok: true },
    { body: { schema_opaque_paths: [] }, ok: true },
    { body: { schema_unclassified_retention_days: null }, ok: true },
    { body: { name: '' }, ok: false },
    { body: { name: 'n'.repeat(128) }, ok: true },
    { body: { name: 'n'.repeat(129) }, ok: false },
    { body: { expected_updated_at: 'yesterday' }, ok: false },
    { body: { deleted_at: '2026-01-01T00:00:00Z' }, ok: false },
    { body: { colour: 'red' }, ok: false },
  );
  for (const c of cases) {
    const field = Object.keys(c.body)[0]!;
    const res = await srv.post(`${base}/${col.id}`, c.body);
    if (c.ok) {
      const data = ok(res);
      if (field !== 'name')
        assert.deepEqual(data[field], c.body[field], `${field} = ${JSON.stringify(c.body[field])} is stored`);
    } else {
      assert.equal(res.status, 400, `${JSON.stringify(c.body).slice(0, 80)} must be rejected`);
      fails(res, 400, 'request_validation_failed');
      const named = res.body.error!.details.map((d: any) => d.field);
      assert.ok(
        named.some((f: string) => f.startsWith(`body.${field}`)),
        `details name body.${field}: ${JSON.stringify(named)}`,
      );
    }
  }

  // Tracked paths must lie inside an opaque path.
  ok(await srv.post(`${base}/${col.id}`, { schema_opaque_paths: [['payload']], schema_tracked_paths: [] }));
  fails(
    await srv.post(`${base}/${col.id}`, { schema_tracked_paths: [['other', 'x']] }),
    400,
    'request_validation_failed',
    'body.schema_tracked_paths[0]',
  );
  fails(
    await srv.post(`${base}/${col.id}`, { schema_tracked_paths: [['payload']] }),
    400,
    'request_validation_failed',
    'body.schema_tracked_paths[0]',
  );
  ok(await srv.post(`${base}/${col.id}`, { schema_tracked_paths: [['payload', 'type']] }));
  fails(
    await srv.post(`${base}/${col.id}`, { schema_opaque_paths: [] }),
    400,
    'request_validation_failed',
    'body.schema_opaque_paths',
  );
  const cleared = ok(await srv.post(`${base}/${col.id}`, { schema_opaque_paths: [], schema_tracked_paths: [] }));
  assert.deepEqual([cleared.schema_opaque_paths, cleared.schema_tracked_paths], [[], []]);
});

test('collections: expected_updated_at guards concurrent edits', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { source, base } = await setup(srv);
  const col = ok(await srv.post(base, { name: 'Events', source_id: source.id }), 201);

  const first = ok(await srv.post(`${base}/${col.id}`, { schema_max_depth: 3, expected_updated_at: col.updated_at }));
  assert.notEqual(first.updated_at, col.updated_at);
  const stale = await srv.post(`${base}/${col.id}`, { schema_max_depth: 9, expected_updated_at: col.updated_at });
  fails(stale, 409, 'conflict', 'body.expected_updated_at');
  assert.equal(ok(await srv.get(`${base}/${col.id}`)).schema_max_depth, 3, 'the rejected update changed nothing');
  // The same instant written differently still matches.
  const sameInstant = first.updated_at.replace('Z', '+00:00');
  assert.equal(
    ok(await srv.post(`${base}/${col.id}`, { schema_max_depth: 9, expected_updated_at: sameInstant })).schema_max_depth,
    9,
  );
});

test('collections: list order, filters, pagination, other teams', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { project, source, base } = await setup(srv);
  const app = await createSource(srv, project.id, 'app');
  for (const name of ['delta', 'Alpha', 'charlie']) ok(await srv.post(base, { name, source_id: source.id }), 201);
  const bravo = ok(await srv.post(base, { name: 'bravo', source_id: app.id }), 201);

  assert.deepEqual(
    ok(await srv.get(base)).map((c: any) => c.name),
    ['Alpha', 'bravo', 'charlie', 'delta'],
  );
  assert.deepEqual(
    ok(await srv.get(`${base}?sort=desc`)).map((c: any) => c.name),
    ['delta', 'charlie', 'bravo', 'Alpha'],
  );
  assert.deepEqual(
    ok(await srv.get(`${base}?source_id=${app.id}`)).map((c: any) => c.id),
    [bravo.id],
  );
  assert.deepEqual(ok(await srv.get(`${base}?project_id=prj_${'x'.repeat(20)}`)), []);
  assert.equal(ok(await srv.get(`${base}?order_by=created_at`)).length, 4);
  assert.equal(ok(await srv.get(`${base}?order_by=updated_at&sort=desc`)).length, 4);
  const p1 = await srv.get(`${base}?limit=3`);
  const p2 = await srv.get(`${base}?limit=3&after=${p1.body.pagination!.next_cursor}`);
  assert.deepEqual(
    ok(p2).map((c: any) => c.name),
    ['delta'],
  );
  const back = await srv.get(`${base}?limit=3&before=${p2.body.pagination!.prev_cursor}`);
  assert.deepEqual(
    ok(back).map((c: any) => c.name),
    ['Alpha', 'bravo', 'charlie'],
  );
  fails(await srv.get(`${base}?source_id=bad`), 400, 'request_validation_failed', 'query.source_id');
  fails(await srv.get(`${base}?order_by=slug`), 400, 'request_validation_failed', 'query.order_by');
  // A path id of another kind or shape names nothing, like an id that does not exist.
  fails(await srv.get(`${base}/src_${'a'.repeat(20)}`), 404, 'not_found');
  fails(await srv.get(`${base}/col_${'a'.repeat(20)}`), 404, 'not_found');

  const token = await otherTeamToken(srv);
  fails(await srv.get(base, { token }), 404, 'not_found');
  fails(await srv.get(`${base}/${bravo.id}`, { token }), 404, 'not_found');
  fails(await srv.post(base, { name: 'x', source_id: source.id }, { token }), 404, 'not_found');
  fails(await srv.post(`${base}/${bravo.id}`, { name: 'x' }, { token }), 404, 'not_found');
  fails(await srv.delete(`${base}/${bravo.id}/force`, { token }), 404, 'not_found');
  const otherProject = await createProject(srv, 'P2');
  fails(await srv.get(`/v1/projects/${otherProject.id}/collections/${bravo.id}`), 404, 'not_found');
});

test('collections: ensure() finds or creates one collection per slug, even when called concurrently', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { source, base } = await setup(srv);
  const s = srv.sluice.services;
  const record = s.sources.byId(source.id)!;

  const made = await Promise.all(Array.from({ length: 8 }, () => s.collections.ensure(record, 'default')));
  assert.equal(new Set(made.map((c) => c.id)).size, 1, 'one collection for concurrent ensures');
  assert.equal(made[0]!.name, 'default');
  assert.equal(made[0]!.schema_max_depth, 6);
  assert.equal((await s.collections.ensure(record, 'default')).id, made[0]!.id);
  assert.equal(s.collections.bySlug(source.id, 'default')?.id, made[0]!.id);
  assert.equal(s.collections.byId(made[0]!.id)?.slug, 'default');
  assert.deepEqual(
    ok(await srv.get(base)).map((c: any) => c.slug),
    ['default'],
  );
  // A created collection is what ensure returns for its slug.
  const orders = ok(await srv.post(base, { name: 'Orders', source_id: source.id }), 201);
  assert.equal((await s.collections.ensure(record, 'orders')).id, orders.id);

  await assert.rejects(s.collections.ensure(record, 'Bad Slug'), (e: any) => e.code === 'request_validation_failed');
  ok(await srv.delete(`${base}/${orders.id}`));
  await assert.rejects(s.collections.ensure(record, 'orders'), (e: any) => e.code === 'source_deleted');
  ok(await srv.delete(`/v1/projects/${source.project_id}/sources/${source.id}`));
  await assert.rejects(s.collections.ensure(record, 'fresh'), (e: any) => e.code === 'source_deleted');
});

test('collections: scheduling their source hides them at once; restoring it brings them back', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { project, source, base } = await setup(srv);
  const created = ok(await srv.post(base, { name: 'hidden with its source', source_id: source.id }), 201);
  const src = `/v1/projects/${project.id}/sources/${source.id}`;
  assert.equal((await srv.delete(src)).status, 200);
  assert.deepEqual(ok(await srv.get(`${base}?source_id=${source.id}`)), [], 'not listed');
  assert.ok(!ok(await srv.get(base)).some((c: any) => c.id === created.id));
  fails(await srv.get(`${base}/${created.id}`), 404, 'not_found');
  fails(await srv.post(`${base}/${created.id}`, { name: 'renamed' }), 404, 'not_found');
  fails(await srv.get(`${base}/${created.id}/schema_report`), 404, 'not_found');
  // A create naming that source (or any unknown one) says which field points nowhere.
  const unknown = await srv.post(base, { name: 'x', source_id: source.id });
  assert.equal(unknown.status, 404);
  assert.equal((unknown.body.error!.details as Array<{ field: string }>)[0]!.field, 'body.source_id');
  assert.equal((await srv.post(src, { deleted_at: null })).status, 200);
  assert.equal(ok(await srv.get(`${base}/${created.id}`)).id, created.id, 'back with its source');
});
