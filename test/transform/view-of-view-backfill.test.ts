import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';
import { ok } from '../catalog/helpers.js';

/** A view of a view gets its parent's existing output by backfill (docs/views.md, "Backfill"). */

const PARENT = 'function transform(r) { return { order_id: r.id, amount: r.amount, when: r.timestamp }; }';
const PARENT_OUT = [
  { name: 'order_id', type: 'number' },
  { name: 'amount', type: 'number' },
  { name: 'when', type: 'date' },
];
// Records what it was given, so live and backfilled inputs can be compared.
const CHILD =
  'function transform(o) { return { oid: o.order_id, twice: o.amount * 2, when: o.when, input: Object.keys(o).join(",") + ":" + typeof o.when }; }';
const CHILD_OUT = [
  { name: 'oid', type: 'number' },
  { name: 'twice', type: 'number' },
  { name: 'when', type: 'date' },
  { name: 'input', type: 'string' },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function send(srv: TestServer, q: string, from: number, n: number): Promise<void> {
  const batch = Array.from({ length: n }, (_, k) => ({
    id: from + k,
    amount: from + k,
    timestamp: new Date(Date.UTC(2026, 0, 3, 0, from + k)).toISOString(),
  }));
  assert.equal((await ingest(srv.url, q, ndjson(batch), { 'content-type': 'application/x-ndjson' })).status, 202);
  assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
}

async function transformOf(srv: TestServer, views: string, id: string): Promise<any> {
  return ok(await srv.get(`${views}/${id}/transforms`))[0];
}

async function waitBackfill(srv: TestServer, views: string, id: string, until: (t: any) => boolean): Promise<any> {
  let t = await transformOf(srv, views, id);
  for (let i = 0; i < 400 && !until(t); i++) {
    await sleep(25);
    t = await transformOf(srv, views, id);
  }
  return t;
}

async function allRecords(srv: TestServer, views: string, id: string): Promise<any[]> {
  await srv.sluice.services.viewBackfill!.idle();
  return ok(await srv.get(`${views}/${id}/records?limit=200&sort=asc`));
}

test("a view of a view backfills its parent's existing output (parent backfill and live files), resumes after a restart, and then runs live", async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '2' } });
  t.after(() => srv.stop());
  const fx = await createIngestKey(srv, 'view of view');
  const q = `key=${fx.secret}&collection=orders`;
  const views = `/v1/projects/${fx.projectId}/views`;
  for (let i = 1; i <= 30; i += 10) await send(srv, q, i, 10);
  const [collection] = ok(await srv.get(`/v1/projects/${fx.projectId}/collections`));
  const parent = ok(
    await srv.post(views, {
      name: 'Orders',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: PARENT,
      output_schema: PARENT_OUT,
    }),
    201,
  );
  assert.equal(
    (await waitBackfill(srv, views, parent.id, (x) => x.backfill_status === 'completed')).backfill_status,
    'completed',
  );
  // Two more batches reach the parent live: its files now come from its backfill and from batches.
  await send(srv, q, 31, 10);
  await send(srv, q, 41, 10);
  const parentFiles = srv.sluice.services.views.store.filesOf(parent.id);
  assert.deepEqual([...new Set(parentFiles.map((f) => f.origin))].sort(), ['backfill', 'batch']);
  assert.ok(parentFiles.length >= 5, JSON.stringify(parentFiles.map((f) => f.id)));

  // Stop the child's backfill after two files, as a crash would.
  const backfiller = srv.sluice.services.viewBackfill! as unknown as { file: (...a: unknown[]) => Promise<void> };
  const file = backfiller.file.bind(backfiller);
  let calls = 0;
  backfiller.file = async (...a) => {
    if (calls++ >= 2) throw new Error('stopped by the test');
    return file(...a);
  };
  const child = ok(
    await srv.post(views, {
      name: 'Doubled',
      parent_view_id: parent.id,
      transform_mode: 'manual',
      transform_script: CHILD,
      output_schema: CHILD_OUT,
    }),
    201,
  );
  const mid = await waitBackfill(srv, views, child.id, (x) => x.backfill_files_done === 2 && calls > 2);
  assert.equal(mid.backfill_status, 'running');
  assert.equal(mid.backfill_files_done, 2);
  assert.equal(
    mid.backfill_file_count,
    parentFiles.length,
    "every parent file is the backfill's: the child never ran live",
  );
  const before = new Map(srv.sluice.services.views.store.filesOf(child.id).map((f) => [f.id, f.created_at]));
  assert.equal(before.size, 2);

  await srv.restart();
  const done = await waitBackfill(srv, views, child.id, (x) => x.backfill_status === 'completed');
  assert.equal(done.backfill_status, 'completed', JSON.stringify(done));
  assert.equal(done.backfill_files_done, parentFiles.length);
  for (const f of srv.sluice.services.views.store.filesOf(child.id)) {
    if (before.has(f.id))
      assert.equal(f.created_at, before.get(f.id), 'a file done before the restart is not transformed again');
  }
  const rows = await allRecords(srv, views, child.id);
  assert.deepEqual(
    rows.map((r) => r.oid),
    Array.from({ length: 50 }, (_, i) => i + 1),
    'every parent row once',
  );
  assert.deepEqual(
    rows.map((r) => r.twice),
    rows.map((r) => r.oid * 2),
  );
  assert.equal(rows[0].when, '2026-01-03T00:01:00.000Z');
  assert.deepEqual(
    new Set(rows.map((r) => r.input)),
    new Set(['order_id,amount,when:string']),
    "the parent's output row, dates as ISO strings",
  );

  // Live records after it: once each, given the same record form as the backfill.
  await send(srv, q, 51, 5);
  const after = await allRecords(srv, views, child.id);
  assert.deepEqual(
    after.map((r) => r.oid),
    Array.from({ length: 55 }, (_, i) => i + 1),
  );
  assert.deepEqual(
    new Set(after.map((r) => r.input)),
    new Set(['order_id,amount,when:string']),
    'live inputs look like backfilled ones',
  );
  const v = ok(await srv.get(`${views}/${child.id}`));
  assert.equal(v.backfill_files_done, v.backfill_file_count);
});

test("a view of a view created while its parent still backfills gets the parent's backfill output too", async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  t.after(() => srv.stop());
  const fx = await createIngestKey(srv, 'view of view, parent backfilling');
  const q = `key=${fx.secret}&collection=orders`;
  const views = `/v1/projects/${fx.projectId}/views`;
  for (let i = 0; i < 40; i += 10) await send(srv, q, i, 10);
  const [collection] = ok(await srv.get(`/v1/projects/${fx.projectId}/collections`));
  const parent = ok(
    await srv.post(views, {
      name: 'Orders',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: PARENT,
      output_schema: PARENT_OUT,
    }),
    201,
  );
  const child = ok(
    await srv.post(views, {
      name: 'Doubled',
      parent_view_id: parent.id,
      transform_mode: 'manual',
      transform_script: CHILD,
      output_schema: CHILD_OUT,
    }),
    201,
  );
  await waitBackfill(srv, views, parent.id, (x) => x.backfill_status === 'completed');
  const tr = await waitBackfill(srv, views, child.id, (x) => x.backfill_status === 'completed');
  assert.equal(tr.backfill_status, 'completed');
  assert.deepEqual(
    (await allRecords(srv, views, child.id)).map((r) => r.oid),
    Array.from({ length: 40 }, (_, i) => i),
  );
  // A rebackfill of the child starts over and keeps each row once.
  ok(await srv.post(`${views}/${child.id}/transforms/${tr.id}/rebackfill`, {}));
  await waitBackfill(srv, views, child.id, (x) => x.backfill_status === 'completed');
  assert.deepEqual(
    (await allRecords(srv, views, child.id)).map((r) => r.oid),
    Array.from({ length: 40 }, (_, i) => i),
  );
});
