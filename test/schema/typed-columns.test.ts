import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { DEFAULT_SCHEMA_SETTINGS } from '../../src/catalog/collections.js';
import { SchemaBook } from '../../src/schema/book.js';
import { fieldColumns } from '../../src/pipeline/file-plan.js';
import { createBatchProcessor, type BatchResult } from '../../src/pipeline/process-batch.js';
import { createBatchResolution } from '../../src/pipeline/resolver.js';
import type { FingerprintRules } from '../../src/schema/rules.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const RULES: FingerprintRules = { opaquePaths: [['meta']], trackedPaths: [], maxDepth: 6 };

/** Run one batch of NDJSON lines through the real batch processor; files land in `dir`. */
async function runBatch(
  dir: string,
  lines: string[],
  opts: {
    typedColumns?: boolean;
    settings?: Partial<typeof DEFAULT_SCHEMA_SETTINGS>;
    book?: SchemaBook;
    seq?: number;
  } = {},
): Promise<{ result: BatchResult; book: SchemaBook }> {
  const book = opts.book ?? new SchemaBook({ teamId: 't', projectId: 'p', collectionId: 'c' });
  const seq = opts.seq ?? 1;
  let ids = book.live().length;
  const resolution = createBatchResolution({
    book,
    settings: { ...DEFAULT_SCHEMA_SETTINGS, ...opts.settings },
    nowMs: () => T0,
    newVersionId: () => `sch_${String(++ids).padStart(20, '0')}`,
    ...(opts.typedColumns === undefined ? {} : { typedColumns: opts.typedColumns }),
  });
  const body = new TextEncoder().encode(lines.join('\n'));
  const result = await createBatchProcessor()(
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
  return { result, book };
}

async function query(sql: string): Promise<unknown[][]> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    return (await conn.runAndReadAll(sql)).getRows() as unknown[][];
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

const q = (s: string) => `'${s.replace(/'/g, "''")}'`;

test('version files carry one typed column per scalar leaf, JSON text for arrays and opaque objects', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-typed-'));
  try {
    const lines = [
      '{"user":{"id":"u1","name":"Ann"},"amount":12.5,"ok":true,"tags":["a","b"],"meta":{"k":[1,2]},"a.b":7,"note":"héllo ✓ \\"q\\"\\n","constructor":"c1","_sluice_x":1}',
      '{"user":{"id":"u2","name":"Bob"},"amount":-3,"ok":false,"tags":["c"],"meta":{"z":null},"a.b":8,"note":"plain","constructor":"c2","_sluice_x":2}',
      // Optional keys: no amount, no constructor (an inherited name must not leak in), no user.name.
      '{"user":{"id":"u3"},"ok":true,"tags":["x"],"meta":{},"a.b":9,"note":"n3","_sluice_x":3}',
      // Nulls join the version.
      '{"user":{"id":null,"name":null},"amount":null,"ok":null,"tags":null,"meta":null,"a.b":null,"note":null,"constructor":null,"_sluice_x":4}',
    ];
    // The version opens with the full shape; the next batch brings a subset and a null variant.
    const { result: first, book } = await runBatch(dir, lines.slice(0, 2));
    const { result: second } = await runBatch(dir, lines.slice(2), { book, seq: 2 });
    assert.equal(
      book.live().length,
      1,
      `every line joins one version: ${JSON.stringify(book.live().map((v) => v.signature))}`,
    );
    assert.deepEqual(
      [...first.files, ...second.files].map((f) => f.kind),
      ['version', 'version'],
    );
    const files = [...first.files, ...second.files].map((f) => join(dir, f.path));
    const file = files[1]!;
    const described = await query(`DESCRIBE SELECT * FROM read_parquet(${q(file)})`);
    const types = Object.fromEntries(described.map((r) => [String(r[0]), String(r[1])]));
    assert.deepEqual(types, {
      _sluice_seq: 'BIGINT',
      _sluice_row: 'INTEGER',
      _sluice_received_at: 'TIMESTAMP WITH TIME ZONE',
      _sluice_ts: 'TIMESTAMP WITH TIME ZONE',
      _sluice_version: 'VARCHAR',
      _sluice_shape: 'VARCHAR',
      _sluice_doc: 'VARCHAR',
      '["a.b"]': 'DOUBLE',
      amount: 'DOUBLE',
      constructor: 'VARCHAR',
      meta: 'VARCHAR',
      note: 'VARCHAR',
      ok: 'BOOLEAN',
      tags: 'VARCHAR',
      'user.id': 'VARCHAR',
      'user.name': 'VARCHAR',
    });

    const rows = await query(
      `SELECT "user.id", "user.name", amount, ok, tags, meta, "[""a.b""]", note, "constructor", _sluice_doc FROM read_parquet([${files.map(q).join(',')}], union_by_name = true) ORDER BY _sluice_seq, _sluice_row`,
    );
    assert.deepEqual(
      rows.map((r) => r.slice(0, 9)),
      [
        ['u1', 'Ann', 12.5, true, '["a","b"]', '{"k":[1,2]}', 7, 'héllo ✓ "q"\n', 'c1'],
        ['u2', 'Bob', -3, false, '["c"]', '{"z":null}', 8, 'plain', 'c2'],
        ['u3', null, null, true, '["x"]', '{}', 9, 'n3', null],
        [null, null, null, null, null, null, null, null, null],
      ],
    );
    assert.deepEqual(
      rows.map((r) => r[9]),
      lines,
      'the document column keeps every record exactly as sent',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every version of a batch gets its own typed columns; unclassified shapes too; documents-only mode has none', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-typed-'));
  try {
    const lines: string[] = [];
    for (let i = 0; i < 300; i++) {
      const s = i % 3;
      if (s === 0) lines.push(JSON.stringify({ kind: 'click', x: i, at: { page: `/p${i}` } }));
      else if (s === 1) lines.push(JSON.stringify({ kind: 'buy', price: i / 4, paid: i % 2 === 0 }));
      else lines.push(JSON.stringify({ other: `o${i}` }));
    }
    // Pool of 2: the third shape stays unclassified (its own file, still typed).
    const { result } = await runBatch(dir, lines, { settings: { schema_candidate_pool: 2 } });
    assert.deepEqual(result.files.map((f) => `${f.kind}:${f.rows}`).sort(), [
      'unclassified:100',
      'version:100',
      'version:100',
    ]);
    const files = result.files.map((f) => join(dir, f.path));
    const columnsOf = async (f: string) =>
      (await query(`DESCRIBE SELECT * FROM read_parquet(${q(f)})`))
        .map((r) => String(r[0]))
        .filter((c) => !c.startsWith('_sluice_'));
    const sets = await Promise.all(files.map(columnsOf));
    assert.deepEqual(sets.map((s) => s.sort().join(',')).sort(), ['at.page,kind,x', 'kind,paid,price', 'other']);
    const sums = await query(
      `SELECT sum(x)::BIGINT, count("at.page"), sum(price), count(*) FILTER (WHERE paid), count(other) FROM read_parquet([${files.map(q).join(',')}], union_by_name = true)`,
    );
    const expectX = lines.map((l) => JSON.parse(l) as { x?: number }).reduce((n, r) => n + (r.x ?? 0), 0);
    const expectPrice = lines.map((l) => JSON.parse(l) as { price?: number }).reduce((n, r) => n + (r.price ?? 0), 0);
    assert.deepEqual(sums[0], [BigInt(expectX), 100n, expectPrice, 50n, 100n]);

    const raw = mkdtempSync(join(tmpdir(), 'sluice-typed-raw-'));
    try {
      const { result: r2 } = await runBatch(raw, lines, {
        typedColumns: false,
        settings: { schema_candidate_pool: 2 },
      });
      for (const f of r2.files)
        assert.deepEqual(await columnsOf(join(raw, f.path)), [], 'documents-only files carry the envelope alone');
    } finally {
      rmSync(raw, { recursive: true, force: true });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('fieldColumns: scalar leaves typed, containers and mixed types as JSON, arrays inside and reserved names skipped', () => {
  const cols = fieldColumns([
    { path: 'a', type: 'object' },
    { path: 'a.b', type: 'number|null' },
    { path: 'a.c', type: 'object' },
    { path: 'items', type: 'array' },
    { path: 'items[]', type: 'object' },
    { path: 'items[].sku', type: 'string' },
    { path: 'm', type: 'number|string' },
    { path: 'n', type: 'null' },
    { path: '_sluice_doc', type: 'string' },
    { path: '["x.y"]', type: 'boolean' },
  ]);
  assert.deepEqual(
    cols.map((c) => [c.name, c.type, c.segments]),
    [
      ['a.b', 'number', ['a', 'b']],
      ['a.c', 'json', ['a', 'c']],
      ['items', 'json', ['items']],
      ['m', 'json', ['m']],
      ['["x.y"]', 'boolean', ['x.y']],
    ],
  );
  assert.deepEqual(fieldColumns([{ path: 'a', type: 'string' }], false), []);
});

test('a value nested 10,000 levels deep in a JSON column is null there, the batch is written and the document kept', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-typed-'));
  try {
    const deep = '['.repeat(10_000) + ']'.repeat(10_000);
    // Typed down to max depth (6), both records have one shape.
    const lines = [`{"k":1,"deep":${deep}}`, '{"k":2,"deep":[[[[[[[]]]]]]]}'];
    const { result } = await runBatch(dir, lines);
    assert.deepEqual(
      result.files.map((f) => `${f.kind}:${f.rows}`),
      ['version:2'],
    );
    const rows = await query(
      `SELECT k, deep, length(_sluice_doc) FROM read_parquet(${q(join(dir, result.files[0]!.path))}) ORDER BY k`,
    );
    assert.deepEqual(rows, [
      [1, null, BigInt(lines[0]!.length)],
      [2, '[[[[[[[]]]]]]]', BigInt(lines[1]!.length)],
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
