import { mulberry32 } from '../helpers/seeded-random.js';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { childApi, startChild, type ChildServer } from '../helpers/child.js';
import { Store } from '../../src/store/db.js';
import { Spool } from '../../src/spool/spool.js';
import { systemClock } from '../../src/clock.js';
import { SchemaService } from '../../src/schema/schema-service.js';
import { ViewCatalog } from '../../src/transform/view-catalog.js';

/**
 * Views issue, item 7: SIGKILL the server while acknowledged records flow through two views (and
 * while a third view backfills the collection's files), restart on the same data, drain: every
 * acknowledged record is in each view exactly once per output row it makes.
 */

const KEY = 'slk_view_crash_test_key_00000000000000000000';
const api = (base: string, method: string, path: string, body?: unknown) => childApi(base, KEY, method, path, body);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The kill moments follow from the seed (printed, and settable with SLUICE_TEST_SEED). */
const seeded = mulberry32;

const ONE_ROW = 'function transform(r) { return { rid: r.id }; }';
const TWO_ROWS = 'function transform(r) { return [{ rid: r.id, k: 0 }, { rid: r.id, k: 1 }]; }';
const RID = [{ name: 'rid', type: 'string' }];

describe('views exactly once', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-view-crash-'));
  let child: ChildServer | null = null;
  after(() => {
    child?.proc.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('SIGKILL during live view batches and during a backfill, restart: every acknowledged record is in each view once per output row', async (t) => {
    const seed = Number(process.env.SLUICE_TEST_SEED ?? Date.now() % 100_000);
    const random = seeded(seed);
    t.diagnostic(`seed ${seed}`);
    const env = { SLUICE_DATA_DIR: dataDir, SLUICE_BOOTSTRAP_KEY: KEY, SLUICE_WORKERS: '2' };
    child = await startChild(env);
    const project = await api(child.url, 'POST', '/v1/projects', { name: 'view crash' });
    const source = await api(child.url, 'POST', `/v1/projects/${project.id}/sources`, { name: 'load' });
    const key = await api(child.url, 'POST', `/v1/projects/${project.id}/sources/${source.id}/ingest_keys`, {});
    const ingestUrl = (base: string) => `${base}/ingest?key=${key.key}&collection=orders`;
    const views = `/v1/projects/${project.id}/views`;

    // The collection comes with its first record, which the views then get by backfill.
    const first = await fetch(ingestUrl(child.url), {
      method: 'POST',
      body: JSON.stringify({ id: 'first' }),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    assert.equal(first.status, 202);
    const acked = new Set<string>(['first']);
    let collection: { id: string } | undefined;
    for (let i = 0; i < 200 && !collection; i++, await sleep(25))
      [collection] = await api(child.url, 'GET', `/v1/projects/${project.id}/collections`);
    assert.ok(collection, 'the collection was created');
    const v1 = await api(child.url, 'POST', views, {
      name: 'One',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: ONE_ROW,
      output_schema: RID,
    });
    const v2 = await api(child.url, 'POST', views, {
      name: 'Two',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: TWO_ROWS,
      output_schema: [...RID, { name: 'k', type: 'number' }],
    });

    const perRequest = 40;
    const requests = new Set<string>(['first']);
    /** Load from `clients` clients until `stop()` or the server is gone; ids of 202s go to `acked`. */
    const load = (base: string, phase: number, clients: number) => {
      let stopped = false;
      const client = async (c: number) => {
        for (let r = 0; !stopped; r++) {
          const request = `p${phase}c${c}r${r}`;
          requests.add(request);
          const body = Array.from({ length: perRequest }, (_, k) =>
            JSON.stringify({ id: `${request}k${k}`, n: k, pad: 'x'.repeat(k % 7) }),
          ).join('\n');
          try {
            const res = await fetch(ingestUrl(base), {
              method: 'POST',
              body,
              headers: { 'content-type': 'application/x-ndjson' },
            });
            await res.arrayBuffer();
            if (res.status === 202) acked.add(request);
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
    const viewFiles = (view: { id: string }) => {
      const dir = join(dataDir, 'views', project.id, view.id);
      return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.parquet')).length : 0;
    };

    // Kill 1: mid-stream, once both views have been writing files for a while.
    const stop1 = load(child.url, 1, 4);
    const killAfter = 30 + Math.floor(random() * 90);
    const deadline1 = Date.now() + 30_000;
    while ((acked.size < killAfter || viewFiles(v2) < 5) && Date.now() < deadline1) await sleep(5);
    child.proc.kill('SIGKILL');
    await child.exited;
    await stop1();
    t.diagnostic(
      `kill 1 after ${acked.size} acknowledged requests, ${viewFiles(v1)} + ${viewFiles(v2)} view files on disk`,
    );
    assert.ok(acked.size >= 30, 'enough load before the first kill');

    // Kill 2: a third view backfills the collection's files while live load goes on; killed once
    // its backfill has committed some files (or, bounded, whenever the moment is missed).
    child = await startChild(env);
    const v3 = await api(child.url, 'POST', views, {
      name: 'Three',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: ONE_ROW,
      output_schema: RID,
    });
    const stop2 = load(child.url, 2, 2);
    const wantDone = 1 + Math.floor(random() * 3);
    let backfill: any = null;
    const deadline2 = Date.now() + 20_000;
    while (Date.now() < deadline2) {
      [backfill] = await api(child.url, 'GET', `${views}/${v3.id}/transforms`);
      if (backfill.backfill_status === 'completed' || backfill.backfill_files_done >= wantDone) break;
      await sleep(2);
    }
    child.proc.kill('SIGKILL');
    await child.exited;
    await stop2();
    t.diagnostic(
      `kill 2 with the third view's backfill ${backfill?.backfill_status} at ${backfill?.backfill_files_done}/${backfill?.backfill_file_count} files; ${acked.size} acknowledged requests`,
    );

    // Restart, drain the spool and every backfill, stop cleanly.
    child = await startChild(env);
    const drainDeadline = Date.now() + 90_000;
    for (;;) {
      const live = await api(child.url, 'GET', `/v1/projects/${project.id}/pipeline/live`);
      const transforms = await Promise.all(
        [v1, v2, v3].map(async (v) => (await api(child!.url, 'GET', `${views}/${v.id}/transforms`))[0]),
      );
      for (const tr of transforms) assert.equal(tr.status, 'active', JSON.stringify(tr));
      if (live.pending_records === 0 && transforms.every((tr) => tr.backfill_status === 'completed')) break;
      if (Date.now() > drainDeadline) throw new Error(`did not drain: ${JSON.stringify({ live, transforms })}`);
      await sleep(100);
    }
    child.proc.kill('SIGTERM');
    assert.equal(await child.exited, 0);
    child = null;

    const store = new Store(dataDir);
    const schema = new SchemaService(store, systemClock, pino({ level: 'silent' }), dataDir);
    const catalog = new ViewCatalog(store, systemClock, pino({ level: 'silent' }), dataDir);
    try {
      assert.equal(new Spool(store).pendingRecords(), 0);
      const reader = await schema.fileReader();
      // What the collection holds: each durable record once (test/schema/exactly-once.test.ts).
      const dir = schema.filesDir({ project_id: project.id, id: collection.id });
      const docs = await reader.docs({
        paths: schema.manifests(collection.id).map((m) => join(dir, m.id)),
        limit: 10_000_000,
        sort: 'asc',
      });
      const stored = new Set<string>();
      for (const d of docs) {
        const id = (JSON.parse(d.doc) as { id: string }).id;
        assert.ok(!stored.has(id), `record ${id} is in the collection files twice`);
        stored.add(id);
      }
      for (const [view, perRecord] of [
        [v1, 1],
        [v2, 2],
        [v3, 1],
      ] as const) {
        const vdir = catalog.viewDir(view);
        const manifests = catalog.store.filesOf(view.id);
        const known = new Set(manifests.map((m) => m.id));
        for (const f of readdirSync(vdir)) assert.ok(known.has(f), `view ${view.name}: file ${f} is not in a manifest`);
        const rows = await reader.viewRows({
          paths: manifests.map((m) => join(vdir, m.id)),
          limit: 10_000_000,
          desc: false,
        });
        const seen = new Map<string, number>();
        for (const r of rows) seen.set(String(r.values.rid), (seen.get(String(r.values.rid)) ?? 0) + 1);
        for (const [id, n] of seen) {
          assert.equal(n, perRecord, `view ${view.name}: record ${id} makes ${n} rows, not ${perRecord}`);
          assert.ok(stored.has(id), `view ${view.name}: record ${id} is not in the collection`);
        }
        // Durable but not acknowledged (the kill came before the answer): in the view as in the collection.
        for (const id of stored) assert.ok(seen.has(id), `view ${view.name}: stored record ${id} is missing`);
        for (const request of acked) {
          const ids = request === 'first' ? ['first'] : Array.from({ length: perRequest }, (_, k) => `${request}k${k}`);
          for (const id of ids) assert.equal(seen.get(id), perRecord, `view ${view.name}: acknowledged record ${id}`);
        }
        t.diagnostic(
          `view ${view.name}: ${rows.length} rows in ${manifests.length} files (${manifests.filter((m) => m.origin === 'backfill').length} by backfill)`,
        );
      }
      t.diagnostic(`${stored.size} records stored, ${acked.size} of ${requests.size} requests acknowledged`);
    } finally {
      schema.close();
      await store.close();
    }
  });
});
