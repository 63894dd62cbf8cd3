import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { refusalEndedAt } from '../../src/attention/providers.js';
import { TestServer } from '../helpers/server.js';
import { fails, ok, scopedToken } from '../catalog/helpers.js';
import { createIngestKey, ingest } from '../ingest/helpers.js';
import { viewSetup } from '../transform/view-helpers.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const MIN = 60_000;

test('attention: ingest refusals while refusing, then resolved with ended_at, gone after 24 hours; a metric in error', async (t) => {
  const clock = new ManualClock(T0 + 5_000);
  const srv = await TestServer.start({ clock, env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const fx = await createIngestKey(srv, 'attention');
  const path = `/v1/projects/${fx.projectId}/attention`;
  assert.deepEqual(ok(await srv.get(path)), [], 'nothing needs attention');

  // Two refused requests (not JSON): the sender loses data unless it acts.
  for (let i = 0; i < 2; i++)
    assert.equal(
      (await ingest(srv.url, `key=${fx.secret}`, '{"a":', { 'content-type': 'application/json' })).status,
      400,
    );
  const now = ok(await srv.get(path));
  assert.deepEqual(now, [
    {
      object: 'attention_item',
      type: 'ingest_refusals',
      tier: 'losing_data',
      resource_id: null,
      resource_name: null,
      count: 2,
      since: new Date(T0).toISOString(),
      ended_at: null,
      detail: 'request',
    },
  ]);

  // Spool-full refusals are capacity refusals (counted over the last hour).
  srv.sluice.services.telemetry.recordError(fx.projectId, 'spool_full_ingest_queue');
  const both = ok(await srv.get(path));
  assert.deepEqual(
    both.map((i: any) => [i.type, i.tier, i.count, i.detail]),
    [
      ['capacity_refusals', 'losing_data', 1, 'spool_full'],
      ['ingest_refusals', 'losing_data', 2, 'request'],
    ],
  );

  // Ten quiet minutes: resolved, ended to the minute.
  clock.set(T0 + 10 * MIN);
  await srv.sluice.services.telemetry.flush();
  const later = ok(await srv.get(path)).filter((i: any) => i.type === 'ingest_refusals');
  assert.equal(later[0].tier, 'resolved');
  assert.equal(later[0].ended_at, new Date(T0 + MIN).toISOString());
  assert.equal(later[0].count, 2);
  // A metric the service put in error shows as stalled, and sorts after losing_data/firing, before resolved.
  const setup = await viewSetup(srv);
  const view = ok(
    await srv.post(setup.views, {
      name: 'V',
      collection_id: setup.collection.id,
      output_schema: [{ name: 'n', type: 'number' }],
      transform_script: 'function transform(r) { return { n: 1 }; }',
      transform_mode: 'manual',
    }),
    201,
  );
  const metric = ok(
    await srv.post(`/v1/projects/${setup.project.id}/metrics`, { name: 'Broken', view_id: view.id }),
    201,
  );
  await srv.sluice.services.metrics.patchMetric(metric.id, () => ({
    status: 'error',
    error_message: 'a partial could not be read',
  }));
  const items = ok(await srv.get(`/v1/projects/${setup.project.id}/attention`));
  assert.deepEqual(
    items.map((i: any) => [i.type, i.tier, i.resource_id, i.resource_name]),
    [['metric_error', 'stalled', metric.id, 'Broken']],
  );

  // After 24 hours the refusals are gone.
  clock.set(T0 + 25 * 60 * MIN);
  assert.deepEqual(ok(await srv.get(path)), []);
  // Scope: projects:read; another project's id is 404.
  const none = await scopedToken(srv, { metrics: ['read'] });
  fails(await srv.get(path, { token: none }), 403, 'forbidden');
  fails(await srv.get('/v1/projects/prj_00000000000000000000/attention'), 404, 'not_found');
});

test('attention: when resolved refusals are shown to have ended', () => {
  const now = Date.parse('2026-03-01T12:30:00Z');
  assert.equal(
    refusalEndedAt(Date.parse('2026-03-01T12:00:00Z'), now),
    '2026-03-01T12:01:00.000Z',
    'within the hour: to the minute',
  );
  assert.equal(
    refusalEndedAt(Date.parse('2026-03-01T10:14:00Z'), now),
    '2026-03-01T11:00:00.000Z',
    'earlier: to the end of the hour',
  );
});
