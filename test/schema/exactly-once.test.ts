import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import pino from 'pino';
import { filesUnder } from '../helpers/files.js';
import { childApi, drainAndStop, startChild, type ChildServer } from '../helpers/child.js';
import { Store } from '../../src/store/db.js';
import { Spool } from '../../src/spool/spool.js';
import { systemClock } from '../../src/clock.js';
import { SchemaService } from '../../src/schema/schema-service.js';

const KEY = 'slk_schema_crash_test_key_000000000000000000';

const api = (base: string, method: string, path: string, body?: unknown) => childApi(base, KEY, method, path, body);

describe('pipeline exactly once', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-schema-crash-'));
  let child: ChildServer | null = null;
  after(() => {
    child?.proc.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('SIGKILL during ingest and processing, restart: every acknowledged record is in the collection files exactly once', async (t) => {
    const env = { SLUICE_DATA_DIR: dataDir, SLUICE_BOOTSTRAP_KEY: KEY, SLUICE_WORKERS: '2' };
    child = await startChild(env);
    const base = child.url;
    const project = await api(base, 'POST', '/v1/projects', { name: 'crash' });
    const source = await api(base, 'POST', `/v1/projects/${project.id}/sources`, { name: 'load' });
    const key = await api(base, 'POST', `/v1/projects/${project.id}/sources/${source.id}/ingest_keys`, {});

    const perRequest = 200;
    const acked = new Set<string>();
    let stop = false;
    const worker = async (w: number) => {
      for (let r = 0; !stop; r++) {
        const request = `w${w}r${r}`;
        // Several shapes per request so batches write several files.
        const body = Array.from({ length: perRequest }, (_, k) =>
          JSON.stringify({ id: `${request}k${k}`, [`f${k % 4}`]: k, pad: 'x'.repeat(120) }),
        ).join('\n');
        try {
          const res = await fetch(`${base}/ingest?key=${key.key}&collection=c${w % 3}`, {
            method: 'POST',
            body,
            headers: { 'content-type': 'application/x-ndjson' },
          });
          if (res.status === 202) acked.add(request);
          await res.arrayBuffer();
        } catch {
          return; // the server is gone
        }
      }
    };
    const load = Promise.all(Array.from({ length: 6 }, (_, w) => worker(w)));
    // Kill once the pipeline has been writing files for a while, in the middle of the load.
    const deadline = Date.now() + 30_000;
    const written = () => [...filesUnder(join(dataDir, 'files'))].length;
    while ((acked.size < 200 || written() < 20) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    child.proc.kill('SIGKILL');
    await child.exited;
    stop = true;
    await load;
    t.diagnostic(`acknowledged ${acked.size} requests; ${written()} files on disk at the kill`);
    assert.ok(acked.size >= 50, 'enough load before the kill');

    // Restart and let the pipeline drain the spool.
    const restarted = (child = await startChild(env));
    await drainAndStop(restarted, () => api(restarted.url, 'GET', `/v1/projects/${project.id}/pipeline/live`));
    child = null;

    const store = new Store(dataDir);
    const schema = new SchemaService(store, systemClock, pino({ level: 'silent' }), dataDir);
    try {
      assert.equal(new Spool(store).pendingRecords(), 0);
      const seen = new Map<string, number>();
      const reader = await schema.fileReader();
      const collections = readdirSync(join(dataDir, 'files', project.id));
      let manifestFiles = 0;
      for (const c of collections) {
        const dir = join(dataDir, 'files', project.id, c);
        const manifests = schema.manifests(c);
        manifestFiles += manifests.length;
        // No orphan: every file on disk is a committed one.
        const known = new Set(manifests.map((m) => m.id));
        for (const f of filesUnder(dir))
          assert.ok(known.has(relative(dir, f)), `file ${relative(dir, f)} is not in a manifest`);
        const rows = await reader.docs({
          paths: manifests.map((m) => join(dir, m.id)),
          limit: 10_000_000,
          sort: 'asc',
        });
        for (const r of rows) {
          const id = (JSON.parse(r.doc) as { id: string }).id;
          seen.set(id, (seen.get(id) ?? 0) + 1);
        }
      }
      for (const [id, n] of seen) assert.equal(n, 1, `record ${id} is in the files ${n} times`);
      for (const request of acked) {
        for (let k = 0; k < perRequest; k++)
          assert.ok(seen.has(`${request}k${k}`), `acknowledged record ${request}k${k} is in the collection files`);
      }
      t.diagnostic(`${seen.size} records in ${manifestFiles} files, each exactly once`);
    } finally {
      schema.close();
      await store.close();
    }
  });
});
