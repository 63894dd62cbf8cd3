import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { fails, ok } from '../catalog/helpers.js';
import { newId } from '../../src/ids.js';
import type { ViewDeferralRecord, ViewVersionRecord } from '../../src/transform/view-records.js';
import { SCRIPT, viewSetup } from './view-helpers.js';

/** The API alone: no pipeline, so backfill states stay where the API put them (the pipeline's own tests cover them moving on). */
const CONTROL_PLANE_ONLY = { env: { SLUICE_PIPELINE: '0' } };

const TRANSFORM_FIELDS = [
  'object',
  'id',
  'view_id',
  'transform_script',
  'script_hash',
  'status',
  'error_message',
  'tgl_retry_count',
  'max_read_depth',
  'evidence_notice',
  'backfill_status',
  'backfill_cutoff_at',
  'backfill_start_at',
  'backfill_started_at',
  'backfill_completed_at',
  'backfill_file_count',
  'backfill_files_done',
  'backfill_error',
  'assignments',
  'created_at',
  'updated_at',
];

test('view transforms: create, get, change, disable, generate, rebackfill, delete; regenerate', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE_ONLY);
  t.after(() => srv.stop());
  const { views, collection } = await viewSetup(srv);
  const view = ok(await srv.post(views, { name: 'V', collection_id: collection.id }), 201);
  const base = `${views}/${view.id}/transforms`;
  const [first] = ok(await srv.get(base));
  assert.deepEqual(Object.keys(first).sort(), [...TRANSFORM_FIELDS].sort());
  assert.deepEqual(ok(await srv.get(`${base}/${first.id}`)), first);

  const second = ok(await srv.post(base, { transform_script: SCRIPT, max_read_depth: 4 }), 201);
  assert.equal(second.status, 'active');
  assert.equal(second.max_read_depth, 4);
  assert.equal(second.backfill_status, 'pending');
  assert.equal(
    ok(await srv.get(`${views}/${view.id}`)).status,
    'active',
    'a transform with a script makes the view active',
  );
  assert.equal(ok(await srv.get(`${views}/${view.id}`)).transform_count, 2);
  assert.deepEqual(
    ok(await srv.get(base)).map((x: any) => x.id),
    [first.id, second.id],
  );

  fails(await srv.post(base, { transform_script: 'return (' }), 400, 'view_script_invalid', 'body.transform_script');
  fails(await srv.post(base, { max_read_depth: 0 }), 400, 'request_validation_failed', 'body.max_read_depth');
  fails(await srv.post(`${base}/${first.id}`, {}), 400, 'request_validation_failed', 'body');
  fails(
    await srv.post(`${base}/${first.id}`, { transform_script: '{' }),
    400,
    'view_script_invalid',
    'body.transform_script',
  );
  fails(await srv.post(`${base}/${first.id}`, { status: 'queued' }), 400, 'request_validation_failed', 'body.status');
  fails(await srv.get(`${base}/vtr_00000000000000000000`), 404, 'not_found');
  fails(await srv.get(`${base}/viw_00000000000000000000`), 404, 'not_found');

  // Rebackfill needs a script; a first script starts the backfill.
  fails(await srv.post(`${base}/${first.id}/rebackfill`), 409, 'conflict');
  const scripted = ok(await srv.post(`${base}/${first.id}`, { transform_script: `${SCRIPT} // first` }));
  assert.equal(scripted.status, 'active');
  assert.equal(scripted.backfill_status, 'pending');
  assert.notEqual(scripted.script_hash, second.script_hash);
  fails(await srv.post(`${base}/${first.id}/rebackfill`), 409, 'request_no_update');
  const views_ = srv.sluice.services.views;
  await views_.store.store.transaction(() =>
    views_.store.transforms.put(view.id, {
      ...views_.transforms.get(view.id, first.id)!,
      backfill_status: 'completed',
      backfill_file_count: 3,
      backfill_files_done: 3,
    }),
  );
  const again = ok(await srv.post(`${base}/${first.id}/rebackfill`));
  assert.deepEqual([again.backfill_status, again.backfill_file_count, again.backfill_files_done], ['pending', 0, 0]);

  // Generate queues a new script; a disabled transform must be enabled first.
  const queued = ok(await srv.post(`${base}/${first.id}/generate`));
  assert.equal(queued.status, 'queued');
  assert.equal(
    queued.transform_script,
    scripted.transform_script,
    'the current script serves until the generated one replaces it',
  );
  const disabled = ok(await srv.post(`${base}/${second.id}`, { status: 'disabled' }));
  assert.equal(disabled.status, 'disabled');
  fails(await srv.post(`${base}/${second.id}/generate`), 409, 'conflict');
  fails(await srv.post(`${base}/${second.id}/rebackfill`), 409, 'conflict');
  assert.equal(ok(await srv.post(`${base}/${second.id}`, { status: 'active' })).status, 'active');

  // Regenerate: every transform not disabled is queued; the mapping generation moves on.
  ok(await srv.post(`${base}/${second.id}`, { status: 'disabled' }));
  const regenerated = ok(await srv.post(`${views}/${view.id}/regenerate`));
  assert.equal(regenerated.mapping_generation, 1);
  assert.deepEqual(
    ok(await srv.get(base)).map((x: any) => x.status),
    ['queued', 'disabled'],
  );
  fails(await srv.post(`${views}/${view.id}/regenerate`, { hint: 'x' }), 400, 'request_validation_failed', 'body');

  // Delete: never the last transform.
  assert.equal(ok(await srv.delete(`${base}/${second.id}`)), null);
  fails(await srv.get(`${base}/${second.id}`), 404, 'not_found');
  fails(await srv.delete(`${base}/${first.id}`), 409, 'conflict');
  assert.equal(ok(await srv.get(`${views}/${view.id}`)).transform_count, 1);
});

function version(viewId: string, transformId: string, n: number): ViewVersionRecord {
  const now = new Date().toISOString();
  return {
    id: newId('viewVersion'),
    view_id: viewId,
    version: n,
    schema_version_id: newId('schemaVersion'),
    transform_id: transformId,
    status: 'active',
    error_message: null,
    evidence_notice: null,
    script_hash: 'abcdef0123456789',
    script: SCRIPT,
    backfill_status: 'completed',
    backfill_start_at: null,
    backfill_started_at: null,
    backfill_completed_at: now,
    backfill_file_count: 1,
    backfill_files_done: 1,
    backfill_error: null,
    created_at: now,
    updated_at: now,
  };
}

function deferral(viewId: string, over: Partial<ViewDeferralRecord> = {}): ViewDeferralRecord {
  const now = new Date().toISOString();
  return {
    id: newId('viewDeferral'),
    view_id: viewId,
    full_signature: '{name:string}',
    event_count: 3,
    first_event_at: now,
    first_deferred_at: now,
    last_deferred_at: now,
    resolved_at: null,
    reason: 'awaiting_script',
    schema_version: 2,
    created_at: now,
    episode: 1,
    observation_count: null,
    retained_rows: 3,
    first_observed_at: now,
    last_observed_at: now,
    next_action_at: null,
    hint_question: null,
    hint_reason: null,
    hint_paths: [],
    hint_requested_at: null,
    hint_mapping_generation: null,
    exclusion_reason: null,
    excluded_at: null,
    transform_id: null,
    decision: null,
    ...over,
  };
}

test('view versions and waiting shapes: lists, 404s, hints and decisions', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE_ONLY);
  t.after(() => srv.stop());
  const { views, collection } = await viewSetup(srv);
  const view = ok(await srv.post(views, { name: 'V', collection_id: collection.id, transform_script: SCRIPT }), 201);
  const one = `${views}/${view.id}`;
  assert.deepEqual(ok(await srv.get(`${one}/versions`)), []);
  assert.deepEqual(ok(await srv.get(`${one}/deferrals`)), []);
  fails(await srv.get(`${one}/versions/vta_00000000000000000000`), 404, 'not_found');
  fails(await srv.get(`${one}/deferrals/vsd_00000000000000000000`), 404, 'not_found');
  fails(await srv.get(`${one}/deferrals/vsd_00000000000000000000/hint`), 404, 'not_found');
  fails(await srv.post(`${one}/deferrals/vsd_00000000000000000000/decision`, { action: 'generate' }), 404, 'not_found');
  fails(await srv.get(`${views}/viw_00000000000000000000/versions`), 404, 'not_found');

  // What the pipeline records, written here by hand.
  const s = srv.sluice.services.views;
  const [tr] = s.transforms.list(view.id);
  const v2 = version(view.id, tr!.id, 2);
  const v1 = version(view.id, tr!.id, 1);
  const waiting = deferral(view.id, {
    hint_question: 'Is user.id the customer?',
    hint_reason: 'two candidate ids',
    hint_paths: ['["user"]["id"]'],
    hint_requested_at: new Date().toISOString(),
    hint_mapping_generation: 0,
  });
  const served = deferral(view.id, { resolved_at: new Date().toISOString(), reason: 'served', transform_id: tr!.id });
  await s.store.store.transaction(() => {
    for (const v of [v2, v1]) void s.store.versions.put(view.id, v);
    for (const d of [waiting, served]) void s.store.deferrals.put(view.id, d);
  });

  const versions = ok(await srv.get(`${one}/versions`));
  assert.deepEqual(
    versions.map((v: any) => v.version),
    [1, 2],
    'ordered by version',
  );
  assert.equal(versions[0].object, 'view_version');
  assert.equal('schema_version_id' in versions[0], false, 'internal fields stay internal');
  assert.deepEqual(ok(await srv.get(`${one}/versions/${v2.id}`)).id, v2.id);
  assert.equal(ok(await srv.get(`${one}/versions?transform_id=${tr!.id}`)).length, 2);
  assert.equal(ok(await srv.get(`${one}/versions?transform_id=vtr_00000000000000000000`)).length, 0);

  assert.equal(ok(await srv.get(one)).waiting_shapes_count, 1);
  assert.equal(ok(await srv.get(`${one}/deferrals`)).length, 2);
  assert.deepEqual(
    ok(await srv.get(`${one}/deferrals?resolved_at=null`)).map((d: any) => d.id),
    [waiting.id],
  );
  assert.deepEqual(
    ok(await srv.get(`${one}/deferrals?reason=served`)).map((d: any) => d.id),
    [served.id],
  );
  fails(await srv.get(`${one}/deferrals?reason=bored`), 400, 'request_validation_failed', 'query.reason');
  const got = ok(await srv.get(`${one}/deferrals/${waiting.id}`));
  assert.equal(got.object, 'view_shape_deferral');
  assert.equal('decision' in got, false);
  const hint = ok(await srv.get(`${one}/deferrals/${waiting.id}/hint`));
  assert.deepEqual(
    { ...hint, requested_at: 0 },
    {
      object: 'view_shape_hint',
      question: 'Is user.id the customer?',
      reason: 'two candidate ids',
      paths: ['["user"]["id"]'],
      requested_at: 0,
      mapping_generation: 0,
      view_id: view.id,
      deferral_id: waiting.id,
      episode: 1,
      transform_id: null,
    },
  );
  fails(await srv.get(`${one}/deferrals/${served.id}/hint`), 404, 'not_found');

  // Decisions.
  fails(await srv.post(`${one}/deferrals/${served.id}/decision`, { action: 'generate' }), 409, 'conflict');
  fails(
    await srv.post(`${one}/deferrals/${waiting.id}/decision`, { action: 'assign' }),
    400,
    'request_validation_failed',
    'body.transform_id',
  );
  fails(
    await srv.post(`${one}/deferrals/${waiting.id}/decision`, { action: 'generate', transform_id: tr!.id }),
    400,
    'request_validation_failed',
    'body.transform_id',
  );
  fails(
    await srv.post(`${one}/deferrals/${waiting.id}/decision`, { action: 'maybe' }),
    400,
    'request_validation_failed',
    'body.action',
  );
  const assigned = ok(
    await srv.post(`${one}/deferrals/${waiting.id}/decision`, { action: 'assign', transform_id: tr!.id }),
  );
  assert.equal(assigned.transform_id, tr!.id);
  assert.equal(assigned.reason, 'catching_up');
  assert.ok(assigned.next_action_at);
  assert.equal(s.transforms.deferral(view.id, waiting.id)!.decision?.action, 'assign');
  const excluded = ok(
    await srv.post(`${one}/deferrals/${waiting.id}/decision`, { action: 'exclude', reason: 'test traffic' }),
  );
  assert.equal(excluded.exclusion_reason, 'test traffic');
  assert.ok(excluded.resolved_at);
  assert.equal(ok(await srv.get(one)).waiting_shapes_count, 0);

  // Deleting a transform drops the versions it covered.
  const extra = ok(await srv.post(`${one}/transforms`, { transform_script: SCRIPT }), 201);
  ok(await srv.delete(`${one}/transforms/${tr!.id}`));
  assert.deepEqual(ok(await srv.get(`${one}/versions`)), []);
  assert.equal(ok(await srv.get(`${one}/deferrals/${served.id}`)).transform_id, null);
  assert.ok(extra.id);
});
