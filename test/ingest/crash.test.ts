import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childApi, startChild, type ChildServer } from '../helpers/child.js';
import { Store } from '../../src/store/db.js';
import { Spool } from '../../src/spool/spool.js';
import { decodeRecords } from '../../src/ingest/framing.js';

const KEY = 'slk_crash_test_bootstrap_key_00000000000000';

const api = (base: string, method: string, path: string, body?: unknown) => childApi(base, KEY, method, path, body);

describe('ingest crash safety', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-crash-'));
  let child: ChildServer | null = null;
  after(() => {
    child?.proc.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('after SIGKILL under load, every acknowledged record is spooled exactly once and every request is all or nothing', async (t) => {
    child = await startChild({ SLUICE_DATA_DIR: dataDir, SLUICE_BOOTSTRAP_KEY: KEY, SLUICE_PIPELINE: '0' });
    const base = child.url;
    const project = await api(base, 'POST', '/v1/projects', { name: 'crash' });
    const source = await api(base, 'POST', `/v1/projects/${project.id}/sources`, { name: 'load' });
    const key = await api(base, 'POST', `/v1/projects/${project.id}/sources/${source.id}/ingest_keys`, {});

    const perRequest = 25;
    const workers = 8;
    const acked = new Set<string>();
    const sent: string[] = [];
    let stop = false;
    let failures = 0;
    const worker = async (w: number) => {
      for (let r = 0; !stop; r++) {
        const request = `w${w}r${r}`;
        sent.push(request);
        const body = Array.from({ length: perRequest }, (_, k) =>
          JSON.stringify({ id: `${request}k${k}`, pad: 'x'.repeat(100) }),
        ).join('\n');
        try {
          const res = await fetch(`${base}/ingest?key=${key.key}&collection=c${w % 3}`, {
            method: 'POST',
            body,
            headers: { 'content-type': 'application/x-ndjson' },
          });
          if (res.status === 202) {
            const json = (await res.json()) as any;
            assert.equal(json.data.accepted, perRequest);
            acked.add(request);
          } else await res.arrayBuffer();
        } catch {
          failures++;
          return; // the server is gone
        }
      }
    };
    const load = Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
    // Kill once a good number of requests were acknowledged, in the middle of the load.
    const deadline = Date.now() + 20_000;
    while (acked.size < 300 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    child.proc.kill('SIGKILL');
    await child.exited;
    stop = true;
    await load;
    child = null;
    t.diagnostic(`acknowledged ${acked.size} of ${sent.length} requests before SIGKILL (${failures} cut off)`);
    assert.ok(acked.size >= 100, 'enough load before the kill');

    const store = new Store(dataDir);
    try {
      const spool = new Spool(store);
      const seen = new Map<string, number>();
      for (const entry of spool.scan()) {
        for (const rec of decodeRecords(entry.format, entry.body))
          seen.set(rec.id as string, (seen.get(rec.id as string) ?? 0) + 1);
      }
      for (const [id, n] of seen) assert.equal(n, 1, `record ${id} spooled ${n} times`);
      for (const request of acked) {
        for (let k = 0; k < perRequest; k++)
          assert.ok(seen.has(`${request}k${k}`), `acknowledged record ${request}k${k} is in the spool`);
      }
      let partial = 0;
      let unackedButStored = 0;
      for (const request of sent) {
        let present = 0;
        for (let k = 0; k < perRequest; k++) if (seen.has(`${request}k${k}`)) present++;
        if (present !== 0 && present !== perRequest) partial++;
        if (present === perRequest && !acked.has(request)) unackedButStored++;
      }
      assert.equal(partial, 0, 'no request is half stored');
      t.diagnostic(`${unackedButStored} requests were committed but their 202 was lost with the process`);
      assert.equal(spool.pendingRecords(), seen.size);
    } finally {
      await store.close();
    }
  });
});
