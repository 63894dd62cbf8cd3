import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';
import { fails, ok } from '../catalog/helpers.js';

/** Records a view reads, end to end: ingest → collection files → the view's script → view files → GET records. */

async function setup(srv: TestServer) {
  const fx = await createIngestKey(srv, 'views e2e');
  const q = `key=${fx.secret}&collection=orders`;
  // The collection is created when data first arrives.
  assert.equal(
    (
      await ingest(srv.url, q, ndjson([{ id: 0, amount: 1, region: 'eu', timestamp: '2026-01-01T00:00:00Z' }]), {
        'content-type': 'application/x-ndjson',
      })
    ).status,
    202,
  );
  assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
  const [collection] = ok(await srv.get(`/v1/projects/${fx.projectId}/collections`));
  return { fx, q, collection, views: `/v1/projects/${fx.projectId}/views` };
}

const PROJECT =
  'function transform(r, ctx) { return { order_id: r.id, amount: r.amount, region: r.region, when: r.timestamp, version: ctx.schema_version }; }';
const OUT = [
  { name: 'order_id', type: 'number' },
  { name: 'amount', type: 'number' },
  { name: 'region', type: 'string' },
  { name: 'when', type: 'date' },
  { name: 'version', type: 'string' },
];

test("a manual view turns every acknowledged record into its output rows exactly once; a failing view is only that view's error", async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '2' } });
  t.after(() => srv.stop());
  const { q, collection, views } = await setup(srv);
  const view = ok(
    await srv.post(views, {
      name: 'Orders',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: PROJECT,
      output_schema: OUT,
    }),
    201,
  );
  // Splits one record into two and skips the ones without a region.
  const lines = ok(
    await srv.post(views, {
      name: 'Lines',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script:
        'function transform(r) { if (!r.region) return null; return [{ k: r.id, half: r.amount / 2 }, { k: r.id, half: r.amount / 2 }]; }',
    }),
    201,
  );
  const broken = ok(
    await srv.post(views, {
      name: 'Broken',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script:
        'function transform(r) { if (r.id === 57) throw new TypeError("bad id " + r.id); return { id: r.id }; }',
      output_schema: [{ name: 'id', type: 'number' }],
    }),
    201,
  );
  const child = ok(
    await srv.post(views, {
      name: 'Big orders',
      parent_view_id: view.id,
      transform_mode: 'manual',
      transform_script:
        'function transform(o) { return o.amount >= 50 ? { order_id: o.order_id, amount: o.amount } : null; }',
      output_schema: [
        { name: 'order_id', type: 'number' },
        { name: 'amount', type: 'number' },
      ],
    }),
    201,
  );

  const records = [];
  for (let i = 1; i <= 100; i++)
    records.push({
      id: i,
      amount: i,
      ...(i % 10 === 0 ? {} : { region: i % 2 ? 'eu' : 'us' }),
      timestamp: new Date(Date.UTC(2026, 0, 2, 0, i)).toISOString(),
    });
  for (let i = 0; i < 100; i += 20) {
    const r = await ingest(srv.url, q, ndjson(records.slice(i, i + 20)), { 'content-type': 'application/x-ndjson' });
    assert.equal(r.status, 202);
  }
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000), 'the pipeline drains the spool');
  await srv.sluice.services.viewBackfill!.idle();

  // Newest first, every record once, values coerced to the output schema.
  const rows: any[] = [];
  let after: string | null = null;
  do {
    const page: any = await srv.get(`${views}/${view.id}/records?limit=40${after ? `&after=${after}` : ''}`);
    assert.equal(page.status, 200, JSON.stringify(page.body));
    rows.push(...page.body.data);
    after = page.body.pagination?.next_cursor ?? null;
  } while (after);
  assert.deepEqual(
    rows.map((r) => r.order_id),
    Array.from({ length: 101 }, (_, i) => 100 - i),
    'every record, newest first: the 100 sent after the view was created, and the one before it (backfilled)',
  );
  assert.equal(rows[0].when, '2026-01-02T01:40:00.000Z');
  assert.equal(rows[0].region, null, 'a missing key is null');
  assert.equal(rows[1].region, 'eu');
  assert.match(rows[1].version, /^sch_/, "ctx.schema_version names the record's schema version");

  const lineRows = ok(await srv.get(`${views}/${lines.id}/records?limit=200`));
  assert.equal(lineRows.length, 182, 'two outputs per record with a region, none for the 10 without');
  const detail = ok(await srv.get(`${views}/${lines.id}`));
  assert.deepEqual(
    detail.output_schema.map((f: any) => [f.name, f.type]),
    [
      ['k', 'number'],
      ['half', 'number'],
    ],
    'inferred from the first outputs',
  );

  const bigs = ok(await srv.get(`${views}/${child.id}/records?limit=200`));
  assert.deepEqual(
    bigs.map((r: any) => r.order_id),
    Array.from({ length: 51 }, (_, i) => 100 - i),
    "a view of a view reads its parent's outputs",
  );

  const b = ok(await srv.get(`${views}/${broken.id}`));
  assert.equal(b.status, 'error');
  assert.match(b.error_message, /record \d+.*TypeError: bad id 57/);
  const [bt] = ok(await srv.get(`${views}/${broken.id}/transforms`));
  assert.equal(bt.status, 'error');
  assert.equal(ok(await srv.get(`${views}/${view.id}`)).status, 'active', 'other views go on');
  const fileRows = srv.sluice.services.schema.manifests(collection.id).reduce((n, m) => n + m.rows, 0);
  assert.equal(fileRows, 101, 'the collection files hold every record, the failing view notwithstanding');
});

test('a script that loops or exhausts memory fails its view, not the worker pool; the server keeps processing', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  t.after(() => srv.stop());
  const { q, collection, views } = await setup(srv);
  const loop = ok(
    await srv.post(views, {
      name: 'Loop',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: 'function transform(r) { for (;;) {} }',
    }),
    201,
  );
  const bomb = ok(
    await srv.post(views, {
      name: 'Bomb',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: 'function transform(r) { const a = []; for (;;) a.push(new Array(1e6).fill(r.id)); }',
    }),
    201,
  );
  const fine = ok(
    await srv.post(views, {
      name: 'Fine',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: 'function transform(r) { return { id: r.id }; }',
    }),
    201,
  );
  assert.equal(
    (await ingest(srv.url, q, ndjson([{ id: 1 }, { id: 2 }]), { 'content-type': 'application/x-ndjson' })).status,
    202,
  );
  assert.ok(await srv.sluice.services.pipeline!.idle(60_000));
  await srv.sluice.services.viewBackfill!.idle();
  const l = ok(await srv.get(`${views}/${loop.id}`));
  assert.equal(l.status, 'error');
  assert.match(l.error_message, /time|timeout/i);
  const m = ok(await srv.get(`${views}/${bomb.id}`));
  assert.equal(m.status, 'error');
  // Contained by the memory limit, or by the time limit first on a machine short of CPU.
  assert.match(m.error_message, /memory|time/i);
  assert.deepEqual(
    ok(await srv.get(`${views}/${fine.id}/records`)).map((r: any) => r.id),
    [2, 1, 0],
  );
  // Later batches flow; the failed views are skipped until their script changes.
  assert.equal((await ingest(srv.url, q, ndjson([{ id: 3 }]), { 'content-type': 'application/x-ndjson' })).status, 202);
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  assert.deepEqual(
    ok(await srv.get(`${views}/${fine.id}/records`)).map((r: any) => r.id),
    [3, 2, 1, 0],
  );
  fails(await srv.get(`${views}/${fine.id}/records?limit=0`), 400, 'request_validation_failed');
  const dir = srv.sluice.services.views.viewDir(fine);
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.endsWith('.tmp')),
    [],
  );
});

test('a view created on a collection with data backfills it in the background, and live records keep flowing; rebackfill runs it again without duplicates', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '2' } });
  t.after(() => srv.stop());
  const { q, collection, views } = await setup(srv);
  for (let i = 1; i <= 60; i += 20) {
    const batch = Array.from({ length: 20 }, (_, k) => ({
      id: i + k,
      amount: i + k,
      region: 'eu',
      timestamp: new Date(Date.UTC(2026, 0, 3, 0, i + k)).toISOString(),
    }));
    assert.equal((await ingest(srv.url, q, ndjson(batch), { 'content-type': 'application/x-ndjson' })).status, 202);
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
  }
  const view = ok(
    await srv.post(views, {
      name: 'Orders',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: PROJECT,
      output_schema: OUT,
    }),
    201,
  );
  assert.equal(
    (
      await ingest(srv.url, q, ndjson([{ id: 61, amount: 61, region: 'us', timestamp: '2026-01-04T00:00:00Z' }]), {
        'content-type': 'application/x-ndjson',
      })
    ).status,
    202,
  );
  assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
  const ids = async () => {
    await srv.sluice.services.viewBackfill!.idle();
    return ok(await srv.get(`${views}/${view.id}/records?limit=200`))
      .map((r: any) => r.order_id)
      .sort((a: number, b: number) => a - b);
  };
  const all = Array.from({ length: 62 }, (_, i) => i);
  // Wait for the backfill (it may still be starting when the first idle() returns).
  for (let i = 0; i < 100 && (await ids()).length < 62; i++) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(await ids(), all, 'every record once: the earlier ones by backfill, the later one live');
  const [tr] = ok(await srv.get(`${views}/${view.id}/transforms`));
  assert.equal(tr.backfill_status, 'completed');
  assert.ok(tr.backfill_file_count >= 4 && tr.backfill_files_done === tr.backfill_file_count, JSON.stringify(tr));
  const v = ok(await srv.get(`${views}/${view.id}`));
  assert.equal(v.backfill_files_done, v.backfill_file_count);

  ok(await srv.post(`${views}/${view.id}/transforms/${tr.id}/rebackfill`, {}));
  for (
    let i = 0;
    i < 100 && ok(await srv.get(`${views}/${view.id}/transforms/${tr.id}`)).backfill_status !== 'completed';
    i++
  )
    await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(await ids(), all, 'a rebackfill replaces what the backfill wrote');
});
