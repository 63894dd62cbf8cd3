import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SchemaBook } from '../../src/schema/book.js';
import { FileReader } from '../../src/schema/file-reader.js';
import { decodeEntries, type BatchEntry } from '../../src/records/decode.js';
import { createBatchProcessor } from '../../src/pipeline/process-batch.js';
import { createBatchResolution } from '../../src/pipeline/resolver.js';
import { DEFAULT_SCHEMA_SETTINGS } from '../../src/catalog/collections.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const enc = (s: string) => new TextEncoder().encode(s);

test('decode: NDJSON lines, array elements and single objects keep their exact bytes', () => {
  const entries: BatchEntry[] = [
    { seq: 1, received_at: T0, format: 'ndjson', body: enc('{"a":1}\r\n\n  {"b":"x\\n,]"}\n') },
    { seq: 2, received_at: T0, format: 'array', body: enc(' [ {"c":[1,{"d":"]"}]} , {"e":"\\"}"}]') },
    {
      seq: 3,
      received_at: T0,
      format: 'object',
      body: enc('{\n  "f": 1,\n  "timestamp": "2026-01-02T00:00:00Z"\n}\n'),
    },
  ];
  const rows = decodeEntries(entries);
  assert.equal(rows.count, 5);
  const raw = (i: number) => Buffer.from(entries[rows.entry[i]!]!.body).toString('utf8', rows.start[i]!, rows.end[i]!);
  assert.deepEqual([0, 1, 2, 3, 4].map(raw), [
    '{"a":1}',
    '{"b":"x\\n,]"}',
    '{"c":[1,{"d":"]"}]}',
    '{"e":"\\"}"}',
    '{\n  "f": 1,\n  "timestamp": "2026-01-02T00:00:00Z"\n}',
  ]);
  assert.deepEqual(rows.records[3], { e: '"}' });
  assert.equal(rows.ts[4], Date.parse('2026-01-02T00:00:00Z'));
  assert.equal(rows.ts[0], T0);
  assert.deepEqual([...rows.ordinal], [0, 1, 0, 1, 0]);
});

test('decode: a large body is read window by window; records across window edges and larger than a window parse whole', () => {
  const lines: string[] = [];
  for (let i = 0; i < 3000; i++) lines.push(JSON.stringify({ i, pad: 'x'.repeat(i % 97) }));
  lines.splice(1500, 0, JSON.stringify({ big: 'y'.repeat(100_000) }));
  // The same records with one non-ASCII character: decoded record by record as UTF-8.
  const accented = lines.map((l, i) => (i === 2999 ? l.replace('"pad":"', '"pad":"é') : l));
  for (const sent of [lines, accented]) {
    const rows = decodeEntries([{ seq: 1, received_at: T0, format: 'ndjson', body: enc(sent.join('\n')) }]);
    assert.equal(rows.count, sent.length);
    for (let r = 0; r < rows.count; r++) assert.deepEqual(rows.records[r], JSON.parse(sent[r]!), `record ${r}`);
  }
});

test('a batch becomes one Parquet file per version, documents as sent, readable by DuckDB', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-batch-'));
  const reader = await FileReader.open();
  try {
    const book = new SchemaBook({ teamId: 't', projectId: 'p', collectionId: 'c' });
    const settings = { ...DEFAULT_SCHEMA_SETTINGS, schema_writer_limit: 2, schema_candidate_pool: 2 };
    const lines = [
      '{"kind":"click","x":1,"user":{"id":"u1"}}',
      '{"kind":"click","x":2.5,"user":{"id":"u2"}}',
      '{"kind":"view","page":"/a","timestamp":1767225000000}',
      '{"other":true}',
      '{"third":1}',
      '{"third":2}',
    ];
    const entries: BatchEntry[] = [
      { seq: 7, received_at: T0, format: 'ndjson', body: enc(lines.slice(0, 3).join('\n')) },
      { seq: 8, received_at: T0 + 1, format: 'ndjson', body: enc(lines.slice(3).join('\n')) },
    ];
    let ids = 0;
    const resolution = createBatchResolution({
      book,
      settings,
      nowMs: () => T0 + 5,
      newVersionId: () => `sch_${String(++ids).padStart(20, '0')}`,
    });
    const processBatch = createBatchProcessor();
    const result = await processBatch(
      {
        collectionId: 'c',
        projectId: 'p',
        rules: { opaquePaths: [], trackedPaths: [], maxDepth: 6 },
        entries,
        firstSeq: 7,
        lastSeq: 8,
        filesDir: dir,
      },
      resolution.resolve,
    );
    const plan = resolution.plan()!;
    book.apply(plan);
    assert.equal(result.rows, 6);
    // click and view shapes: "view" is not a subset of "click" → 2 candidates; the pool (2) is then
    // full, so {"other"} and {"third"} stay unclassified: writer limit 2 gives each its own file.
    const kinds = result.files.map((f) => `${f.kind}:${f.rows}`).sort();
    assert.deepEqual(kinds, ['unclassified:1', 'unclassified:2', 'version:1', 'version:2']);
    assert.equal(book.live().length, 2);
    assert.deepEqual(book.unclassified(), { shapes: 2, rows: 3 });
    const all = await reader.docs({ paths: result.files.map((f) => join(dir, f.path)), limit: 10, sort: 'desc' });
    assert.equal(all.length, 6);
    assert.deepEqual(new Set(all.map((r) => r.doc)), new Set(lines));
    assert.equal(all.at(-1)!.doc, lines[2], 'the view record carries the oldest timestamp');
    const click = book.live().find((v) => v.fields.some((f) => f.path === 'user.id'))!;
    const clicks = await reader.docs({
      paths: result.files.map((f) => join(dir, f.path)),
      versionIds: [click.id],
      limit: 10,
      sort: 'asc',
    });
    assert.deepEqual(
      clicks.map((r) => r.doc),
      lines.slice(0, 2),
    );
    // Typed columns exist for scalar fields.
    const vfile = result.files.find((f) => f.versionId === click.id)!;
    assert.equal(vfile.path, `${click.id}/7.parquet`);
    assert.deepEqual(readdirSync(join(dir, click.id)), ['7.parquet']);
    // Paging with a cursor.
    const page1 = await reader.docs({ paths: result.files.map((f) => join(dir, f.path)), limit: 4, sort: 'desc' });
    const last = page1.at(-1)!;
    const page2 = await reader.docs({
      paths: result.files.map((f) => join(dir, f.path)),
      limit: 4,
      sort: 'desc',
      after: { ts: last.tsMs, seq: last.seq, row: last.row },
    });
    assert.equal(page2.length, 2);
    const back = await reader.docs({
      paths: result.files.map((f) => join(dir, f.path)),
      limit: 4,
      sort: 'desc',
      before: { ts: page2[0]!.tsMs, seq: page2[0]!.seq, row: page2[0]!.row },
    });
    assert.deepEqual(
      back.map((r) => r.doc),
      page1.map((r) => r.doc),
    );
  } finally {
    reader.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('past the writer budget, unclassified rows go to one overflow file; refused rows too', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-batch-'));
  try {
    const book = new SchemaBook({ teamId: 't', projectId: 'p', collectionId: 'c' });
    const settings = { ...DEFAULT_SCHEMA_SETTINGS, schema_writer_limit: 1, schema_candidate_pool: 1 };
    const body = ['{"a":1}', '{"b":1}', '{"b":2}', '{"c":1}', '[1,2]', '"text"'].join('\n');
    const resolution = createBatchResolution({
      book,
      settings,
      nowMs: () => T0,
      newVersionId: () => 'sch_00000000000000000001',
    });
    const result = await createBatchProcessor()(
      {
        collectionId: 'c',
        projectId: 'p',
        rules: { opaquePaths: [], trackedPaths: [], maxDepth: 6 },
        entries: [{ seq: 1, received_at: T0, format: 'ndjson', body: enc(body) }],
        firstSeq: 1,
        lastSeq: 1,
        filesDir: dir,
      },
      resolution.resolve,
    );
    const kinds = result.files.map((f) => `${f.kind}:${f.rows}`).sort();
    // Same receive time: in order of first sight, so {a} opens the one candidate.
    assert.deepEqual(kinds, ['overflow:3', 'unclassified:2', 'version:1']);
    assert.equal(
      result.files.reduce((n, f) => n + f.rows, 0),
      6,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('docs pages walk many files in time order, forwards and back, each document once', async () => {
  const { listDocs } = await import('../../src/api/schemas/docs.js');
  const dir = mkdtempSync(join(tmpdir(), 'sluice-docs-'));
  const reader = await FileReader.open();
  try {
    const book = new SchemaBook({ teamId: 't', projectId: 'p', collectionId: 'c' });
    const processBatch = createBatchProcessor();
    const files: Array<{ path: string; minTs: number; maxTs: number }> = [];
    let ids = 0;
    // 40 batches; timestamps interleave across batches so files overlap in time.
    for (let b = 0; b < 40; b++) {
      const lines = [0, 1, 2].map((k) =>
        JSON.stringify({ n: b * 3 + k, timestamp: T0 + ((b * 7 + k * 13) % 100) * 1000 }),
      );
      const resolution = createBatchResolution({
        book,
        settings: DEFAULT_SCHEMA_SETTINGS,
        nowMs: () => T0,
        newVersionId: () => `sch_${String(++ids).padStart(20, '0')}`,
      });
      const r = await processBatch(
        {
          collectionId: 'c',
          projectId: 'p',
          rules: { opaquePaths: [], trackedPaths: [], maxDepth: 6 },
          entries: [{ seq: b + 1, received_at: T0, format: 'ndjson', body: enc(lines.join('\n')) }],
          firstSeq: b + 1,
          lastSeq: b + 1,
          filesDir: dir,
        },
        resolution.resolve,
      );
      book.apply(resolution.plan()!);
      for (const f of r.files) files.push({ path: join(dir, f.path), minTs: f.minTs, maxTs: f.maxTs });
    }
    const all = await reader.docs({ paths: files.map((f) => f.path), limit: 1000, sort: 'desc' });
    const expected = all.map((r) => (JSON.parse(r.doc) as { n: number }).n);
    assert.equal(expected.length, 120);
    const seen: number[] = [];
    const pages: unknown[][] = [];
    let cursor: string | null = null;
    do {
      const page: any = await listDocs(reader, { files }, { limit: 7, ...(cursor ? { after: cursor } : {}) });
      // data is the page's JSON text, spliced into the response verbatim.
      const data = JSON.parse(page.data.text);
      pages.push(data);
      seen.push(...data.map((d: any) => d.n));
      cursor = page.pagination.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, expected);
    // Back from the last page.
    const last: any = await listDocs(
      reader,
      { files },
      { limit: 7, after: (await listDocs(reader, { files }, { limit: 112 })).pagination.next_cursor! },
    );
    const prev: any = await listDocs(reader, { files }, { limit: 7, before: last.pagination.prev_cursor });
    assert.deepEqual(JSON.parse(prev.data.text), pages[15]);
  } finally {
    reader.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
