import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config.js';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';

/** docs/self-hosting.md, "Memory": DuckDB's limit and threads are the server's settings, and the breakdown tells who holds what. */

const MiB = 1024 * 1024;

test('the rollups DuckDB takes SLUICE_DUCKDB_MEMORY_BYTES and SLUICE_DUCKDB_THREADS, and defaults to 512 MiB and 2 threads', async () => {
  const set = await TestServer.start({
    env: { SLUICE_DUCKDB_MEMORY_BYTES: String(96 * MiB), SLUICE_DUCKDB_THREADS: '1' },
  });
  try {
    const duck = (await set.sluice.memory()).duckdb;
    assert.ok(duck);
    assert.equal(duck.limit, '96.0 MiB');
    assert.equal(duck.threads, 1);
    assert.ok(duck.bytes >= 0 && duck.temporaryBytes >= 0);
  } finally {
    await set.stop();
  }
  const plain = await TestServer.start();
  try {
    const duck = (await plain.sluice.memory()).duckdb;
    assert.equal(duck?.limit, '512.0 MiB');
    assert.equal(duck?.threads, 2);
  } finally {
    await plain.stop();
  }
});

test('a value that is not a byte count is refused at start, naming the variable', () => {
  assert.throws(() => loadConfig({ SLUICE_DUCKDB_MEMORY_BYTES: '512MB' }), /SLUICE_DUCKDB_MEMORY_BYTES/);
  assert.throws(() => loadConfig({ SLUICE_DUCKDB_THREADS: '-1' }), /SLUICE_DUCKDB_THREADS/);
});

test('the memory breakdown gives the process, and each worker thread heap once it ran a batch', async () => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  try {
    const before = await srv.sluice.memory();
    const p = before.process;
    assert.ok(p.rss > 0 && p.heapTotal >= p.heapUsed && p.heapUsed > 0);
    if (p.rssAnon !== null && p.rssFile !== null) assert.ok(p.rssAnon > 0 && p.rssAnon + p.rssFile <= p.rss);
    assert.deepEqual(before.workers, [], 'no worker reports before its first task');

    const fx = await createIngestKey(srv);
    const records = Array.from({ length: 50 }, (_, i) => ({ id: i, name: `r${i}` }));
    const sent = await ingest(srv.url, `key=${fx.secret}&collection=orders`, ndjson(records), {
      'content-type': 'application/x-ndjson',
    });
    assert.equal(sent.status, 202);
    const pipeline = srv.sluice.services.pipeline!;
    for (let i = 0; pipeline.counters().committed === 0; i++) {
      assert.ok(i < 400, 'the batch was not committed within 20 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    const { workers } = await srv.sluice.memory();
    assert.equal(workers.length, 1);
    const w = workers[0]!;
    assert.ok(w.heapTotalBytes! > 0 && w.heapUsedBytes! > 0 && w.heapUsedBytes! <= w.heapTotalBytes!);
    assert.ok(w.heapPeakBytes! >= w.heapTotalBytes! + w.heapExternalBytes!);
  } finally {
    await srv.stop();
  }
});
