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
import { StringColumn } from '../../src/schema/columns.js';
import { fileSummary, readFileRows } from '../helpers/batch-files.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const RULES = { opaquePaths: [], trackedPaths: [], maxDepth: 6 };

/** One collection's worker side (a processor kept across batches, as a worker keeps it) and main side (a book). */
function pipeline(
  dir: string,
  opts: { speculate: boolean; templates: boolean },
  settings: Partial<typeof DEFAULT_SCHEMA_SETTINGS>,
) {
  const processBatch = createBatchProcessor(opts);
  const book = new SchemaBook({ teamId: 't', projectId: 'p', collectionId: 'c' });
  let ids = 0;
  return async (seq: number, lines: string[]): Promise<BatchResult> => {
    const resolution = createBatchResolution({
      book,
      settings: { ...DEFAULT_SCHEMA_SETTINGS, ...settings },
      nowMs: () => T0 + seq * 60_000,
      newVersionId: () => `sch_${String(++ids).padStart(20, '0')}`,
    });
    const body = new TextEncoder().encode(lines.join('\n'));
    const result = await processBatch(
      {
        collectionId: 'c',
        projectId: 'p',
        rules: RULES,
        entries: [{ seq, received_at: T0 + seq, format: 'ndjson', body }],
        firstSeq: seq,
        lastSeq: seq,
        filesDir: dir,
      },
      resolution.resolve,
    );
    book.apply(resolution.plan()!);
    return result;
  };
}

async function readRows(paths: string[]): Promise<string[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    return await readFileRows(conn, paths);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

const click = (i: number, x: unknown = i * 1.5) =>
  JSON.stringify({ kind: 'click', x, user: { id: `u${i}` }, ok: i % 2 === 0 });
const view = (i: number) => JSON.stringify({ kind: 'view', page: `/p/${i}`, tags: ['a', i] });
/** Numbers JSON.parse reads exactly, by rounding, or as Infinity; a matched template must agree. */
const NUMBERS = [
  '0',
  '-0',
  '-12',
  '3.25',
  '0.1',
  '1e3',
  '-2.5E-3',
  '123456789012345678',
  '9007199254740993',
  '0.30000000000000004',
  '1e400',
  '-1e-400',
  '12345.678901234567890',
  '5e-324',
];
/** Same shape each time (a template once learned), with values that exercise the matcher. */
const metric = (i: number, pretty = false) => {
  const raw = `{"name":"m${i % 3}","value":${NUMBERS[i % NUMBERS.length]},"ok":${i % 2 === 0},"note":${i % 4 === 0 ? null : `"n${i}"`},"at":{"host":"h\\u00e9${i % 2}"}}`;
  return pretty ? raw.replace(/:/g, ': ') : raw;
};
/** One shape with an event time given in the ways decode reads it (and ways it ignores). */
const timed = (i: number) =>
  JSON.stringify({
    kind: 'timed',
    timestamp: [T0 + i * 1000, new Date(T0 + i * 7000).toISOString(), 'not a date', -5][i % 4],
  });

/** Batches whose plans keep some layouts, change others, and add shapes, refusals and odd values. */
const BATCHES: string[][] = [
  [click(1), view(1), click(2), view(2), metric(0), metric(1), timed(0), timed(1)],
  [click(3), view(3), click(4), click(5), metric(2), metric(3), metric(4), timed(2), timed(3), timed(4)],
  // A shape not seen before (a subset: `ok` missing) joins the click version: same file and
  // columns as last batch, but rows the speculation did not take, so that file is built again.
  [
    click(12),
    JSON.stringify({ kind: 'click', x: 5, user: { id: 'u5' } }),
    view(8),
    ...Array.from({ length: 20 }, (_, i) => metric(5 + i)),
  ],
  // A superset shape opens a version of its own; whitespace and escapes the templates do not take.
  [
    click(6),
    JSON.stringify({ kind: 'click', x: 7, user: { id: 'u7' }, ok: true, extra: 'new' }),
    view(4),
    metric(30, true),
    metric(31),
    '{"name":"m\\u0031","value":1,"ok":true,"note":"a\\"b","at":{"host":"x"}}',
  ],
  [
    click(8),
    view(5),
    '[1,2]',
    '"just a string"',
    JSON.stringify({ kind: 'view', page: 'héllo ✓ "q"', tags: [] }),
    metric(32),
    timed(5),
  ],
  // Fields of another type in the same versions' paths, duplicate keys (the last one counts).
  [
    click(9),
    click(10, 'ten'),
    click(13, true),
    click(14, { deep: 1 }),
    view(6),
    JSON.stringify({ other: 1 }),
    JSON.stringify({ other: 2 }),
    JSON.stringify({ third: null }),
    '{"kind":"click","x":1,"x":"dup","user":{"id":"u1"},"ok":true}',
  ],
  [
    click(11),
    click(15, 'fifteen'),
    click(16, false),
    view(7),
    JSON.stringify({ other: 3 }),
    JSON.stringify({ third: 'x' }),
    metric(33),
    metric(34),
    timed(6),
    timed(7),
  ],
  // Arrays: of scalars (written as JSON.stringify writes them, whatever the bytes), empty, holding
  // objects or arrays (the parse path).
  [
    ...[1, 2, 3].map((i) => `{"kind":"list","items":["x\\"${i}",${i}.50,-0,1e400,null,${i % 2 === 0},"é"],"empty":[]}`),
    '{"kind":"list","items":[{"a":1}],"empty":[]}',
    '{"kind":"list","items":[[1]],"empty":[]}',
    '{"kind":"list","items":[ "spaced" ],"empty":[]}',
    view(9),
    view(10),
    '{"kind":"proto","__proto__":{"x":1},"constructor":"c","toString":0}',
  ],
  [
    ...[4, 5].map((i) => `{"kind":"list","items":["x\\"${i}",${i}.50,-0,1e400,null,${i % 2 === 0},"é"],"empty":[]}`),
    view(11),
    '{"kind":"proto","__proto__":{"x":2},"constructor":"c2","toString":1}',
    '{"kind":"sur","s":"a\\ud800"}',
    '{"kind":"sur","s":"\\udc00b"}',
  ],
];

const VARIANTS = [
  { label: 'speculative field columns and record templates', opts: { speculate: true, templates: true } },
  { label: 'record templates alone', opts: { speculate: false, templates: true } },
  { label: 'speculative field columns alone', opts: { speculate: true, templates: false } },
] as const;

for (const [label, settings] of [
  ['default settings', {}],
  // An alias pool of one: the book asks every batch to describe shapes it could not cache, whose
  // records the speculating processor already let go (they are parsed again from their bytes).
  ['an alias pool of one and a writer limit of two', { schema_alias_pool: 1, schema_writer_limit: 2 }],
] as const) {
  for (const variant of VARIANTS) {
    test(`files are identical with ${variant.label} and without (${label})`, async () => {
      const dirA = mkdtempSync(join(tmpdir(), 'sluice-spec-a-'));
      const dirB = mkdtempSync(join(tmpdir(), 'sluice-spec-b-'));
      try {
        const fast = pipeline(dirA, variant.opts, settings);
        const plain = pipeline(dirB, { speculate: false, templates: false }, settings);
        for (let b = 0; b < BATCHES.length; b++) {
          const seq = b + 1;
          const a = await fast(seq, BATCHES[b]!);
          const p = await plain(seq, BATCHES[b]!);
          assert.deepEqual(fileSummary(a), fileSummary(p), `batch ${seq}: same files`);
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
}

test('speculative builders are used only for a file with exactly the rows, keys and columns they were filled for', () => {
  const columns = [
    { name: 'x', segments: ['x'], type: 'number' as const },
    { name: 'user.id', segments: ['user', 'id'], type: 'string' as const },
  ];
  const spec: FileSpec = {
    kind: 'version',
    dir: 'sch_1',
    versionId: 'sch_1',
    shapeHash: null,
    keys: [11, 12],
    rows: 3,
    columns,
  };
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

test('string columns keep lone surrogates of neighbouring values apart (each its own replacement character)', () => {
  const column = new StringColumn(4);
  for (const v of ['a\ud800', '\udc00b', 'plain', '\ud83c\udf89']) column.push(v);
  assert.deepEqual([...column.vector()], ['a\ufffd', '\ufffdb', 'plain', '🎉']);
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
