import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';
import { fails, ok } from '../catalog/helpers.js';
import { BASE_SCOPE } from '../../src/transform/join-store.js';
import { joinKey } from '../../src/transform/join-key.js';

/** Join views processed end to end: base and lookup views → lookup indexes → joined view files → GET records. */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const at = (minute: number) => new Date(Date.UTC(2026, 1, 1, 0, minute)).toISOString();

async function setup(srv: TestServer) {
  const fx = await createIngestKey(srv, 'joins');
  const views = `/v1/projects/${fx.projectId}/views`;
  const send = async (collection: string, records: object[]) => {
    assert.equal(
      (
        await ingest(srv.url, `key=${fx.secret}&collection=${collection}`, ndjson(records), {
          'content-type': 'application/x-ndjson',
        })
      ).status,
      202,
    );
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
  };
  const collection = async (name: string) =>
    (ok(await srv.get(`/v1/projects/${fx.projectId}/collections`)) as any[]).find((c) => c.name === name);
  const view = async (name: string, from: string, script: string, output: object[]) => {
    const v = ok(
      await srv.post(views, {
        name,
        collection_id: (await collection(from)).id,
        transform_mode: 'manual',
        transform_script: script,
        output_schema: output,
      }),
      201,
    );
    for (let i = 0; i < 400 && ok(await srv.get(`${views}/${v.id}/transforms`))[0].backfill_status !== 'completed'; i++)
      await sleep(25);
    return v;
  };
  /** The view once `until` holds (the processor trails its inputs). */
  const waitView = async (id: string, until: (v: any) => boolean) => {
    let v = ok(await srv.get(`${views}/${id}`));
    for (let i = 0; i < 400 && !until(v); i++) {
      await sleep(25);
      v = ok(await srv.get(`${views}/${id}`));
    }
    return v;
  };
  const records = async (id: string) => ok(await srv.get(`${views}/${id}/records?limit=200&sort=asc`)) as any[];
  return { fx, views, send, view, waitView, records };
}

const CUSTOMERS = 'function transform(r) { return { cid: r.cid, name: r.name }; }';
const PRODUCTS = 'function transform(r) { return { sku: r.sku, title: r.title }; }';
const ORDERS = 'function transform(r) { return { oid: r.oid, cid: r.cid, sku: r.sku }; }';

test('a join view enriches base records with the latest lookup record by timestamp: left keeps, inner drops, clauses by priority; it backfills, then follows live', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '2' } });
  t.after(() => srv.stop());
  const { views, send, view, waitView, records } = await setup(srv);
  await send('customers', [
    { cid: 'c1', name: 'Ann (old)', timestamp: at(1) },
    { cid: 'c2', name: 'Bob', timestamp: at(2) },
    { cid: 'c1', name: 'Ann', timestamp: at(5) },
  ]);
  // Sent later, but an earlier timestamp: not the latest.
  await send('customers', [{ cid: 'c1', name: 'Ann (stale)', timestamp: at(3) }]);
  await send('products', [{ sku: 's1', title: 'Socks', timestamp: at(1) }]);
  await send('orders', [
    { oid: 1, cid: 'c1', sku: 's1', timestamp: at(10) },
    { oid: 2, cid: 'c2', sku: 's9', timestamp: at(11) },
    { oid: 3, cid: 'c3', sku: 's1', timestamp: at(12) },
  ]);
  const customers = await view('Customers', 'customers', CUSTOMERS, [
    { name: 'cid', type: 'string' },
    { name: 'name', type: 'string' },
  ]);
  const products = await view('Products', 'products', PRODUCTS, [
    { name: 'sku', type: 'string' },
    { name: 'title', type: 'string' },
  ]);
  const orders = await view('Orders', 'orders', ORDERS, [
    { name: 'oid', type: 'number' },
    { name: 'cid', type: 'string' },
    { name: 'sku', type: 'string' },
  ]);

  // No script: the joined record is stored flattened; `product` (priority 0) runs before `customer` (5).
  const left = ok(
    await srv.post(`${views}/join`, {
      name: 'Orders enriched',
      base_view_id: orders.id,
      joins: [
        { alias: 'customer', lookup_view_id: customers.id, base_field: 'cid', lookup_field: 'cid', priority: 5 },
        { alias: 'product', lookup_view_id: products.id, base_field: 'sku', lookup_field: 'sku' },
      ],
    }),
    201,
  );
  assert.equal(left.join_status, 'backfilling');
  assert.ok(left.join_backfill_cutoff_at);
  // With a script: it sees the nested joined record.
  const inner = ok(
    await srv.post(`${views}/join`, {
      name: 'Orders of known customers',
      base_view_id: orders.id,
      transform_script:
        'function transform(r) { return { oid: r.oid, who: r.customer.name, what: r.product === null ? null : r.product.title }; }',
      joins: [
        { alias: 'customer', lookup_view_id: customers.id, base_field: 'cid', lookup_field: 'cid', join_type: 'inner' },
        { alias: 'product', lookup_view_id: products.id, base_field: 'sku', lookup_field: 'sku', priority: 1 },
      ],
    }),
    201,
  );

  const l = await waitView(left.id, (v) => v.join_status === 'live');
  assert.equal(l.join_status, 'live', JSON.stringify(l));
  assert.equal(l.status, 'active');
  assert.ok(l.join_live_started_at);
  assert.ok(l.join_base_file_count >= 1);
  assert.equal(l.join_base_files_done, l.join_base_file_count);
  for (const alias of ['customer', 'product']) {
    const p = l.join_lookup_progress[alias];
    assert.equal(p.status, 'completed', alias);
    assert.equal(p.files_done, p.file_count, alias);
    assert.equal(p.error, null);
  }
  assert.deepEqual(
    l.output_schema.map((f: any) => f.name),
    ['oid', 'cid', 'sku', 'product.sku', 'product.title', 'customer.cid', 'customer.name'],
  );
  assert.deepEqual(await records(left.id), [
    {
      oid: 1,
      cid: 'c1',
      sku: 's1',
      'product.sku': 's1',
      'product.title': 'Socks',
      'customer.cid': 'c1',
      'customer.name': 'Ann',
    },
    {
      oid: 2,
      cid: 'c2',
      sku: 's9',
      'product.sku': null,
      'product.title': null,
      'customer.cid': 'c2',
      'customer.name': 'Bob',
    },
    {
      oid: 3,
      cid: 'c3',
      sku: 's1',
      'product.sku': 's1',
      'product.title': 'Socks',
      'customer.cid': null,
      'customer.name': null,
    },
  ]);

  const i = await waitView(inner.id, (v) => v.join_status === 'live');
  assert.equal(i.join_status, 'live');
  assert.deepEqual(
    i.output_schema.map((f: any) => [f.name, f.type]),
    [
      ['oid', 'number'],
      ['who', 'string'],
      ['what', 'string'],
    ],
  );
  assert.deepEqual(
    await records(inner.id),
    [
      { oid: 1, who: 'Ann', what: 'Socks' },
      { oid: 2, who: 'Bob', what: null },
    ],
    'inner drops the order of an unknown customer',
  );
  const [it] = ok(await srv.get(`${views}/${inner.id}/transforms`));
  assert.equal(it.backfill_status, 'completed');

  // Live: a new customer value, then an order using it. Earlier orders are not revisited.
  await send('customers', [{ cid: 'c2', name: 'Bobby', timestamp: at(20) }]);
  await send('orders', [{ oid: 4, cid: 'c2', sku: 's1', timestamp: at(21) }]);
  await waitView(
    left.id,
    (v) => v.join_lookup_progress.customer.files_done === v.join_lookup_progress.customer.file_count,
  );
  let rows = await records(left.id);
  for (let k = 0; k < 400 && rows.length < 4; k++) {
    await sleep(25);
    rows = await records(left.id);
  }
  assert.deepEqual(
    rows.map((r) => [r.oid, r['customer.name']]),
    [
      [1, 'Ann'],
      [2, 'Bob'],
      [3, null],
      [4, 'Bobby'],
    ],
  );
  let irows = await records(inner.id);
  for (let k = 0; k < 400 && irows.length < 3; k++) {
    await sleep(25);
    irows = await records(inner.id);
  }
  assert.deepEqual(irows, [
    { oid: 1, who: 'Ann', what: 'Socks' },
    { oid: 2, who: 'Bob', what: null },
    { oid: 4, who: 'Bobby', what: 'Socks' },
  ]);
  const after = ok(await srv.get(`${views}/${left.id}`));
  assert.equal(after.join_status, 'live');
  assert.equal(after.join_base_files_done, l.join_base_files_done, 'live files are not backfill files');

  // A rebackfill joins every base file again, against the lookups as indexed now, once each.
  ok(await srv.post(`${views}/${inner.id}/transforms/${it.id}/rebackfill`, {}));
  let tr = ok(await srv.get(`${views}/${inner.id}/transforms/${it.id}`));
  for (let k = 0; k < 400 && tr.backfill_status !== 'completed'; k++) {
    await sleep(25);
    tr = ok(await srv.get(`${views}/${inner.id}/transforms/${it.id}`));
  }
  assert.equal(tr.backfill_status, 'completed');
  const again = await waitView(inner.id, (v) => v.join_status === 'live');
  assert.ok(again.join_backfill_cutoff_at > i.join_backfill_cutoff_at, 'the cutoff moves to the restart');
  assert.deepEqual(await records(inner.id), [
    { oid: 1, who: 'Ann', what: 'Socks' },
    { oid: 2, who: 'Bobby', what: null },
    { oid: 4, who: 'Bobby', what: 'Socks' },
  ]);
});

test('a join view stopped mid-way resumes after a restart at the next base file; no record is joined twice', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  t.after(() => srv.stop());
  const { views, send, view, waitView, records } = await setup(srv);
  await send('customers', [{ cid: 'c1', name: 'Ann', timestamp: at(1) }]);
  for (let b = 0; b < 5; b++)
    await send(
      'orders',
      Array.from({ length: 4 }, (_, k) => ({
        oid: b * 4 + k,
        cid: k % 2 ? 'c1' : 'c2',
        sku: 's',
        timestamp: at(10 + b * 4 + k),
      })),
    );
  const customers = await view('Customers', 'customers', CUSTOMERS, [
    { name: 'cid', type: 'string' },
    { name: 'name', type: 'string' },
  ]);
  const orders = await view('Orders', 'orders', ORDERS, [
    { name: 'oid', type: 'number' },
    { name: 'cid', type: 'string' },
    { name: 'sku', type: 'string' },
  ]);
  assert.ok(srv.sluice.services.views.store.filesOf(orders.id).length >= 5);

  // Stop the processor after two base files, as a crash would.
  const proc = srv.sluice.services.viewJoins! as unknown as {
    joinFile: (...a: unknown[]) => Promise<unknown>;
    stopped: boolean;
  };
  const joinFile = proc.joinFile.bind(proc);
  let calls = 0;
  proc.joinFile = async (...a) => {
    if (calls++ < 2) return joinFile(...a);
    proc.stopped = true;
    return false;
  };
  const j = ok(
    await srv.post(`${views}/join`, {
      name: 'J',
      base_view_id: orders.id,
      joins: [
        { alias: 'customer', lookup_view_id: customers.id, base_field: 'cid', lookup_field: 'cid', join_type: 'inner' },
      ],
    }),
    201,
  );
  const mid = await waitView(j.id, (v) => v.join_base_files_done === 2 && calls > 2);
  assert.equal(mid.join_status, 'backfilling');
  assert.equal(mid.join_base_files_done, 2);
  const before = new Map(srv.sluice.services.views.store.filesOf(j.id).map((f) => [f.id, f.created_at]));
  assert.equal(before.size, 2);

  await srv.restart();
  const done = await waitView(j.id, (v) => v.join_status === 'live');
  assert.equal(done.join_status, 'live', JSON.stringify(done));
  assert.equal(done.join_base_files_done, done.join_base_file_count);
  for (const f of srv.sluice.services.views.store.filesOf(j.id)) {
    if (before.has(f.id))
      assert.equal(f.created_at, before.get(f.id), 'a file joined before the restart is not joined again');
  }
  const rows = await records(j.id);
  assert.deepEqual(
    rows.map((r) => r.oid),
    Array.from({ length: 10 }, (_, i) => i * 2 + 1),
    'every c1 order once',
  );
  assert.ok(rows.every((r) => r['customer.name'] === 'Ann'));

  // Without a script there is nothing to rebackfill with (a scripted join starts over: test above).
  const [tr] = ok(await srv.get(`${views}/${j.id}/transforms`));
  fails(await srv.post(`${views}/${j.id}/transforms/${tr.id}/rebackfill`, {}), 409, 'conflict');

  // Destroyed: its lookup index and done marks go with it.
  const store = srv.sluice.services.views.store;
  assert.ok(store.joins.doneFiles(j.id, BASE_SCOPE).size > 0);
  ok(await srv.call('DELETE', `${views}/${j.id}/force`));
  assert.equal(store.joins.doneFiles(j.id, BASE_SCOPE).size, 0);
  assert.equal(store.joins.doneFiles(j.id, 'customer').size, 0);
  assert.equal(store.joins.lookup(j.id, 'customer', joinKey('c1', 'string')!), undefined);
});

test('a join alias may not hide an output field of the base view', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  t.after(() => srv.stop());
  const { views, send, view } = await setup(srv);
  await send('orders', [{ oid: 1, cid: 'c1', sku: 's', timestamp: at(1) }]);
  const orders = await view('Orders', 'orders', ORDERS, [
    { name: 'oid', type: 'number' },
    { name: 'cid', type: 'string' },
    { name: 'sku', type: 'string' },
  ]);
  const r = await srv.post(`${views}/join`, {
    name: 'J',
    base_view_id: orders.id,
    joins: [{ alias: 'sku', lookup_view_id: orders.id, base_field: 'cid', lookup_field: 'cid' }],
  });
  fails(r, 400, 'request_validation_failed', 'body.joins[0].alias');
});

test('a join script that throws stops the join in error; a fixed script resumes it where it stopped', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  t.after(() => srv.stop());
  const { views, send, view, waitView, records } = await setup(srv);
  await send('customers', [{ cid: 'c1', name: 'Ann', timestamp: at(1) }]);
  for (let oid = 1; oid <= 3; oid++) await send('orders', [{ oid, cid: 'c1', sku: 's', timestamp: at(10 + oid) }]);
  const customers = await view('Customers', 'customers', CUSTOMERS, [
    { name: 'cid', type: 'string' },
    { name: 'name', type: 'string' },
  ]);
  const orders = await view('Orders', 'orders', ORDERS, [
    { name: 'oid', type: 'number' },
    { name: 'cid', type: 'string' },
    { name: 'sku', type: 'string' },
  ]);
  const j = ok(
    await srv.post(`${views}/join`, {
      name: 'J',
      base_view_id: orders.id,
      output_schema: [
        { name: 'oid', type: 'number' },
        { name: 'who', type: 'string' },
      ],
      transform_script:
        'function transform(r) { if (r.oid === 2) throw new Error("no 2"); return { oid: r.oid, who: r.customer.name }; }',
      joins: [{ alias: 'customer', lookup_view_id: customers.id, base_field: 'cid', lookup_field: 'cid' }],
    }),
    201,
  );
  const failed = await waitView(j.id, (v) => v.join_status === 'error');
  assert.equal(failed.join_status, 'error');
  assert.match(failed.join_error_message, /Error: no 2/);
  assert.equal(failed.status, 'error');
  assert.equal(failed.error_message, failed.join_error_message);
  const [tr] = ok(await srv.get(`${views}/${j.id}/transforms`));
  assert.equal(tr.status, 'error');
  assert.equal(tr.backfill_status, 'failed');
  assert.deepEqual(
    (await records(j.id)).map((r) => r.oid),
    [1],
    'the file before the failing one stays joined',
  );

  ok(
    await srv.post(`${views}/${j.id}/transforms/${tr.id}`, {
      transform_script: 'function transform(r) { return { oid: r.oid, who: r.customer.name }; }',
    }),
  );
  const live = await waitView(j.id, (v) => v.join_status === 'live');
  assert.equal(live.join_status, 'live', JSON.stringify(live));
  assert.equal(live.status, 'active');
  assert.equal(live.join_error_message, null);
  assert.deepEqual(await records(j.id), [
    { oid: 1, who: 'Ann' },
    { oid: 2, who: 'Ann' },
    { oid: 3, who: 'Ann' },
  ]);
  assert.equal(ok(await srv.get(`${views}/${j.id}/transforms/${tr.id}`)).backfill_status, 'completed');

  // A view of the join view gets its output by backfill, reopened by each file the join commits.
  const child = ok(
    await srv.post(views, {
      name: 'Who',
      parent_view_id: j.id,
      transform_mode: 'manual',
      transform_script: 'function transform(r) { return { who: r.who + "#" + r.oid }; }',
      output_schema: [{ name: 'who', type: 'string' }],
    }),
    201,
  );
  const whos = async (n: number) => {
    let rows = await records(child.id);
    for (let k = 0; k < 400 && rows.length < n; k++) {
      await sleep(25);
      rows = await records(child.id);
    }
    return rows.map((r) => r.who).sort();
  };
  assert.deepEqual(await whos(3), ['Ann#1', 'Ann#2', 'Ann#3']);
  await send('orders', [{ oid: 4, cid: 'c1', sku: 's', timestamp: at(20) }]);
  assert.deepEqual(await whos(4), ['Ann#1', 'Ann#2', 'Ann#3', 'Ann#4']);
});
