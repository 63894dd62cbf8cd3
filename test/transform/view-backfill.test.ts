import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';
import { ok } from '../catalog/helpers.js';

const ONE_ROW = 'function transform(r) { return { rid: r.id }; }';

test('a batch that ran before the view existed and commits after its backfill completed is backfilled too', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  t.after(() => srv.stop());
  const { spool, pipeline, viewBackfill } = srv.sluice.services;
  const fx = await createIngestKey(srv, 'late batch');
  const q = `key=${fx.secret}&collection=orders`;
  // Hold the first batch's commit: it has run on the worker without the view (none existed).
  let held!: () => void;
  const gate = new Promise<void>((r) => (held = r));
  let reached!: () => void;
  const atCommit = new Promise<void>((r) => (reached = r));
  const complete = spool.complete.bind(spool);
  let calls = 0;
  spool.complete = async (lease, stage) => {
    if (calls++ === 0) {
      reached();
      await gate;
    }
    return complete(lease, stage);
  };
  assert.equal(
    (await ingest(srv.url, q, ndjson([{ id: 'early' }]), { 'content-type': 'application/x-ndjson' })).status,
    202,
  );
  await atCommit;
  const [collection] = ok(await srv.get(`/v1/projects/${fx.projectId}/collections`));
  const views = `/v1/projects/${fx.projectId}/views`;
  const view = ok(
    await srv.post(views, {
      name: 'One',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: ONE_ROW,
      output_schema: [{ name: 'rid', type: 'string' }],
    }),
    201,
  );
  // Nothing committed yet: the backfill finds no file and completes.
  for (
    let i = 0;
    i < 200 && ok(await srv.get(`${views}/${view.id}/transforms`))[0].backfill_status !== 'completed';
    i++
  )
    await new Promise((r) => setTimeout(r, 10));
  held();
  assert.ok(await pipeline!.idle(20_000));
  const rids = async () => {
    await viewBackfill!.idle();
    return ok(await srv.get(`${views}/${view.id}/records`)).map((r: any) => r.rid);
  };
  for (let i = 0; i < 100 && (await rids()).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(await rids(), ['early'], 'the record of the late batch reaches the view (by backfill)');
  assert.equal((ok(await srv.get(`${views}/${view.id}/transforms`)) as any[])[0].backfill_status, 'completed');
  // Live records after it: once each.
  assert.equal(
    (await ingest(srv.url, q, ndjson([{ id: 'live' }]), { 'content-type': 'application/x-ndjson' })).status,
    202,
  );
  assert.ok(await pipeline!.idle(20_000));
  assert.deepEqual((await rids()).sort(), ['early', 'live']);
});
