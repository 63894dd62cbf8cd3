import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { DEFAULT_SCHEMA_SETTINGS } from '../../src/catalog/collections.js';
import { SchemaBook } from '../../src/schema/book.js';
import { createBatchProcessor, type BatchResult } from '../../src/pipeline/process-batch.js';
import { createBatchResolution } from '../../src/pipeline/resolver.js';
import { FieldLayouts, SpeculativeFields } from '../../src/pipeline/speculative-fields.js';
import type { FileSpec } from '../../src/pipeline/file-plan.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const RULES = { opaquePaths: [], trackedPaths: [], maxDepth: 6 };

/** One collection's worker side (a processor kept across batches, as a worker keeps it) and main side (a book). */
function pipeline(dir: string, speculate: boolean, settings: Partial<typeof DEFAULT_SCHEMA_SETTINGS>) {
  const processBatch = createBatchProcessor({ speculate });
  const book = new SchemaBook({ teamId: 't', projectId: 'p', collectionId: 'c' });
  let ids = 0;
  return async (seq: number, lines: string[]): Promise<BatchResult> => {
    const resolution = createBatchResolution({ book, settings: { ...DEFAULT_SCHEMA_SETTINGS, ...settings }, nowMs: () => T0 + seq * 60_000, newVersionId: () => `sch_${String(++ids).padStart(20, '0')}` });
    const body = new TextEncoder().encode(lines.join('\n'));
    const result = await processBatch({ collectionId: 'c', projectId: 'p', rules: RULES, entries: [{ seq, received_at: T0 + seq, format: 'ndjson', body }], firstSeq: seq, lastSeq: seq, filesDir: dir }, resolution.resolve);
    book.apply(resolution.plan()!);
    return result;
  };
}

async function readRows(paths: string[]): Promise<string[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    const out: string[] = [];
    for (const p of paths) {
      const reader = await conn.runAndReadAll(`SELECT * FROM read_parquet('${p.replace(/'/g, "''")}') ORDER BY _sluice_seq, _sluice_row`);
      const names = reader.columnNames();
      for (const row of reader.getRows()) out.push(JSON.stringify(names.map((n, i) => [n, String(row[i])])));
    }
    return out;
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

const click = (i: number, x: unknown = i * 1.5) => JSON.stringify({ kind: 'click', x, user: { id: `u${i}` }, ok: i % 2 === 0 });
const view = (i: number) => JSON.stringify({ kind: 'view', page: `/p/${i}`, tags: ['a', i] });

/** Batches whose plans keep some layouts, change others, and add shapes, refusals and odd values. */
const BATCHES: string[][] = [
  [click(1), view(1), click(2), view(2)],
  [click(3), view(3), click(4), click(5)],
  // A shape not seen before (a subset: `ok` missing) joins the click version: same file and
  // columns as last batch, but rows the speculation did not take, so that file is built again.
  [click(12), JSON.stringify({ kind: 'click', x: 5, user: { id: 'u5' } }), view(8)],
  // A superset shape opens a version of its own.
  [click(6), JSON.stringify({ kind: 'click', x: 7, user: { id: 'u7' }, ok: true, extra: 'new' }), view(4)],
  [click(8), view(5), '[1,2]', '"just a string"', JSON.stringify({ kind: 'view', page: 'héllo ✓ "q"', tags: [] })],
  [click(9), click(10), view(6), JSON.stringify({ other: 1 }), JSON.stringify({ other: 2 }), JSON.stringify({ third: null })],
  [click(11), view(7), JSON.stringify({ other: 3 }), JSON.stringify({ third: 'x' })],
];

for (const [label, settings] of [
  ['default settings', {}],
  // An alias pool of one: the book asks every batch to describe shapes it could not cache, whose
  // records the speculating processor already let go (they are parsed again from their bytes).
  ['an alias pool of one and a writer limit of two', { schema_alias_pool: 1, schema_writer_limit: 2 }],
] as const) {
  test(`files are identical with and without speculative field columns (${label})`, async () => {
    const dirA = mkdtempSync(join(tmpdir(), 'sluice-spec-a-'));
    const dirB = mkdtempSync(join(tmpdir(), 'sluice-spec-b-'));
    try {
      const speculating = pipeline(dirA, true, settings);
      const plain = pipeline(dirB, false, settings);
      for (let b = 0; b < BATCHES.length; b++) {
        const seq = b + 1;
        const a = await speculating(seq, BATCHES[b]!);
        const p = await plain(seq, BATCHES[b]!);
        const summary = (r: BatchResult) => r.files.map((f) => ({ kind: f.kind, path: f.path, rows: f.rows, counts: f.counts, minTs: f.minTs, maxTs: f.maxTs }));
        assert.deepEqual(summary(a), summary(p), `batch ${seq}: same files`);
        assert.equal(a.rows, BATCHES[b]!.length);
        const rowsA = await readRows(a.files.map((f) => join(dirA, f.path)));
        const rowsB = await readRows(p.files.map((f) => join(dirB, f.path)));
        assert.equal(rowsA.length, BATCHES[b]!.length);
        assert.deepEqual(rowsA, rowsB, `batch ${seq}: same rows and columns`);
      }
    } finally {
      rmSync(dirA, { recursive: true, force: true });
      rmSync(dirB, { recursive: true, force: true });
    }
  });
}

test('speculative builders are used only for a file with exactly the rows, keys and columns they were filled for', () => {
  const columns = [
    { name: 'x', segments: ['x'], type: 'number' as const },
    { name: 'user.id', segments: ['user', 'id'], type: 'string' as const },
  ];
  const spec: FileSpec = { kind: 'version', dir: 'sch_1', versionId: 'sch_1', shapeHash: null, keys: [11, 12], rows: 3, columns };
  const layouts = new FieldLayouts();
  layouts.learn([spec]);
  const fields = new SpeculativeFields(layouts);
  assert.equal(fields.take(11, { x: 1, user: { id: 'a' } }), true);
  assert.equal(fields.take(99, { x: 2 }), false, 'a shape without a layout is held');
  assert.equal(fields.take(12, { x: 'not a number', user: { id: 'b' } }), true);
  assert.equal(fields.take(11, { x: 3 }), true);
  const builders = fields.buildersFor({ ...spec, rows: 3 });
  assert.ok(builders);
  assert.deepEqual([...builders[0]!.vector()], [1, null, 3]);
  assert.deepEqual([...builders[1]!.vector()], ['a', 'b', null]);
  assert.equal(fields.buildersFor({ ...spec, keys: [11, 12, 13], rows: 3 }), null, 'a key that was not taken');
  assert.equal(fields.buildersFor({ ...spec, keys: [11], rows: 3 }), null, 'a key taken that the file does not hold');
  assert.equal(fields.buildersFor({ ...spec, rows: 4 }), null, 'another row count');
  assert.equal(fields.buildersFor({ ...spec, columns: columns.slice(0, 1) }), null, 'other columns');
  assert.equal(fields.buildersFor({ ...spec, dir: 'sch_2' }), null, 'another file');
});

test('speculative builders grow past the size of the last batch (strings encoded block by block, ASCII or not)', () => {
  const columns = [
    { name: 'n', segments: ['n'], type: 'number' as const },
    { name: 'b', segments: ['b'], type: 'boolean' as const },
    { name: 's', segments: ['s'], type: 'string' as const },
  ];
  const spec: FileSpec = { kind: 'version', dir: 'v', versionId: 'v', shapeHash: null, keys: [1], rows: 2, columns };
  const layouts = new FieldLayouts();
  layouts.learn([spec]);
  const fields = new SpeculativeFields(layouts);
  const n = 3000;
  const str = (i: number) => (i > 2000 && i % 5 === 0 ? `é✓${i}` : `s${i}`);
  for (let i = 0; i < n; i++) fields.take(1, i % 7 === 0 ? {} : { n: i, b: i % 2 === 0, s: str(i) });
  const builders = fields.buildersFor({ ...spec, rows: n })!;
  const [nums, bools, strs] = builders.map((b) => [...b.vector()]);
  for (let i = 0; i < n; i++) {
    const absent = i % 7 === 0;
    assert.equal(nums![i], absent ? null : i);
    assert.equal(bools![i], absent ? null : i % 2 === 0);
    assert.equal(strs![i], absent ? null : str(i));
  }
});
