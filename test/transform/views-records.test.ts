import { test } from 'node:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { fails, ok } from '../catalog/helpers.js';
import type { OutputField } from '../../src/transform/view-records.js';
import { SCRIPT, viewSetup, writeViewFile, type FileRow } from './view-helpers.js';

const FIELDS: OutputField[] = [
  { name: 'name', type: 'string' },
  { name: 'amount', type: 'number' },
  { name: 'paid', type: 'boolean' },
  { name: 'at', type: 'date' },
  { name: 'tags', type: 'array' },
  { name: 'nothing', type: 'null' },
];

const T0 = Date.parse('2026-03-01T00:00:00Z');
const MIN = 60_000;

function row(minute: number, seq: number, name: string, extra: Record<string, unknown> = {}): FileRow {
  return {
    ts: T0 + minute * MIN,
    seq,
    values: {
      name,
      amount: minute,
      paid: minute % 2 === 0,
      at: T0 - minute,
      tags: [name, minute],
      nothing: null,
      ...extra,
    },
  };
}

test('view records: output fields only, newest first across files, cursors both ways, time range', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { views, collection } = await viewSetup(srv);
  const view = ok(await srv.post(views, { name: 'V', collection_id: collection.id, output_schema: FIELDS }), 201);
  const url = `${views}/${view.id}/records`;
  assert.deepEqual(ok(await srv.get(url)), [], 'no files yet');

  // Two batch files and a backfill file whose times interleave; rows of one minute tie on time.
  await writeViewFile(srv, view, FIELDS, '000001.parquet', [row(0, 1, 'a'), row(2, 1, 'c'), row(4, 1, 'e')]);
  await writeViewFile(srv, view, FIELDS, '000002.parquet', [row(1, 2, 'b'), row(3, 2, 'd'), row(4, 2, 'f')]);
  await writeViewFile(srv, view, FIELDS, 'backfill/000003.parquet', [
    row(5, 3, 'g', { tags: null, amount: null }),
    row(5, 3, 'h'),
  ]);

  const all = ok(await srv.get(url));
  assert.deepEqual(
    all.map((r: any) => r.name),
    ['h', 'g', 'f', 'e', 'd', 'c', 'b', 'a'],
    'time desc, then seq desc, then row desc',
  );
  assert.deepEqual(
    Object.keys(all[0]),
    FIELDS.map((f) => f.name),
    'output fields only, in schema order',
  );
  assert.deepEqual(
    all.find((r: any) => r.name === 'c'),
    { name: 'c', amount: 2, paid: true, at: new Date(T0 - 2).toISOString(), tags: ['c', 2], nothing: null },
  );
  assert.deepEqual(
    all.find((r: any) => r.name === 'g'),
    { name: 'g', amount: null, paid: false, at: new Date(T0 - 5).toISOString(), tags: null, nothing: null },
  );

  // Pages of 3: forward to the end, then back.
  const p1 = await srv.get(`${url}?limit=3`);
  assert.deepEqual(
    ok(p1).map((r: any) => r.name),
    ['h', 'g', 'f'],
  );
  assert.equal(p1.body.pagination!.prev_cursor, null);
  const p2 = await srv.get(`${url}?limit=3&after=${p1.body.pagination!.next_cursor}`);
  assert.deepEqual(
    ok(p2).map((r: any) => r.name),
    ['e', 'd', 'c'],
  );
  const p3 = await srv.get(`${url}?limit=3&after=${p2.body.pagination!.next_cursor}`);
  assert.deepEqual(
    ok(p3).map((r: any) => r.name),
    ['b', 'a'],
  );
  assert.equal(p3.body.pagination!.next_cursor, null);
  const back = await srv.get(`${url}?limit=3&before=${p3.body.pagination!.prev_cursor}`);
  assert.deepEqual(
    ok(back).map((r: any) => r.name),
    ['e', 'd', 'c'],
  );
  const first = await srv.get(`${url}?limit=3&before=${back.body.pagination!.prev_cursor}`);
  assert.deepEqual(
    ok(first).map((r: any) => r.name),
    ['h', 'g', 'f'],
  );
  assert.equal(first.body.pagination!.prev_cursor, null);

  // Oldest first, one row per page: every row exactly once.
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const res: any = await srv.get(`${url}?limit=1&sort=asc${cursor ? `&after=${cursor}` : ''}`);
    seen.push(...ok(res).map((r: any) => r.name));
    cursor = res.body.pagination.next_cursor;
  } while (cursor);
  assert.deepEqual(seen, ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
  fails(
    await srv.get(`${url}?limit=3&sort=asc&after=${p1.body.pagination!.next_cursor}`),
    400,
    'request_invalid_cursor',
    'query.after',
  );
  fails(await srv.get(`${url}?after=nonsense`), 400, 'request_invalid_cursor', 'query.after');

  // Time range: start inclusive, end exclusive.
  const start = new Date(T0 + 1 * MIN).toISOString();
  const end = new Date(T0 + 4 * MIN).toISOString();
  assert.deepEqual(
    ok(await srv.get(`${url}?start_at=${start}&end_at=${end}`)).map((r: any) => r.name),
    ['d', 'c', 'b'],
  );
  const ranged = await srv.get(`${url}?start_at=${start}&end_at=${end}&limit=2`);
  assert.deepEqual(
    ok(
      await srv.get(`${url}?start_at=${start}&end_at=${end}&limit=2&after=${ranged.body.pagination!.next_cursor}`),
    ).map((r: any) => r.name),
    ['b'],
  );
  fails(await srv.get(`${url}?start_at=${end}&end_at=${start}`), 400, 'request_validation_failed', 'query.start_at');
  fails(await srv.get(`${url}?start_at=yesterday`), 400, 'request_validation_failed', 'query.start_at');
  fails(await srv.get(`${url}?limit=0`), 400, 'request_validation_failed', 'query.limit');
  fails(await srv.get(`${url}?limit=201`), 400, 'request_validation_failed', 'query.limit');
  assert.equal((await srv.get(url)).body.pagination!.limit, 25);

  // Stored output locks the output schema.
  fails(
    await srv.post(`${views}/${view.id}`, { output_schema: [{ name: 'x', type: 'string' }] }),
    409,
    'conflict',
    'body.output_schema',
  );
});

test('view records: many files, limit 200, paging across files in one query chunk and the next', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { views, collection } = await viewSetup(srv);
  const fields: OutputField[] = [{ name: 'n', type: 'number' }];
  const view = ok(
    await srv.post(views, { name: 'V', collection_id: collection.id, output_schema: fields, transform_script: SCRIPT }),
    201,
  );
  // 40 files of 10 rows (more than one 32-file query chunk), times increasing with the file.
  for (let f = 0; f < 40; f++) {
    const rows = Array.from({ length: 10 }, (_, i) => ({
      ts: T0 + (f * 10 + i) * 1000,
      seq: f + 1,
      values: { n: f * 10 + i },
    }));
    await writeViewFile(srv, view, fields, `${String(f).padStart(6, '0')}.parquet`, rows);
  }
  const got: number[] = [];
  let cursor: string | null = null;
  do {
    const res: any = await srv.get(`${views}/${view.id}/records?limit=150${cursor ? `&after=${cursor}` : ''}`);
    got.push(...ok(res).map((r: any) => r.n));
    cursor = res.body.pagination.next_cursor;
  } while (cursor);
  assert.deepEqual(
    got,
    Array.from({ length: 400 }, (_, i) => 399 - i),
  );
  assert.equal(ok(await srv.get(`${views}/${view.id}/records?limit=200`)).length, 200);
});

test('view records: a file its manifest names but the disk lost is skipped, and the answer says so', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { views, collection } = await viewSetup(srv);
  const view = ok(await srv.post(views, { name: 'V', collection_id: collection.id, output_schema: FIELDS }), 201);
  await writeViewFile(srv, view, FIELDS, 'b1.parquet', [row(0, 1, 'a')]);
  await writeViewFile(srv, view, FIELDS, 'b2.parquet', [row(1, 2, 'b')]);
  rmSync(join(srv.sluice.services.views.viewDir(view), 'b2.parquet'));
  const r = await srv.get(`${views}/${view.id}/records`);
  assert.equal(r.status, 200);
  assert.deepEqual(
    r.body.data.map((x: any) => x.name),
    ['a'],
  );
  assert.match(r.body.message, /1 output file of view .* missing on disk was skipped \(b2\.parquet\)/);
  assert.equal(ok(await srv.get(`${views}/${view.id}/records?limit=1`)).length, 1);
});
