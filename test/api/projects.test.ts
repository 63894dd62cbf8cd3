import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ManualClock } from '../../src/clock.js';

const DAY = 24 * 3600 * 1000;

test('projects: create, get, list order rules, update, validation edges', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());

  const created = await srv.post('/v1/projects', { name: 'Bravo', start_at: '2026-01-01T00:00:00Z' });
  assert.equal(created.status, 201);
  const p = created.body.data;
  assert.match(p.id, /^prj_[0-9a-z]{20}$/);
  assert.equal(p.object, 'project');
  assert.equal(p.name, 'Bravo');
  assert.equal(p.start_at, '2026-01-01T00:00:00.000Z');
  assert.equal(p.team_name, 'Team');
  assert.equal(p.late_data_window_minutes, 0);
  assert.equal(p.deleted_at, null);
  assert.equal(p.last_activity_at, null);
  assert.equal(p.server_endpoint, srv.config.publicUrl);
  for (const f of [
    'team_id',
    'trial_expires_at',
    'created_at',
    'updated_at',
    'queued_server_count',
    'storage_gb',
    'billing_period_server_months',
    'billing_updated_at',
  ]) {
    assert.ok(f in p, `project has ${f}`);
  }
  await srv.post('/v1/projects', { name: 'alpha' });
  await srv.post('/v1/projects', { name: 'Charlie' });

  // Neither sort nor order_by: ascending by name (the projects rule).
  const plain = await srv.get('/v1/projects');
  assert.deepEqual(
    plain.body.data.map((x: any) => x.name),
    ['alpha', 'Bravo', 'Charlie'],
  );
  // order_by given without sort: the endpoint default sort, desc.
  const byName = await srv.get('/v1/projects?order_by=name');
  assert.deepEqual(
    byName.body.data.map((x: any) => x.name),
    ['Charlie', 'Bravo', 'alpha'],
  );
  const byCreated = await srv.get('/v1/projects?order_by=created_at&sort=asc');
  assert.deepEqual(
    byCreated.body.data.map((x: any) => x.name),
    ['Bravo', 'alpha', 'Charlie'],
  );

  const got = await srv.get(`/v1/projects/${p.id}`);
  assert.equal(got.status, 200);
  assert.equal(got.body.data.id, p.id);

  // Name edges: 1 and 60 accepted, 0 and 61 refused naming the field.
  for (const [name, status] of [
    ['x', 200],
    ['n'.repeat(60), 200],
    ['', 400],
    ['n'.repeat(61), 400],
  ] as const) {
    const r = await srv.post(`/v1/projects/${p.id}`, { name });
    assert.equal(r.status, status, `name of ${name.length}`);
    if (status === 400) {
      assert.equal(r.body.error?.code, 'request_validation_failed');
      assert.equal(r.body.error?.details[0].field, 'body.name');
    }
  }
  for (const [v, status] of [
    [0, 200],
    [129600, 200],
    [-1, 400],
    [129601, 400],
    [1.5, 400],
    ['10', 400],
  ] as const) {
    const r = await srv.post(`/v1/projects/${p.id}`, { late_data_window_minutes: v });
    assert.equal(r.status, status, `late_data_window_minutes ${v}`);
    if (status === 200) assert.equal(r.body.data.late_data_window_minutes, v);
  }
  const unknown = await srv.post(`/v1/projects/${p.id}`, { name: 'ok', colour: 'red' });
  assert.equal(unknown.status, 400);
  assert.deepEqual(unknown.body.error?.details, [{ field: 'body.colour', message: 'is not a known field; remove it' }]);
  const badDate = await srv.post(`/v1/projects/${p.id}`, { start_at: 'yesterday' });
  assert.equal(badDate.status, 400);
  assert.equal(badDate.body.error?.details[0].field, 'body.start_at');
  const deletedAtValue = await srv.post(`/v1/projects/${p.id}`, { deleted_at: '2026-01-01T00:00:00Z' });
  assert.equal(deletedAtValue.status, 400);
  const missingName = await srv.post('/v1/projects', {});
  assert.equal(missingName.status, 400);
  assert.equal(missingName.body.error?.details[0].field, 'body.name');

  const wrongPrefix = await srv.get('/v1/projects/src_aaaaaaaaaaaaaaaaaaaa');
  assert.equal(wrongPrefix.status, 404);
  assert.equal(wrongPrefix.body.error?.code, 'not_found');
  const absent = await srv.get('/v1/projects/prj_aaaaaaaaaaaaaaaaaaaa');
  assert.equal(absent.status, 404);
  assert.equal(absent.body.error?.code, 'not_found');
});

test("projects: another team's project answers 404", async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const s = srv.sluice.services;
  const other = await s.accounts.createUser({ email: 'other@example.com', password: 'secret-password' });
  const team = await s.accounts.createTeam({ name: 'Other', billing_email: other.email, ownerUserId: other.id });
  const foreign = await s.projects.create(team.id, { name: 'Theirs' });
  assert.equal((await srv.get(`/v1/projects/${foreign.id}`)).status, 404);
  assert.equal((await srv.post(`/v1/projects/${foreign.id}`, { name: 'Mine' })).status, 404);
  assert.equal((await srv.delete(`/v1/projects/${foreign.id}`)).status, 404);
  assert.equal((await srv.get('/v1/projects')).body.data.length, 0);
});

test('projects: scheduled deletion, restore, force delete', async (t) => {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));
  const srv = await TestServer.start({ clock });
  t.after(() => srv.stop());
  const p = (await srv.post('/v1/projects', { name: 'Doomed' })).body.data;

  const del = await srv.delete(`/v1/projects/${p.id}`);
  assert.equal(del.status, 200);
  assert.equal(del.body.data.deleted_at, '2026-03-01T00:00:00.000Z');
  assert.equal((await srv.get('/v1/projects')).body.data.length, 0, 'hidden from the list at once');
  const changeWhileScheduled = await srv.post(`/v1/projects/${p.id}`, { name: 'New' });
  assert.equal(changeWhileScheduled.status, 409);

  clock.advance(6 * DAY);
  const restored = await srv.post(`/v1/projects/${p.id}`, { deleted_at: null });
  assert.equal(restored.status, 200);
  assert.equal(restored.body.data.deleted_at, null);
  assert.equal((await srv.get('/v1/projects')).body.data.length, 1);

  const forced = await srv.delete(`/v1/projects/${p.id}/force`);
  assert.equal(forced.status, 200);
  assert.equal(forced.body.data, null);
  assert.equal((await srv.get(`/v1/projects/${p.id}`)).status, 404);
});

test('projects: pagination forward and back stays correct across inserts and deletes', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const names = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7'];
  const ids: Record<string, string> = {};
  for (const name of names) ids[name] = (await srv.post('/v1/projects', { name })).body.data.id;

  const q = '/v1/projects?order_by=name&sort=asc&limit=3';
  const first = await srv.get(q);
  assert.deepEqual(
    first.body.data.map((x: any) => x.name),
    ['a1', 'a2', 'a3'],
  );
  assert.equal(first.body.pagination?.prev_cursor, null);
  assert.ok(first.body.pagination?.next_cursor);

  // Between pages: insert before the cursor, delete just after it.
  await srv.post('/v1/projects', { name: 'a0' });
  await srv.delete(`/v1/projects/${ids.a4}`);
  const second = await srv.get(`${q}&after=${first.body.pagination!.next_cursor}`);
  assert.deepEqual(
    second.body.data.map((x: any) => x.name),
    ['a5', 'a6', 'a7'],
  );
  assert.equal(second.body.pagination?.next_cursor, null);

  // Insert at the end, then page forward from the last page.
  await srv.post('/v1/projects', { name: 'a8' });
  const back = await srv.get(`${q}&before=${second.body.pagination!.prev_cursor}`);
  // Items strictly before a5 are a0..a3: the last three of them.
  assert.deepEqual(
    back.body.data.map((x: any) => x.name),
    ['a1', 'a2', 'a3'],
  );
  assert.ok(back.body.pagination?.prev_cursor, 'a0 is still before');
  const front = await srv.get(`${q}&before=${back.body.pagination!.prev_cursor}`);
  assert.deepEqual(
    front.body.data.map((x: any) => x.name),
    ['a0'],
  );
  assert.equal(front.body.pagination?.prev_cursor, null);
  const tail = await srv.get(`${q}&after=${second.body.pagination!.prev_cursor}`);
  assert.deepEqual(
    tail.body.data.map((x: any) => x.name),
    ['a6', 'a7', 'a8'],
  );

  // A cursor only works with the ordering it was issued for.
  const mismatch = await srv.get(
    `/v1/projects?order_by=created_at&sort=asc&limit=3&after=${first.body.pagination!.next_cursor}`,
  );
  assert.equal(mismatch.status, 400);
  assert.equal(mismatch.body.error?.code, 'request_invalid_cursor');
});

test('projects survive a restart exactly', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const p = (await srv.post('/v1/projects', { name: 'Keep', start_at: '2025-05-05T05:05:05Z' })).body.data;
  await srv.post(`/v1/projects/${p.id}`, { late_data_window_minutes: 90 });
  const before = (await srv.get(`/v1/projects/${p.id}`)).body.data;
  await srv.restart();
  const after = (await srv.get(`/v1/projects/${p.id}`)).body.data;
  assert.deepEqual(after, { ...before, server_endpoint: srv.config.publicUrl });
});
