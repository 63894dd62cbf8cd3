import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { fails, ok, otherTeamToken, scopedToken } from '../catalog/helpers.js';
import { SCRIPT, viewSetup } from './view-helpers.js';

/** The API alone: no pipeline, so backfill states stay where the API put them (the pipeline's own tests cover them moving on). */
const CONTROL_PLANE_ONLY = { env: { SLUICE_PIPELINE: '0' } };

const VIEW_FIELDS = [
  'object',
  'id',
  'team_id',
  'project_id',
  'collection_id',
  'collection_name',
  'parent_view_id',
  'parent_view_name',
  'view_mode',
  'transform_mode',
  'name',
  'hint',
  'output_schema',
  'status',
  'error_message',
  'waiting_shapes_count',
  'deleted_at',
  'created_at',
  'updated_at',
  'mapping_policy_revision',
  'mapping_policy_nullable_inputs',
  'mapping_policy_fallback_groups',
  'mapping_policy_allow_drops',
  'mapping_policy_output_bindings',
  'mapping_generation',
  'join_base_view_id',
  'join_base_view_name',
  'join_status',
  'join_backfill_cutoff_at',
  'join_live_started_at',
  'join_lookup_progress',
  'join_base_file_count',
  'join_base_files_done',
  'join_error_message',
  'join_created_at',
  'join_updated_at',
  'joins',
  'metrics_count',
  'derived_views_count',
  'join_views_count',
  'transform_count',
  'drains_count',
  'backfill_file_count',
  'backfill_files_done',
  'backfill_started_at',
];

const OUT = [
  { name: 'name', type: 'string' },
  { name: 'amount', type: 'number', description: 'in cents' },
];

test('views: a manual view with a script is active at once; without a script its transform is queued', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE_ONLY);
  t.after(() => srv.stop());
  const { project, collection, views } = await viewSetup(srv);

  const manual = ok(
    await srv.post(views, {
      name: 'Orders',
      collection_id: collection.id,
      transform_script: SCRIPT,
      transform_mode: 'manual',
      output_schema: OUT,
    }),
    201,
  );
  assert.deepEqual(Object.keys(manual).sort(), [...VIEW_FIELDS].sort());
  assert.match(manual.id, /^viw_[0-9a-z]{20}$/);
  assert.equal(manual.object, 'view');
  assert.equal(manual.project_id, project.id);
  assert.equal(manual.collection_name, 'events');
  assert.equal(manual.view_mode, 'collection');
  assert.equal(manual.transform_mode, 'manual');
  assert.equal(manual.status, 'active');
  assert.deepEqual(manual.output_schema, OUT);
  assert.equal(manual.transform_count, 1);
  assert.equal(manual.waiting_shapes_count, 0);
  assert.equal(manual.mapping_policy_revision, null);
  assert.deepEqual(
    [manual.metrics_count, manual.derived_views_count, manual.join_views_count, manual.drains_count],
    [0, 0, 0, 0],
  );
  const [mt] = ok(await srv.get(`${views}/${manual.id}/transforms`));
  assert.match(mt.id, /^vtr_[0-9a-z]{20}$/);
  assert.equal(mt.object, 'view_transform');
  assert.equal(mt.status, 'active');
  assert.equal(mt.transform_script, SCRIPT);
  assert.match(mt.script_hash, /^[0-9a-f]{16}$/);
  assert.equal(mt.backfill_status, 'pending');

  const auto = ok(await srv.post(views, { name: 'Auto', collection_id: collection.id }), 201);
  assert.equal(auto.transform_mode, 'auto', 'auto is the default');
  assert.equal(auto.status, 'initializing');
  assert.deepEqual(auto.output_schema, [], 'the generator proposes one later');
  const [at] = ok(await srv.get(`${views}/${auto.id}/transforms`));
  assert.equal(at.status, 'queued');
  assert.equal(at.transform_script, null);
  assert.equal(at.script_hash, null);
  assert.equal(at.backfill_status, 'none');

  // A view of a view: reads the parent, fed by the same collection.
  const child = ok(
    await srv.post(views, {
      name: 'Big orders',
      parent_view_id: manual.id,
      project_id: project.id,
      hint: 'only amounts over 100',
      mapping_policy: { allow_drops: true },
    }),
    201,
  );
  assert.equal(child.view_mode, 'view');
  assert.equal(child.collection_id, null);
  assert.equal(child.parent_view_name, 'Orders');
  assert.equal(child.hint, 'only amounts over 100');
  assert.equal(child.mapping_policy_revision, 1);
  assert.equal(child.mapping_policy_allow_drops, true);
  assert.deepEqual(
    srv.sluice.services.views.liveViewsOf(collection.id).map((v) => v.id),
    [manual.id, auto.id, child.id],
  );

  assert.deepEqual(ok(await srv.get(`${views}/${manual.id}`)), { ...manual, derived_views_count: 1 });
  assert.equal(
    ok(await srv.get(`/v1/projects/${project.id}/collections/${collection.id}`)).views_count,
    2,
    'views reading the collection directly',
  );
});

test('views: create validation answers 400 / 404 naming the field', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE_ONLY);
  t.after(() => srv.stop());
  const { collection, views } = await viewSetup(srv);
  const other = await viewSetup(srv, 'Other');
  const body = { name: 'V', collection_id: collection.id };

  const syntax = await srv.post(views, { ...body, transform_script: 'function transform(r) {\n  return {;\n}' });
  fails(syntax, 400, 'view_script_invalid', 'body.transform_script');
  const d = syntax.body.error!.details[0];
  assert.equal(d.line, 2);
  assert.equal(typeof d.column, 'number');
  assert.match(d.message, /Unexpected token/);
  assert.match(syntax.body.error!.message, /line 2, column \d+/);

  fails(
    await srv.post(views, { ...body, transform_script: 'x'.repeat(65_537) }),
    400,
    'request_validation_failed',
    'body.transform_script',
  );
  ok(
    await srv.post(views, { ...body, transform_script: `function transform(r) { return r; }//`.padEnd(65_536, 'x') }),
    201,
  );
  fails(
    await srv.post(views, { ...body, transform_script: '  \n\t ' }),
    400,
    'request_validation_failed',
    'body.transform_script',
  );
  fails(
    await srv.post(views, { ...body, transform_script: '' }),
    400,
    'request_validation_failed',
    'body.transform_script',
  );
  fails(await srv.post(views, { name: 'V' }), 400, 'request_validation_failed', 'body.collection_id');
  const parent = ok(await srv.post(views, body), 201);
  const both = await srv.post(views, { ...body, parent_view_id: parent.id });
  fails(both, 400, 'request_validation_failed', 'body.parent_view_id');
  fails(await srv.post(views, { name: 'V', collection_id: other.collection.id }), 404, 'not_found');
  const otherView = ok(await srv.post(other.views, { name: 'Theirs', collection_id: other.collection.id }), 201);
  fails(await srv.post(views, { name: 'V', parent_view_id: otherView.id }), 404, 'not_found', 'body.parent_view_id');
  fails(await srv.post(views, { ...body, name: '' }), 400, 'request_validation_failed', 'body.name');
  fails(await srv.post(views, { ...body, name: 'x'.repeat(129) }), 400, 'request_validation_failed', 'body.name');
  fails(
    await srv.post(views, { ...body, project_id: other.project.id }),
    400,
    'request_validation_failed',
    'body.project_id',
  );
  fails(
    await srv.post(views, { ...body, source_id: 'src_00000000000000000000' }),
    400,
    'request_validation_failed',
    'body.source_id',
  );
  fails(
    await srv.post(views, { ...body, transform_mode: 'sometimes' }),
    400,
    'request_validation_failed',
    'body.transform_mode',
  );

  const dup = await srv.post(views, {
    ...body,
    output_schema: [
      { name: 'a', type: 'string' },
      { name: 'a', type: 'number' },
    ],
  });
  fails(dup, 400, 'request_validation_failed', 'body.output_schema[1].name');
  fails(
    await srv.post(views, { ...body, output_schema: [{ name: 'limit', type: 'number' }] }),
    400,
    'request_validation_failed',
    'body.output_schema[0].name',
  );
  fails(
    await srv.post(views, { ...body, output_schema: [{ name: 'cursor', type: 'string' }] }),
    400,
    'request_validation_failed',
    'body.output_schema[0].name',
  );
  fails(
    await srv.post(views, { ...body, output_schema: [{ name: '__ts', type: 'date' }] }),
    400,
    'request_validation_failed',
    'body.output_schema[0].name',
  );
  fails(
    await srv.post(views, { ...body, output_schema: [{ name: 'a', type: 'object' }] }),
    400,
    'request_validation_failed',
    'body.output_schema[0].type',
  );
  fails(
    await srv.post(views, { ...body, output_schema: [{ name: 'a', type: 'string', description: 'x'.repeat(513) }] }),
    400,
    'request_validation_failed',
    'body.output_schema[0].description',
  );
  fails(
    await srv.post(views, {
      ...body,
      output_schema: [{ name: 'a', type: 'string' }],
      mapping_policy: { output_bindings: { b: ['x'] } },
    }),
    400,
    'request_validation_failed',
    'body.mapping_policy.output_bindings.b',
  );

  // Scopes: reading needs views:read, writing views:write.
  const reader = await scopedToken(srv, { views: ['read'], projects: ['read'] });
  fails(await srv.post(views, body, { token: reader }), 403, 'forbidden');
  ok(await srv.get(views, { token: reader }));
  // Another team sees nothing.
  fails(await srv.get(`${views}/${parent.id}`, { token: await otherTeamToken(srv) }), 404, 'not_found');
});

test('views: join views check both sides, join keys and aliases', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE_ONLY);
  t.after(() => srv.stop());
  const { collection, views } = await viewSetup(srv);
  const other = await viewSetup(srv, 'Other');
  const orders = ok(
    await srv.post(views, {
      name: 'Orders',
      collection_id: collection.id,
      output_schema: [
        { name: 'user_id', type: 'string' },
        { name: 'amount', type: 'number' },
      ],
    }),
    201,
  );
  const users = ok(
    await srv.post(views, {
      name: 'Users',
      collection_id: collection.id,
      output_schema: [
        { name: 'id', type: 'string' },
        { name: 'plan', type: 'string' },
      ],
    }),
    201,
  );
  const theirs = ok(
    await srv.post(other.views, {
      name: 'Theirs',
      collection_id: other.collection.id,
      output_schema: [{ name: 'id', type: 'string' }],
    }),
    201,
  );
  const clause = { lookup_view_id: users.id, alias: 'user', base_field: 'user_id', lookup_field: 'id' };

  const join = ok(
    await srv.post(`${views}/join`, {
      name: 'Orders with users',
      base_view_id: orders.id,
      joins: [clause],
      hint: 'plan matters',
    }),
    201,
  );
  assert.equal(join.view_mode, 'join');
  assert.equal(join.join_base_view_id, orders.id);
  assert.equal(join.join_base_view_name, 'Orders');
  assert.equal(join.join_status, 'backfilling');
  assert.deepEqual(join.joins, [{ ...clause, join_type: 'left', match_strategy: 'latest', priority: 0 }]);
  assert.deepEqual(Object.keys(join.join_lookup_progress), ['user']);
  assert.equal(join.collection_id, null);
  assert.equal(join.status, 'initializing');
  assert.equal(ok(await srv.get(`${views}/${orders.id}`)).join_views_count, 1);
  assert.equal(ok(await srv.get(`${views}/${users.id}`)).join_views_count, 1);
  assert.deepEqual(
    srv.sluice.services.views.liveViewsOf(collection.id).map((v) => v.id),
    [orders.id, users.id, join.id],
    'a join after its inputs',
  );

  const j = (over: object, joins: object[] = [clause]) =>
    srv.post(`${views}/join`, { name: 'J', base_view_id: orders.id, joins, ...over });
  fails(await j({ base_view_id: theirs.id }), 404, 'not_found', 'body.base_view_id');
  const foreign = await j({}, [{ ...clause, lookup_view_id: theirs.id }]);
  fails(foreign, 404, 'not_found', 'body.joins[0].lookup_view_id');
  assert.match(foreign.body.error!.message, /belongs to project/);
  fails(
    await j({}, [{ ...clause, base_field: 'missing' }]),
    400,
    'request_validation_failed',
    'body.joins[0].base_field',
  );
  fails(
    await j({}, [{ ...clause, lookup_field: 'user_id' }]),
    400,
    'request_validation_failed',
    'body.joins[0].lookup_field',
  );
  fails(await j({}, [{ ...clause, alias: 'User' }]), 400, 'request_validation_failed', 'body.joins[0].alias');
  fails(await j({}, [{ ...clause, alias: '1user' }]), 400, 'request_validation_failed', 'body.joins[0].alias');
  fails(await j({}, [{ ...clause, alias: 'a'.repeat(65) }]), 400, 'request_validation_failed', 'body.joins[0].alias');
  fails(await j({}, [clause, clause]), 400, 'request_validation_failed', 'body.joins[1].alias');
  fails(await j({}, [{ ...clause, priority: -1 }]), 400, 'request_validation_failed', 'body.joins[0].priority');
  fails(await j({}, [{ ...clause, priority: 1.5 }]), 400, 'request_validation_failed', 'body.joins[0].priority');
  fails(
    await j({}, [{ ...clause, match_strategy: 'earliest' }]),
    400,
    'request_validation_failed',
    'body.joins[0].match_strategy',
  );
  fails(await j({}, []), 400, 'request_validation_failed', 'body.joins');
  fails(await j({ hint: 'x'.repeat(4097) }), 400, 'request_validation_failed', 'body.hint');
  fails(await j({ transform_script: 'return (' }), 400, 'view_script_invalid', 'body.transform_script');

  // A view with dependants cannot go first.
  const blocked = await srv.delete(`${views}/${users.id}`);
  fails(blocked, 409, 'conflict');
  assert.match(blocked.body.error!.message, new RegExp(join.id));
  fails(await srv.delete(`${views}/${orders.id}/force`), 409, 'conflict');
  ok(await srv.delete(`${views}/${join.id}`));
  assert.equal(ok(await srv.get(`${views}/${users.id}`)).join_views_count, 0, 'scheduled join views do not count');
  ok(await srv.delete(`${views}/${users.id}`));
  // Restoring the join needs its lookup back first.
  fails(await srv.post(`${views}/${join.id}`, { deleted_at: null }), 409, 'conflict');
  ok(await srv.post(`${views}/${users.id}`, { deleted_at: null }));
  assert.equal(ok(await srv.post(`${views}/${join.id}`, { deleted_at: null })).deleted_at, null);
});

test('views: list filters, order and pagination', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE_ONLY);
  t.after(() => srv.stop());
  const { project, collection, views } = await viewSetup(srv);
  const second = ok(
    await srv.post(`/v1/projects/${project.id}/collections`, {
      name: 'second',
      source_id: (await srv.get(`/v1/projects/${project.id}/sources`)).body.data[0].id,
    }),
    201,
  );
  const a = ok(await srv.post(views, { name: 'Charlie', collection_id: collection.id }), 201);
  const b = ok(await srv.post(views, { name: 'alpha', collection_id: second.id }), 201);
  const c = ok(await srv.post(views, { name: 'Bravo', parent_view_id: a.id }), 201);

  assert.deepEqual(
    ok(await srv.get(views)).map((v: any) => v.id),
    [a.id, b.id, c.id],
    'created_at ascending by default',
  );
  assert.deepEqual(
    ok(await srv.get(`${views}?order_by=name`)).map((v: any) => v.name),
    ['alpha', 'Bravo', 'Charlie'],
  );
  assert.deepEqual(
    ok(await srv.get(`${views}?sort=desc`)).map((v: any) => v.id),
    [c.id, b.id, a.id],
  );
  assert.deepEqual(
    ok(await srv.get(`${views}?collection_id=${second.id}`)).map((v: any) => v.id),
    [b.id],
  );
  assert.deepEqual(
    ok(await srv.get(`${views}?parent_view_id=${a.id}`)).map((v: any) => v.id),
    [c.id],
  );
  assert.deepEqual(ok(await srv.get(`${views}?project_id=${project.id}`)).length, 3);

  const page1 = await srv.get(`${views}?limit=2`);
  assert.deepEqual(
    ok(page1).map((v: any) => v.id),
    [a.id, b.id],
  );
  const page2 = await srv.get(`${views}?limit=2&after=${page1.body.pagination!.next_cursor}`);
  assert.deepEqual(
    ok(page2).map((v: any) => v.id),
    [c.id],
  );
  assert.equal(page2.body.pagination!.next_cursor, null);
  assert.deepEqual(
    ok(await srv.get(`${views}?limit=2&before=${page2.body.pagination!.prev_cursor}`)).map((v: any) => v.id),
    [a.id, b.id],
  );
  fails(await srv.get(`${views}?limit=201`), 400, 'request_validation_failed', 'query.limit');
  fails(await srv.get(`${views}?collection_id=nope`), 400, 'request_validation_failed', 'query.collection_id');

  ok(await srv.delete(`${views}/${b.id}`));
  assert.deepEqual(
    ok(await srv.get(views)).map((v: any) => v.id),
    [a.id, c.id],
    'scheduled deletions hidden',
  );
  assert.deepEqual(
    ok(await srv.get(`${views}?deleted_at=not:null`)).map((v: any) => v.id),
    [b.id],
  );
  assert.equal(ok(await srv.get(`/v1/projects/${project.id}/collections/${second.id}`)).views_count, 0);
});

test('views: update rules', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE_ONLY);
  t.after(() => srv.stop());
  const { collection, views } = await viewSetup(srv);
  const auto = ok(await srv.post(views, { name: 'Auto', collection_id: collection.id }), 201);
  const manual = ok(
    await srv.post(views, {
      name: 'Manual',
      collection_id: collection.id,
      transform_script: SCRIPT,
      transform_mode: 'manual',
      output_schema: OUT,
    }),
    201,
  );

  const renamed = ok(await srv.post(`${views}/${auto.id}`, { name: 'Renamed', output_schema: OUT }));
  assert.equal(renamed.name, 'Renamed');
  assert.deepEqual(renamed.output_schema, OUT, 'no mapping or output yet: the schema may change');
  assert.ok(renamed.updated_at > auto.updated_at);
  const locked = await srv.post(`${views}/${manual.id}`, { output_schema: [{ name: 'other', type: 'string' }] });
  fails(locked, 409, 'conflict', 'body.output_schema');
  assert.match(locked.body.error!.message, /already has a script/);
  ok(await srv.post(`${views}/${manual.id}`, { output_schema: OUT }), 200);

  fails(
    await srv.post(`${views}/${auto.id}`, { collection_id: collection.id }),
    400,
    'request_validation_failed',
    'body.collection_id',
  );
  fails(
    await srv.post(`${views}/${auto.id}`, { parent_view_id: manual.id }),
    400,
    'request_validation_failed',
    'body.parent_view_id',
  );
  fails(await srv.post(`${views}/${auto.id}`, {}), 400, 'request_validation_failed', 'body');
  fails(
    await srv.post(`${views}/${auto.id}`, { deleted_at: '2026-01-01T00:00:00Z' }),
    400,
    'request_validation_failed',
    'body.deleted_at',
  );

  const p1 = ok(
    await srv.post(`${views}/${auto.id}`, {
      mapping_policy: { nullable_inputs: ['a.b'], fallback_groups: [['x', 'y']] },
    }),
  );
  assert.equal(p1.mapping_policy_revision, 1);
  assert.deepEqual(p1.mapping_policy_nullable_inputs, ['a.b']);
  const p2 = ok(
    await srv.post(`${views}/${auto.id}`, { mapping_policy: { output_bindings: { name: ['user.name'] } } }),
  );
  assert.equal(p2.mapping_policy_revision, 2);
  assert.deepEqual(p2.mapping_policy_nullable_inputs, ['a.b'], 'omitted parts keep their value');
  assert.deepEqual(p2.mapping_policy_output_bindings, { name: ['user.name'] });

  // Switching to manual: with one distinct script no transform need be named.
  const tr = ok(await srv.get(`${views}/${auto.id}/transforms`))[0];
  fails(
    await srv.post(`${views}/${auto.id}`, { view_transform_id: tr.id }),
    400,
    'request_validation_failed',
    'body.view_transform_id',
  );
  ok(await srv.post(`${views}/${auto.id}/transforms/${tr.id}`, { transform_script: SCRIPT }));
  const second = ok(await srv.post(`${views}/${auto.id}/transforms`, { transform_script: `${SCRIPT}\n// v2` }), 201);
  fails(
    await srv.post(`${views}/${auto.id}`, { transform_mode: 'manual' }),
    400,
    'request_validation_failed',
    'body.view_transform_id',
  );
  const switched = ok(
    await srv.post(`${views}/${auto.id}`, { transform_mode: 'manual', view_transform_id: second.id }),
  );
  assert.equal(switched.transform_mode, 'manual');
  assert.equal(srv.sluice.services.views.byId(auto.id)!.adopting_transform_id, second.id);
  fails(
    await srv.post(`${views}/${auto.id}`, { view_transform_id: 'vtr_00000000000000000000' }),
    400,
    'request_validation_failed',
    'body.view_transform_id',
  );
  assert.equal(ok(await srv.post(`${views}/${auto.id}`, { transform_mode: 'auto' })).transform_mode, 'auto');

  // A hint change keeps accepted mappings and retries failed generation.
  const views_ = srv.sluice.services.views;
  await views_.store.store.transaction(() =>
    views_.store.transforms.put(auto.id, {
      ...views_.transforms.get(auto.id, second.id)!,
      status: 'error',
      error_message: 'generation failed',
    }),
  );
  const hinted = ok(await srv.post(`${views}/${auto.id}`, { hint: 'names are in user.name' }));
  assert.equal(hinted.hint, 'names are in user.name');
  assert.equal(views_.transforms.get(auto.id, second.id)!.status, 'queued');
  assert.equal(views_.transforms.get(auto.id, tr.id)!.status, 'active', 'accepted mappings stay');

  // Scheduled: only a restore is accepted.
  ok(await srv.delete(`${views}/${manual.id}`));
  fails(await srv.post(`${views}/${manual.id}`, { name: 'x' }), 409, 'conflict');
  fails(await srv.post(`${views}/${manual.id}/transforms`, {}), 409, 'conflict');
  assert.equal(ok(await srv.get(`${views}/${manual.id}`)).deleted_at !== null, true, 'a scheduled view can be read');
  fails(await srv.get(`${views}/${manual.id}/records`), 404, 'not_found');
  assert.equal(ok(await srv.post(`${views}/${manual.id}`, { deleted_at: null, name: 'Back' })).name, 'Back');
});

test('views: scheduled delete, restore, force, purge, and collection destruction take views along', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE_ONLY);
  t.after(() => srv.stop());
  const { project, collection, views } = await viewSetup(srv);
  const s = srv.sluice.services;
  const changed: string[] = [];
  s.views.onChange((id) => changed.push(id));

  const root = ok(await srv.post(views, { name: 'Root', collection_id: collection.id, output_schema: OUT }), 201);
  const child = ok(await srv.post(views, { name: 'Child', parent_view_id: root.id }), 201);
  assert.deepEqual(changed, [root.id, child.id], 'listeners hear each committed create');
  assert.equal(ok(await srv.get(`${views}/${root.id}`)).derived_views_count, 1);

  fails(await srv.delete(`${views}/${root.id}`), 409, 'conflict');
  const scheduled = ok(await srv.delete(`${views}/${child.id}`));
  assert.ok(scheduled.deleted_at);
  assert.equal(
    ok(await srv.delete(`${views}/${child.id}`)).deleted_at,
    scheduled.deleted_at,
    'deleting again keeps the first time',
  );
  assert.equal(ok(await srv.get(`${views}/${root.id}`)).derived_views_count, 0);
  // A scheduled view cannot be read from.
  fails(await srv.post(views, { name: 'X', parent_view_id: child.id }), 404, 'not_found', 'body.parent_view_id');

  // Force on the root takes the scheduled child along (and their directories).
  const dir = s.views.viewDir(root);
  const { mkdirSync, writeFileSync, existsSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}/f.parquet`, 'x');
  assert.equal(ok(await srv.delete(`${views}/${root.id}/force`)), null);
  fails(await srv.get(`${views}/${root.id}`), 404, 'not_found');
  fails(await srv.get(`${views}/${child.id}`), 404, 'not_found');
  assert.equal(existsSync(dir), false);
  assert.equal(s.views.store.transformsOf(root.id).length, 0, 'transforms destroyed with the view');
  assert.deepEqual(s.views.liveViewsOf(collection.id), []);

  // Purge after 7 days.
  const old = ok(await srv.post(views, { name: 'Old', collection_id: collection.id }), 201);
  ok(await srv.delete(`${views}/${old.id}`));
  assert.deepEqual(await s.views.purgeExpired(Date.now()), []);
  assert.deepEqual(await s.views.purgeExpired(Date.now() + 7 * 86_400_000 + 1000), [old.id]);
  fails(await srv.get(`${views}/${old.id}`), 404, 'not_found');

  // Destroying the collection destroys the views it feeds, joins of them included.
  const a = ok(await srv.post(views, { name: 'A', collection_id: collection.id, output_schema: OUT }), 201);
  const b = ok(await srv.post(views, { name: 'B', parent_view_id: a.id }), 201);
  const source2 = ok(await srv.post(`/v1/projects/${project.id}/sources`, { name: 'other' }), 201);
  const col2 = ok(await srv.post(`/v1/projects/${project.id}/collections`, { name: 'c2', source_id: source2.id }), 201);
  const c = ok(await srv.post(views, { name: 'C', collection_id: col2.id, output_schema: OUT }), 201);
  const joined = ok(
    await srv.post(`${views}/join`, {
      name: 'J',
      base_view_id: c.id,
      joins: [{ lookup_view_id: a.id, alias: 'a', base_field: 'name', lookup_field: 'name' }],
    }),
    201,
  );
  assert.equal(ok(await srv.get(`/v1/projects/${project.id}/collections/${collection.id}`)).views_count, 1);
  ok(await srv.delete(`/v1/projects/${project.id}/collections/${collection.id}/force`));
  for (const v of [a, b, joined]) fails(await srv.get(`${views}/${v.id}`), 404, 'not_found');
  assert.equal(ok(await srv.get(`${views}/${c.id}`)).join_views_count, 0, 'the view of the other collection stays');
  // And a project's destruction leaves no view behind.
  ok(await srv.delete(`/v1/projects/${project.id}/force`));
  assert.equal(s.views.store.list(project.id).length, 0);
  assert.equal(s.views.byId(c.id), undefined);
});

test('views: listeners hear every committed change; the root map survives a restart', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE_ONLY);
  t.after(() => srv.stop());
  const { collection, views } = await viewSetup(srv);
  const heard: string[] = [];
  const stop = srv.sluice.services.views.onChange((id) => heard.push(id));
  const v = ok(await srv.post(views, { name: 'V', collection_id: collection.id }), 201);
  const [tr] = ok(await srv.get(`${views}/${v.id}/transforms`));
  ok(await srv.post(`${views}/${v.id}`, { name: 'W' }));
  ok(await srv.post(`${views}/${v.id}/transforms/${tr.id}`, { transform_script: SCRIPT }));
  fails(await srv.post(`${views}/${v.id}/transforms/${tr.id}`, { transform_script: '(' }), 400, 'view_script_invalid');
  ok(await srv.post(`${views}/${v.id}/regenerate`));
  ok(await srv.delete(`${views}/${v.id}`));
  assert.deepEqual(
    heard,
    [v.id, v.id, v.id, v.id, v.id],
    'create, update, transform change, regenerate, delete; a refused change is not heard',
  );
  stop();
  ok(await srv.post(`${views}/${v.id}`, { deleted_at: null }));
  assert.equal(heard.length, 5, 'unsubscribed');

  const child = ok(await srv.post(views, { name: 'C', parent_view_id: v.id }), 201);
  await srv.restart();
  assert.deepEqual(
    srv.sluice.services.views.liveViewsOf(collection.id).map((x) => x.id),
    [v.id, child.id],
  );
  assert.equal(
    srv.sluice.services.views.byId(child.id)!.root_collection_id,
    collection.id,
    "a view of a view is fed by its parent's collection",
  );
});
