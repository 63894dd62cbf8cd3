import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SCHEMA_SETTINGS } from '../../src/catalog/collections.js';
import { newId } from '../../src/ids.js';
import { WorkerPool } from '../../src/pipeline/pool.js';
import { createBatchResolution } from '../../src/pipeline/resolver.js';
import { SchemaBook } from '../../src/schema/book.js';

/** The real worker pool (piscina threads running process-batch): how batches are spread over the threads. */
describe('worker pool', () => {
  let dir: string;
  let pool: WorkerPool;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-pool-'));
    pool = new WorkerPool(2);
  });
  after(async () => {
    await pool.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('batches one after another take turns on the threads (the idle thread idle longest), and report their cost', async () => {
    const book = new SchemaBook({ teamId: 't', projectId: 'p', collectionId: 'c' });
    const threads: number[] = [];
    for (let b = 0; b < 4; b++) {
      const body = new TextEncoder().encode(
        Array.from({ length: 20 }, (_, k) => JSON.stringify({ a: b * 100 + k, s: 'x' })).join('\n'),
      );
      const seq = b + 1;
      const resolution = createBatchResolution({
        book,
        settings: { ...DEFAULT_SCHEMA_SETTINGS },
        nowMs: () => Date.now(),
        newVersionId: () => newId('schemaVersion'),
      });
      const buffer = body.buffer.slice(0);
      const result = await pool.run(
        {
          collectionId: 'c',
          projectId: 'p',
          rules: { opaquePaths: [], trackedPaths: [], maxDepth: 6 },
          entries: [{ seq, received_at: Date.now(), format: 'ndjson', body: new Uint8Array(buffer) }],
          firstSeq: seq,
          lastSeq: seq,
          filesDir: dir,
        },
        resolution.resolve,
        [buffer],
      );
      book.apply(resolution.plan()!);
      assert.equal(result.rows, 20);
      assert.ok(result.cost, 'the task reports its cost');
      assert.ok(result.cost.cpuMs >= 0 && result.cost.planWaitMs >= 0);
      threads.push(result.cost.thread);
    }
    assert.equal(new Set(threads).size, 2, `both threads ran batches: ${threads.join(', ')}`);
    for (let i = 1; i < threads.length; i++)
      assert.notEqual(threads[i], threads[i - 1], `batch ${i} went to the other thread: ${threads.join(', ')}`);
  });
});
