import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SchemaBook } from '../../src/schema/book.js';
import { T0, owner, bookSettings, newId, sight } from './book-fixture.js';

const settings = bookSettings();

test('optional keys auto: a subset shape joins a version opened earlier in the same batch', () => {
  const book = new SchemaBook(owner);
  // One request: {"a":1,"b":"x"}, {"a":2,"b":"y"}, {"a":3}.
  const plan = book.planBatch([sight({ a: 1, b: 'x' }, 2, T0), sight({ a: 3 }, 1, T0)], T0, settings, newId);
  book.apply(plan);
  assert.equal(book.live().length, 1);
  const v = book.live()[0]!;
  assert.equal(v.row_count, 3);
  assert.equal(v.shape_count, 2);
  assert.deepEqual(
    v.fields.find((f) => f.path === 'b'),
    { path: 'b', type: 'string', optional: true },
  );
  assert.deepEqual(new Set([...plan.assign.values()].map((a) => a.versionId)), new Set([v.id]));
  // Nulls auto too: a null where the drafted version has a type joins it.
  const nulls = new SchemaBook(owner);
  nulls.apply(
    nulls.planBatch([sight({ a: 1, b: 'x' }, 2, T0), sight({ a: null, b: 'y' }, 1, T0)], T0, settings, newId),
  );
  assert.equal(nulls.live().length, 1);
  assert.equal(nulls.live()[0]!.fields.find((f) => f.path === 'a')!.type, 'number|null');
  // Manual: still two versions.
  const manual = new SchemaBook(owner);
  manual.apply(
    manual.planBatch(
      [sight({ a: 1, b: 'x' }, 2, T0), sight({ a: 3 }, 1, T0)],
      T0,
      { ...settings, schema_optional_keys: 'manual' },
      newId,
    ),
  );
  assert.equal(manual.live().length, 2);
});

test('schema_detector auto applies proposals that only merge shapes together', async () => {
  const { TestServer } = await import('../helpers/server.js');
  const { createIngestKey, ingest, ndjson } = await import('../ingest/helpers.js');
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  try {
    const f = await createIngestKey(srv, 'detector together');
    // Two maps with invented keys: opaque `by_day` alone still leaves four shapes (by `by_user`),
    // and the other way round; both together merge them into one.
    const records = [1, 2, 3, 4].map((i) => ({
      id: i,
      by_day: { [`2026-02-0${i}`]: 1 },
      by_user: { [`usr_k3j2h4g${i}x`]: 'a' },
    }));
    const res = await ingest(srv.url, `key=${f.secret}&collection=together`, ndjson(records), {
      'content-type': 'application/x-ndjson',
    });
    assert.equal(res.status, 202);
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    const c = (await srv.get(`/v1/projects/${f.projectId}/collections`)).body.data.find(
      (x: any) => x.slug === 'together',
    );
    const report = await srv.get(`/v1/projects/${f.projectId}/collections/${c.id}/schema_report`);
    assert.deepEqual(c.schema_opaque_paths, [['by_day'], ['by_user']], JSON.stringify(report.body.data));
    const versions = await srv.get(`/v1/projects/${f.projectId}/collections/${c.id}/schemas`);
    assert.equal(versions.body.data.length, 1);
    assert.equal(versions.body.data[0].row_count, 4);
  } finally {
    await srv.stop();
  }
});

test('changing identity rules re-keys at once: the update answers the new schema_count', async () => {
  const { TestServer } = await import('../helpers/server.js');
  const { createIngestKey, ingest, ndjson } = await import('../ingest/helpers.js');
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  try {
    const f = await createIngestKey(srv, 'eager rekey');
    const res = await ingest(
      srv.url,
      `key=${f.secret}&collection=deep`,
      ndjson([{ a: { b: { c: 1 } } }, { a: { b: { d: 1 } } }]),
      { 'content-type': 'application/x-ndjson' },
    );
    assert.equal(res.status, 202);
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    const c = (await srv.get(`/v1/projects/${f.projectId}/collections`)).body.data.find((x: any) => x.slug === 'deep');
    assert.equal(c.schema_count, 2);
    const base = `/v1/projects/${f.projectId}/collections/${c.id}`;
    const upd = await srv.post(base, { schema_max_depth: 2 });
    assert.equal(upd.status, 200, JSON.stringify(upd.body));
    assert.equal(upd.body.data.schema_count, 1);
    const source = await srv.get(`/v1/projects/${f.projectId}/sources/${f.sourceId}`);
    assert.equal(source.body.data.schema_count, 1);
  } finally {
    await srv.stop();
  }
});
