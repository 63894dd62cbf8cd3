import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SCHEMA_SETTINGS } from '../../src/catalog/collections.js';
import { SchemaBook } from '../../src/schema/book.js';
import { createBatchProcessor, fileName, type BatchTask } from '../../src/pipeline/process-batch.js';
import { createBatchResolution } from '../../src/pipeline/resolver.js';
import { TransformProcess } from '../../src/transform/sandbox-process.js';
import type { ViewTask } from '../../src/transform/view-stage.js';

/**
 * The batch processor with a view, its script in a real sandbox process: the view starts before
 * the collection files are built (the sandbox works while this thread builds them), and a batch
 * whose collection files fail leaves no view file behind.
 */

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** A scratch dir and a real sandbox process, both gone when test `t` ends. */
function setup(t: TestContext) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-batch-views-'));
  const scripts = new TransformProcess();
  t.after(async () => {
    await scripts.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const view: ViewTask = {
    viewId: 'viw_1',
    parentViewId: null,
    transformId: 'vtr_1',
    scriptHash: 'h1',
    script: 'function transform(r, ctx) { return { id: r.id, double: r.n * 2, at: ctx.timestamp } }',
    outputSchema: [
      { name: 'id', type: 'string' },
      { name: 'double', type: 'number' },
      { name: 'at', type: 'date' },
    ],
    dir: join(dir, 'view'),
  };
  const lines = Array.from({ length: 2000 }, (_, i) =>
    JSON.stringify({ id: `r${i}`, n: i, timestamp: new Date(T0 + i).toISOString() }),
  );
  const task = (filesDir: string): BatchTask => ({
    collectionId: 'c',
    projectId: 'p',
    rules: { opaquePaths: [], trackedPaths: [], maxDepth: 6 },
    entries: [{ seq: 1, received_at: T0, format: 'ndjson', body: new TextEncoder().encode(lines.join('\n')) }],
    firstSeq: 1,
    lastSeq: 1,
    filesDir,
    views: [view],
  });
  const resolution = () =>
    createBatchResolution({
      book: new SchemaBook({ teamId: 't', projectId: 'p', collectionId: 'c' }),
      settings: { ...DEFAULT_SCHEMA_SETTINGS },
      nowMs: () => T0,
      newVersionId: () => 'sch_00000000000000000001',
    });
  return { dir, view, task, resolution, scripts };
}

test('the view is handed to its sandbox process before the collection files are built; both are written', async (t) => {
  const { dir, view, task, resolution, scripts } = setup(t);
  const filesDir = join(dir, 'files');
  const seen: string[][] = [];
  const processBatch = createBatchProcessor({
    runScript: (batch, v, handedOver) =>
      scripts.run({ ...batch, ...v }, () => {
        // What the collection's directory holds when the sandbox has the records.
        seen.push(existsSync(filesDir) ? readdirSync(filesDir, { recursive: true }).map(String) : []);
        handedOver?.();
      }),
  });
  const r = resolution();
  const result = await processBatch(task(filesDir), r.resolve);
  assert.equal(seen.length, 1);
  assert.deepEqual(
    seen[0]!.filter((f) => f.endsWith('.parquet')),
    [],
    'no collection file yet when the view was handed over',
  );
  assert.ok(result.files.length > 0 && result.files.every((f) => existsSync(join(filesDir, f.path))));
  const [o] = result.views;
  assert.equal(o?.status, 'ok', JSON.stringify(o));
  if (o?.status === 'ok') {
    assert.equal(o.rows, 2000);
    assert.ok(existsSync(join(view.dir, o.file!.path)));
    assert.deepEqual(o.counts.failed, {});
  }
});

test('a batch whose collection files fail leaves no view file, and rejects', async (t) => {
  const { dir, view, task, resolution, scripts } = setup(t);
  // The collection's directory is a file: its files cannot be written.
  const filesDir = join(dir, 'not-a-dir');
  writeFileSync(filesDir, 'x');
  const processBatch = createBatchProcessor({
    runScript: (batch, v, handedOver) => scripts.run({ ...batch, ...v }, handedOver),
  });
  await assert.rejects(processBatch(task(filesDir), resolution().resolve), /ENOTDIR|EEXIST|not a directory/);
  assert.deepEqual(
    existsSync(view.dir) ? readdirSync(view.dir) : [],
    [],
    'the view file written for the batch was removed',
  );
  assert.equal(existsSync(join(filesDir, fileName('x', 1))), false);
});

test('a view gets the same outputs whether templated records reach it as slot values or as text (a mix of both in one batch)', async (t) => {
  const { dir, task, resolution, scripts } = setup(t);
  // Two shapes, escapes, integer-like keys, nulls and arrays; every 7th record non-ASCII (parsed).
  const lines = Array.from({ length: 1500 }, (_, i) =>
    i % 2 === 0
      ? JSON.stringify({
          id: `r${i}`,
          n: i === 2 ? -0 : i * 0.25,
          ok: i % 3 === 0,
          note: i % 7 === 0 ? `café ${i}` : `plain "${i}"`,
          ctx: { ip: '10.0.0.1', tags: ['a', i, null] },
        })
      : JSON.stringify({
          '10': i,
          '2': `two${i}`,
          ['__proto__']: { p: i },
          gone: null,
          id: `s${i}`,
          nested: { deep: { v: i % 5 === 0 } },
        }),
  );
  const script =
    'function transform(r, ctx) { return { j: JSON.stringify(r), keys: Object.keys(r).join(","), at: ctx.timestamp } }';
  const view: ViewTask = {
    viewId: 'viw_2',
    parentViewId: null,
    transformId: 'vtr_2',
    scriptHash: 'h2',
    script,
    outputSchema: [
      { name: 'j', type: 'string' },
      { name: 'keys', type: 'string' },
      { name: 'at', type: 'date' },
    ],
    dir: join(dir, 'view2'),
  };
  const run = async (slots: boolean) => {
    const seen: Array<{ templated: number; outputs: unknown }> = [];
    const processBatch = createBatchProcessor({
      slots,
      runScript: async (batch, v, handedOver) => {
        const o = await scripts.run({ ...batch, ...v }, handedOver);
        const ids = batch.templates?.ids ?? new Int32Array(0);
        seen.push({ templated: ids.filter((id) => id >= 0).length, outputs: o });
        return o;
      },
    });
    const r = resolution();
    // Two batches: the first teaches the templates, the second is matched against them.
    for (let b = 0; b < 2; b++) {
      const body = new TextEncoder().encode(lines.join('\n'));
      await processBatch(
        {
          ...task(join(dir, `files-${slots}`)),
          entries: [{ seq: b + 1, received_at: T0, format: 'ndjson', body }],
          firstSeq: b + 1,
          lastSeq: b + 1,
          views: [view],
        },
        r.resolve,
      );
    }
    return seen;
  };
  const text = await run(false);
  const built = await run(true);
  assert.deepEqual(
    text.map((s) => s.templated),
    [0, 0],
  );
  // The second batch: all but the non-ASCII records (and the records templates were learned from) are built.
  assert.ok(built[1]!.templated > 1200, `templated ${built[1]!.templated}`);
  assert.deepEqual(
    built.map((s) => s.outputs),
    text.map((s) => s.outputs),
  );
});
