import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { fails, ok } from '../catalog/helpers.js';

/**
 * An update naming nothing to change is 400 on every resource (as for teams, keys, roles, users),
 * rather than a silent no-op that still moves `updated_at` and so trips other writers'
 * `expected_updated_at`.
 */
test('project, source and collection updates need at least one field to change', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const project = ok(await srv.post('/v1/projects', { name: 'Shop' }), 201);
  const p = `/v1/projects/${project.id}`;
  const source = ok(await srv.post(`${p}/sources`, { name: 'web' }), 201);
  const col = ok(await srv.post(`${p}/collections`, { name: 'Events', source_id: source.id }), 201);

  for (const [path, before] of [
    [p, project],
    [`${p}/sources/${source.id}`, source],
    [`${p}/collections/${col.id}`, col],
  ] as const) {
    fails(await srv.post(path, {}), 400, 'request_validation_failed', 'body');
    fails(await srv.post(path), 400, 'request_validation_failed', 'body');
    assert.equal(ok(await srv.get(path)).updated_at, before.updated_at, `${path}: nothing changed`);
  }
  // expected_updated_at alone guards a change but is not one.
  fails(
    await srv.post(`${p}/collections/${col.id}`, { expected_updated_at: col.updated_at }),
    400,
    'request_validation_failed',
    'body',
  );
  // One real field is enough.
  assert.equal(ok(await srv.post(p, { late_data_window_minutes: 5 })).late_data_window_minutes, 5);
  assert.equal(ok(await srv.post(`${p}/sources/${source.id}`, { name: 'web2' })).name, 'web2');
  assert.equal(
    ok(await srv.post(`${p}/collections/${col.id}`, { schema_max_depth: 3, expected_updated_at: col.updated_at }))
      .schema_max_depth,
    3,
  );
});
