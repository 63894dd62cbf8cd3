import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';
import { fails, ok } from '../catalog/helpers.js';
import { bucketStart, TOTAL_SERIES } from '../../src/rollup/rollup-types.js';
import { loadHasher } from '../../src/rollup/hll.js';
import { countsAndSums, rollupsOf, settle } from './rollup-helpers.js';

/** Issue 12: the `cancelled` and `error` statuses as an API user sees them (docs/metrics.md, "Metric fields"). */

const SCRIPT = 'function transform(r) { return { region: r.region, amount: r.amount }; }';
const OUT = [
  { name: 'region', type: 'string' },
  { name: 'amount', type: 'number' },
];
const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);

const records = (from: number, n: number) =>
  Array.from({ length: n }, (_, k) => ({
    region: (from + k) % 2 ? 'eu' : 'us',
    amount: from + k,
    timestamp: new Date(T0 + (from + k) * 13_000).toISOString(),
  }));

/** Total [count, sum] per minute of `recs`. */
function perMinute(recs: ReturnType<typeof records>): Map<number, [number, number]> {
  const out = new Map<number, [number, number]>();
  for (const r of recs) {
    const start = bucketStart('minute', Date.parse(r.timestamp));
    const [c, s] = out.get(start) ?? [0, 0];
    out.set(start, [c + 1, s + r.amount]);
  }
  return out;
}

async function setup(srv: TestServer) {
  const fx = await createIngestKey(srv, 'metric status');
  const q = `key=${fx.secret}&collection=orders`;
  const project = `/v1/projects/${fx.projectId}`;
  const send = async (recs: object[]) => {
    for (let i = 0; i < recs.length; i += 20)
      assert.equal(
        (await ingest(srv.url, q, ndjson(recs.slice(i, i + 20)), { 'content-type': 'application/x-ndjson' })).status,
        202,
      );
  };
  await send(records(0, 1));
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  const [collection] = ok(await srv.get(`${project}/collections`));
  const view = ok(
    await srv.post(`${project}/views`, {
      name: 'Orders',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: SCRIPT,
      output_schema: OUT,
    }),
    201,
  );
  return { send, view, metrics: `${project}/metrics` };
}

async function totals(
  srv: TestServer,
  metricId: string,
  revision: number,
): Promise<Map<number, [number, number | null]>> {
  return (await countsAndSums(srv, metricId, revision, 'minute')).get(TOTAL_SERIES) ?? new Map();
}

async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a metric scheduled for deletion is cancelled: no live counting, no backfill, aggregation 404; restored, it is rebuilt exactly', async (t) => {
  await loadHasher();
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '2', SLUICE_LEASE_MAX_RECORDS: '20' } });
  t.after(() => srv.stop());
  const { send, view, metrics } = await setup(srv);
  const m = ok(
    await srv.post(metrics, { name: 'Amount', view_id: view.id, group_by: ['region'], value_field: 'amount' }),
    201,
  );
  const before = records(1, 60);
  await send(before);
  await settle(srv, metrics, [m.id]);
  assert.deepEqual(await totals(srv, m.id, 1), perMinute([...records(0, 1), ...before]));

  const cancelled = ok(await srv.delete(`${metrics}/${m.id}`));
  assert.deepEqual([cancelled.status, cancelled.error_message], ['cancelled', null]);
  assert.ok(cancelled.deleted_at);
  fails(await srv.get(`${metrics}/${m.id}/aggregation?time_range=last_24_hours&interval=hour`), 404, 'not_found');

  // Records while cancelled are not counted: its rows stay as they were, and nothing moves it on.
  const during = records(61, 60);
  await send(during);
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  await rollupsOf(srv).idle();
  assert.deepEqual(await totals(srv, m.id, 1), perMinute([...records(0, 1), ...before]));
  assert.equal(ok(await srv.get(`${metrics}/${m.id}`)).status, 'cancelled');

  // Restored: rebuilt from the view's files, so what came while it was cancelled is in too.
  const restored = ok(await srv.post(`${metrics}/${m.id}`, { deleted_at: null }));
  assert.deepEqual([restored.status, restored.deleted_at, restored.backfill_percent], ['initializing', null, 0]);
  const after = records(121, 20);
  await send(after);
  await settle(srv, metrics, [m.id]);
  assert.deepEqual(await totals(srv, m.id, 2), perMinute([...records(0, 1), ...before, ...during, ...after]));
  ok(
    await srv.get(
      `${metrics}/${m.id}/aggregation?start_at=2026-03-01T09:00:00Z&end_at=2026-03-01T12:00:00Z&interval=hour`,
    ),
  );
});

test('a metric in error shows why in error_message; a rebuild clears it', async (t) => {
  await loadHasher();
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  t.after(() => srv.stop());
  const { send, view, metrics } = await setup(srv);
  await send(records(1, 30));
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  const views = srv.sluice.services.views;
  const [file] = views.store.filesOf(view.id);
  assert.ok(file, 'the view wrote a file');
  const path = join(views.viewDir(view), file.id);
  const good = readFileSync(path);
  writeFileSync(path, 'not a parquet file');

  const m = ok(await srv.post(metrics, { name: 'Amount', view_id: view.id, value_field: 'amount' }), 201);
  assert.equal(m.error_message, null);
  const failed = await until(
    'the metric fails',
    () => srv.get(`${metrics}/${m.id}`).then(ok),
    (x: any) => x.status === 'error',
  );
  assert.match(failed.error_message, /^backfill failed: /);
  assert.ok(failed.error_message.length > 'backfill failed: '.length, failed.error_message);

  writeFileSync(path, good);
  const rebuilt = ok(await srv.post(`${metrics}/${m.id}/backfill`, {}));
  assert.deepEqual([rebuilt.status, rebuilt.error_message], ['initializing', null]);
  await settle(srv, metrics, [m.id]);
  const active = ok(await srv.get(`${metrics}/${m.id}`));
  assert.deepEqual([active.status, active.error_message], ['active', null]);
  assert.deepEqual(await totals(srv, m.id, 2), perMinute(records(0, 31)));
});
