import { mulberry32 } from '../helpers/seeded-random.js';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { childApi, startChild, type ChildServer } from '../helpers/child.js';
import { Store } from '../../src/store/db.js';
import { systemClock } from '../../src/clock.js';
import { SchemaService } from '../../src/schema/schema-service.js';
import { ViewCatalog } from '../../src/transform/view-catalog.js';
import { RollupStore } from '../../src/rollup/rollup-store.js';
import { rollupReader } from '../../src/rollup/rollup-reader.js';
import { bucketStart, TOTAL_SERIES } from '../../src/rollup/rollup-types.js';
import { seriesHash } from '../../src/rollup/series-hash.js';
import { loadHasher } from '../../src/rollup/hll.js';

/**
 * Issue 12, Deliver 2: SIGKILL the server while acknowledged records flow into a metric — with each
 * DuckDB merge held back after its LMDB commit (SLUICE_ROLLUP_MERGE_DELAY_MS), so kills land between
 * the two — several times, restart, drain: every record the view holds is counted exactly once in
 * its minute, per series and in the total, counts and sums.
 */

const KEY = 'slk_rollup_crash_test_key_000000000000000000';
const api = (base: string, method: string, path: string, body?: unknown) => childApi(base, KEY, method, path, body);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SCRIPT = 'function transform(r) { return { rid: r.id, region: r.region, amount: r.amount }; }';
const OUT = [
  { name: 'rid', type: 'string' },
  { name: 'region', type: 'string' },
  { name: 'amount', type: 'number' },
];

describe('rollups exactly once', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-rollup-crash-'));
  let child: ChildServer | null = null;
  after(() => {
    child?.proc.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('SIGKILL between the LMDB commit and the DuckDB merge, repeatedly under load: counts and sums per minute stay exact', async (t) => {
    const seed = Number(process.env.SLUICE_TEST_SEED ?? Date.now() % 100_000);
    const random = mulberry32(seed);
    t.diagnostic(`seed ${seed}`);
    const env = {
      SLUICE_DATA_DIR: dataDir,
      SLUICE_BOOTSTRAP_KEY: KEY,
      SLUICE_WORKERS: '2',
      SLUICE_LEASE_MAX_RECORDS: '200',
      SLUICE_ROLLUP_MERGE_DELAY_MS: '250',
    };
    child = await startChild(env);
    const project = await api(child.url, 'POST', '/v1/projects', { name: 'rollup crash' });
    const source = await api(child.url, 'POST', `/v1/projects/${project.id}/sources`, { name: 'load' });
    const key = await api(child.url, 'POST', `/v1/projects/${project.id}/sources/${source.id}/ingest_keys`, {});
    const ingestUrl = (base: string) => `${base}/ingest?key=${key.key}&collection=orders`;
    const first = await fetch(ingestUrl(child.url), {
      method: 'POST',
      body: JSON.stringify({ id: 'first', region: 'eu', amount: 1 }),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    assert.equal(first.status, 202);
    let collection: { id: string } | undefined;
    for (let i = 0; i < 200 && !collection; i++, await sleep(25))
      [collection] = await api(child.url, 'GET', `/v1/projects/${project.id}/collections`);
    assert.ok(collection);
    const view = await api(child.url, 'POST', `/v1/projects/${project.id}/views`, {
      name: 'Orders',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: SCRIPT,
      output_schema: OUT,
    });
    const metric = await api(child.url, 'POST', `/v1/projects/${project.id}/metrics`, {
      name: 'Amount',
      view_id: view.id,
      group_by: ['region'],
      value_field: 'amount',
    });

    const load = (base: string, phase: number, clients: number) => {
      let stopped = false;
      const client = async (c: number) => {
        for (let r = 0; !stopped; r++) {
          const body = Array.from({ length: 50 }, (_, k) =>
            JSON.stringify({
              id: `p${phase}c${c}r${r}k${k}`,
              region: ['eu', 'us', 'ap'][k % 3],
              amount: k % 5 === 0 ? null : k + r / 4,
            }),
          ).join('\n');
          try {
            const res = await fetch(ingestUrl(base), {
              method: 'POST',
              body,
              headers: { 'content-type': 'application/x-ndjson' },
            });
            await res.arrayBuffer();
          } catch {
            return; // the server is gone
          }
        }
      };
      const done = Promise.all(Array.from({ length: clients }, (_, c) => client(c)));
      return async () => {
        stopped = true;
        await done;
      };
    };

    let killsWithPending = 0;
    for (let kill = 1; kill <= 3; kill++) {
      const base = await metricRows();
      const stop = load(child.url, kill, 3);
      // Kill once batches of this run are being merged (bounded wait), at a moment the seed picks.
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && (await metricRows()) <= base) await sleep(50);
      await sleep(Math.floor(random() * 300));
      child.proc.kill('SIGKILL');
      await child.exited;
      await stop();
      // What the kill left: batches committed in LMDB whose DuckDB merge had not finished.
      const store = new Store(dataDir);
      const pending = [...store.db('rollup_pending').getKeys({})].length;
      await store.close();
      if (pending > 0) killsWithPending++;
      t.diagnostic(`kill ${kill}: ${pending} batches committed in LMDB and not yet merged into DuckDB`);
      child = await startChild(env);
    }
    assert.ok(killsWithPending > 0, 'at least one kill landed between an LMDB commit and its DuckDB merge');

    async function metricRows(): Promise<number> {
      const m = await api(child!.url, 'GET', `/v1/projects/${project.id}/metrics/${metric.id}`).catch(() => null);
      return m?.compact_completed_count ?? 0;
    }

    // Drain: the spool, the view backfill, the metric backfill; then stop cleanly.
    const drainDeadline = Date.now() + 90_000;
    for (;;) {
      const live = await api(child.url, 'GET', `/v1/projects/${project.id}/pipeline/live`);
      const m = await api(child.url, 'GET', `/v1/projects/${project.id}/metrics/${metric.id}`);
      assert.notEqual(m.status, 'error', JSON.stringify(m));
      if (live.pending_records === 0 && m.status === 'active') break;
      if (Date.now() > drainDeadline) throw new Error(`did not drain: ${JSON.stringify({ live, m })}`);
      await sleep(100);
    }
    child.proc.kill('SIGTERM');
    assert.equal(await child.exited, 0);
    child = null;

    await loadHasher();
    const store = new Store(dataDir);
    const schema = new SchemaService(store, systemClock, pino({ level: 'silent' }), dataDir);
    const catalog = new ViewCatalog(store, systemClock, pino({ level: 'silent' }), dataDir);
    const db = await RollupStore.open(dataDir);
    try {
      assert.equal([...store.db('rollup_pending').getKeys({})].length, 0, 'a clean stop merged every pending batch');
      const reader = await schema.fileReader();
      const vdir = catalog.viewDir(view);
      const rows = await reader.viewRows({
        paths: catalog.store.filesOf(view.id).map((m) => join(vdir, m.id)),
        limit: 10_000_000,
        desc: false,
      });
      const want = new Map<string, [number, number]>();
      const ids = new Set<string>();
      for (const r of rows) {
        assert.ok(!ids.has(String(r.values.rid)), `record ${r.values.rid} is in the view twice`);
        ids.add(String(r.values.rid));
        const minute = bucketStart('minute', r.ts);
        for (const series of [TOTAL_SERIES, seriesHash([r.values.region ?? null])]) {
          const k = `${series}@${minute}`;
          const [c, s] = want.get(k) ?? [0, 0];
          want.set(k, [c + 1, s + (typeof r.values.amount === 'number' ? r.values.amount : 0)]);
        }
      }
      const got = new Map<string, [number, number]>();
      const buckets = await rollupReader(db, () => null).read({
        metricId: metric.id,
        revision: 1,
        tier: 'minute',
        from: 0,
        to: Date.UTC(2100, 0, 1),
        series: [TOTAL_SERIES, ...['eu', 'us', 'ap'].map((r) => seriesHash([r]))],
        sketches: false,
      });
      for (const b of buckets) got.set(`${b.series}@${b.start}`, [b.count, b.sum ?? 0]);
      assert.equal(got.size, want.size, 'the same (series, minute) buckets');
      for (const [k, [c, s]] of want) {
        const g = got.get(k);
        assert.ok(g, `bucket ${k} is missing`);
        assert.equal(g[0], c, `count of ${k}`);
        // Sums add in another order: equal to float rounding (the values are quarters, exact in binary).
        assert.equal(g[1], s, `sum of ${k}`);
      }
      t.diagnostic(
        `${rows.length} view rows in ${want.size} (series, minute) buckets; ${killsWithPending} of 3 kills left batches between LMDB and DuckDB`,
      );
    } finally {
      await db.close();
      schema.close();
      await store.close();
    }
  });
});
