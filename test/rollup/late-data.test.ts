import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { fails, ok } from '../catalog/helpers.js';
import { countsAndSums, ingestProject, rollupsOf, settle } from './rollup-helpers.js';

/** Issue 12, Deliver 7: events behind the watermark by more than the window are stored but kept out of the metrics, recorded, and folded back on request. */

const MIN = 60_000;

/** Records counted by the metric over all time (its total series, day tier). */
async function counted(srv: TestServer, metricId: string): Promise<number> {
  const byDay = (await countsAndSums(srv, metricId, 1, 'day')).get('__total__') ?? new Map();
  return [...byDay.values()].reduce((n, [c]) => n + c, 0);
}

test('late data: events behind the late window are kept out and recorded; receipt-timed ones never are; re_backfill folds them back once', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { fx, project, send } = await ingestProject(srv, 'late data', 'events');
  ok(await srv.post(project, { late_data_window_minutes: 60 }));

  // The view and metric exist first, so every batch below is counted live.
  await send([{ n: 0 }]);
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  const [collection] = ok(await srv.get(`${project}/collections`));
  const view = ok(
    await srv.post(`${project}/views`, {
      name: 'Events',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: 'function transform(r) { return { n: r.n }; }',
      output_schema: [{ name: 'n', type: 'number' }],
    }),
    201,
  );
  // The view's own backfill has the first record before the metric plans its backfill.
  for (let i = 0; i < 200 && ok(await srv.get(`${project}/views/${view.id}/records`)).length === 0; i++)
    await new Promise((r) => setTimeout(r, 50));
  const metric = ok(await srv.post(`${project}/metrics`, { name: 'Events', view_id: view.id, value_field: 'n' }), 201);
  await settle(srv, `${project}/metrics`, [metric.id]);
  assert.equal(await counted(srv, metric.id), 1);

  const now = Date.now();
  const at = (ms: number) => new Date(ms).toISOString();
  await send(Array.from({ length: 10 }, (_, i) => ({ n: 1, timestamp: at(now - 1000 - i) })));
  await settle(srv, `${project}/metrics`, [metric.id]);
  assert.equal(await counted(srv, metric.id), 11, 'on time');
  assert.deepEqual(ok(await srv.get(`${project}/late_data`)), []);

  // One request: 5 within the 60-minute window, 7 three hours back, 3 timed by their receipt.
  const late = Array.from({ length: 7 }, (_, i) => ({ n: 100, timestamp: at(now - 3 * 3_600_000 - i * MIN) }));
  await send([
    ...Array.from({ length: 5 }, () => ({ n: 10, timestamp: at(now - 30 * MIN) })),
    ...late,
    { n: 1000 },
    { n: 1000 },
    { n: 1000 },
  ]);
  await settle(srv, `${project}/metrics`, [metric.id]);
  assert.equal(
    await counted(srv, metric.id),
    11 + 5 + 3,
    'the window and receipt-timed records are counted; the late ones are not',
  );
  const [file] = ok(await srv.get(`${project}/late_data?refolded=false`));
  assert.deepEqual(
    [
      file.object,
      file.view_id,
      file.view_name,
      file.excluded_count,
      file.min_event_at,
      file.max_event_at,
      file.refold_queued_at,
      file.refolded_at,
    ],
    ['late_data_file', view.id, 'Events', 7, at(now - 3 * 3_600_000 - 6 * MIN), at(now - 3 * 3_600_000), null, null],
  );
  assert.match(file.id, /^ldf_[0-9a-z]{20}$/);
  const below = Date.parse(file.exclusion_below);
  assert.ok(
    below <= now - 60 * MIN && below > now - 62 * MIN,
    `the boundary is the watermark's minute less the window (${file.exclusion_below})`,
  );
  assert.deepEqual(ok(await srv.get(`${project}/late_data?refolded=true`)), []);
  // The events are stored: the view has every record.
  assert.equal(
    ok(await srv.get(`/v1/projects/${fx.projectId}/views/${view.id}/records?limit=100`)).length,
    1 + 10 + 15,
  );

  const queued = ok(await srv.post(`${project}/late_data/${file.id}/re_backfill`, {}));
  assert.ok(queued.refold_queued_at);
  await srv.sluice.services.lateRefold!.idle();
  await rollupsOf(srv).idle();
  assert.equal(await counted(srv, metric.id), 26, 'folded back');
  const [done] = ok(await srv.get(`${project}/late_data?refolded=true`));
  assert.ok(done.refolded_at);
  fails(await srv.post(`${project}/late_data/${file.id}/re_backfill`, {}), 409, 'conflict');
  fails(await srv.post(`${project}/late_data/ldf_00000000000000000000/re_backfill`, {}), 404, 'not_found');
  fails(await srv.get(`${project}/late_data?refolded=maybe`), 400, 'request_validation_failed', 'query.refolded');

  // A restart keeps everything as it is (marks make a second fold impossible).
  await srv.restart();
  await rollupsOf(srv).idle();
  assert.equal(await counted(srv, metric.id), 26);
});
