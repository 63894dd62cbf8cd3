import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson, type IngestFixture } from '../ingest/helpers.js';
import { UNCLASSIFIED_SAMPLE_CAP, UNCLASSIFIED_SHAPE_CAP, type Sighting } from '../../src/schema/book.js';
import { Fingerprinter, MAX_KEY_CHARS } from '../../src/schema/fingerprint.js';
import { rulesOf } from '../../src/schema/rules.js';
import type { Shape } from '../../src/schema/shape.js';
import type { CollectionRecord } from '../../src/catalog/records.js';

/**
 * Review fixes E and G: bounded shape memory and a cached report; former shape ids after a re-key;
 * linked rows counted; long keys truncated alike deduped; the identity limit checked at commit.
 */

const NDJSON = { 'content-type': 'application/x-ndjson' };

async function collection(
  srv: TestServer,
  f: IngestFixture,
  slug: string,
  settings: Record<string, unknown>,
): Promise<{ id: string; base: string }> {
  const created = await srv.post(`/v1/projects/${f.projectId}/collections`, {
    name: slug,
    slug,
    source_id: f.sourceId,
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const base = `/v1/projects/${f.projectId}/collections/${created.body.data.id}`;
  const upd = await srv.post(base, settings);
  assert.equal(upd.status, 200, JSON.stringify(upd.body));
  return { id: created.body.data.id, base };
}

async function send(srv: TestServer, f: IngestFixture, slug: string, records: object[]): Promise<void> {
  const res = await ingest(srv.url, `key=${f.secret}&collection=${slug}`, ndjson(records), NDJSON);
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.ok(await srv.sluice.services.pipeline!.idle(60_000));
}

test('E: unclassified shapes past the cap are not recorded; samples bounded; report truthful and cached', async () => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  try {
    const f = await createIngestKey(srv, 'many shapes');
    const pool = 64;
    const { id, base } = await collection(srv, f, 'many', { schema_candidate_pool: pool, schema_detector: 'manual' });
    const total = UNCLASSIFIED_SHAPE_CAP + pool + 9_936; // 20,000 distinct shapes
    for (let i = 0; i < total; i += 10_000) {
      await send(
        srv,
        f,
        'many',
        Array.from({ length: Math.min(10_000, total - i) }, (_, j) => ({ [`k${i + j}`]: 1 })),
      );
    }
    const svc = srv.sluice.services.schema;
    const c = srv.sluice.services.collections.byId(id)!;
    const book = await svc.book(c);
    assert.equal(book.live().length, pool);
    assert.equal(book.heldUnclassified().shapes, UNCLASSIFIED_SHAPE_CAP);
    assert.equal(book.shapes.size, UNCLASSIFIED_SHAPE_CAP + pool);
    assert.equal(
      svc.db.shapes.list(id).length,
      UNCLASSIFIED_SHAPE_CAP + pool,
      'LMDB holds no more shape records than the book',
    );
    const samples = [...book.shapes.values()].filter((s) => s.sample !== null).length;
    assert.equal(
      samples,
      pool + UNCLASSIFIED_SAMPLE_CAP,
      'samples only for versions and the first unclassified shapes',
    );

    const report = await srv.get(`${base}/schema_report`);
    assert.equal(report.status, 200);
    const u = report.body.data.unclassified;
    assert.equal(u.rows, total - pool, 'every row without a version is counted');
    assert.equal(u.shapes_exact, false);
    assert.ok(u.shapes >= UNCLASSIFIED_SHAPE_CAP && u.shapes <= total - pool, JSON.stringify(u));
    assert.equal(
      report.body.data.shapes.before,
      UNCLASSIFIED_SHAPE_CAP + pool,
      'the report reads the recorded shapes only',
    );
    assert.equal(report.body.data.keys_look_like_data, true);

    // Cached per book revision: the same report object until the shapes change.
    const r1 = await svc.report(c);
    assert.equal(await svc.report(c), r1);
    // A row of a classified shape: the unclassified totals stay as they are.
    await send(srv, f, 'many', [{ [book.live()[0]!.fields[0]!.path]: 2 }]);
    const r2 = await svc.report(c);
    assert.notEqual(r2, r1, 'a committed batch invalidates the cached report');
    assert.equal(await svc.report(c), r2);

    // The overflow totals survive a restart (kept in the collection's schema meta).
    await srv.restart();
    const again = await srv.get(`${base}/schema_report`);
    assert.deepEqual(again.body.data.unclassified, u);
  } finally {
    await srv.stop();
  }
});

test('G1+G2: after a re-key, docs by version include unclassified rows stored under the old shape hash, and row_count counts them', async () => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  try {
    const f = await createIngestKey(srv, 'rekey links');
    const { base } = await collection(srv, f, 'maps', { schema_candidate_pool: 1, schema_detector: 'manual' });
    await send(srv, f, 'maps', [{ a: 1, m: { x1: 1 } }]);
    // The pool (1) is full: this shape stays unclassified, its row in `_unclassified/<hash>`.
    await send(srv, f, 'maps', [{ a: 2, m: { x2: 1 } }]);
    const before = await srv.get(`${base}/schema_report`);
    assert.deepEqual(before.body.data.unclassified, { shapes: 1, rows: 1, shapes_exact: true });
    const upd = await srv.post(base, { schema_opaque_paths: [['m']] });
    assert.equal(upd.status, 200, JSON.stringify(upd.body));
    assert.equal(upd.body.data.schema_count, 1);
    const versions = await srv.get(`${base}/schemas`);
    assert.equal(versions.body.data.length, 1);
    const v = versions.body.data[0];
    assert.equal(v.row_count, 2, 'the linked unclassified row is counted');
    const docs = await srv.get(`${base}/docs?schema_version_id=${v.id}`);
    assert.equal(docs.status, 200, JSON.stringify(docs.body));
    assert.deepEqual(docs.body.data.map((d: any) => d.a).sort(), [1, 2]);
  } finally {
    await srv.stop();
  }
});

test('G2: an unclassified shape classified when the pool has room counts its earlier rows', async () => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  try {
    const f = await createIngestKey(srv, 'late link');
    const { base } = await collection(srv, f, 'late', { schema_candidate_pool: 1, schema_detector: 'manual' });
    await send(srv, f, 'late', [{ a: 1 }]);
    await send(srv, f, 'late', [{ b: 'x' }, { b: 'y' }, { b: 'z' }]);
    const v1 = (await srv.get(`${base}/schemas`)).body.data[0];
    assert.equal((await srv.post(`${base}/schemas/${v1.id}`, { state: 'settled' })).status, 200);
    // Room in the pool now: {b} gets its version on next sight, and its 3 stored rows are linked.
    await send(srv, f, 'late', [{ b: 'w' }]);
    const v2 = (await srv.get(`${base}/schemas`)).body.data.find((x: any) => x.id !== v1.id);
    assert.equal(v2.row_count, 4);
    const docs = await srv.get(`${base}/docs?schema_version_id=${v2.id}`);
    assert.equal(docs.body.data.length, 4);
    assert.deepEqual((await srv.get(`${base}/schema_report`)).body.data.unclassified, {
      shapes: 0,
      rows: 0,
      shapes_exact: true,
    });
  } finally {
    await srv.stop();
  }
});

test('G3: keys truncated to the same characters are one path, never two entries', () => {
  const fp = new Fingerprinter({ opaquePaths: [], trackedPaths: [], maxDepth: 6 });
  const stem = 'k'.repeat(MAX_KEY_CHARS);
  const two = fp.describe({ [stem + 'A']: 1, [stem + 'B']: { x: 1 }, id: 1 }) as Shape;
  const paths = two.entries.map((e) => `${e.path}:${e.type}`);
  assert.equal(new Set(paths).size, paths.length, `duplicate entries: ${two.signature}`);
  // The union of both values' types under the one truncated path, like array elements.
  const long = `["${stem}\u2026"]`;
  assert.deepEqual(paths, [`${long}:number`, `${long}:object`, `${long}.x:number`, 'id:number']);
  // The same hash as a record carrying those types once (and the fast path agrees with describe).
  const once = fp.describe({ [stem + 'C']: [1, { x: 2 }], id: 3 }) as Shape;
  assert.notEqual(once.hash, two.hash, 'an array is a different type');
  const single = fp.describe({ [stem + 'A']: 1, id: 1 }) as Shape;
  const pair = fp.describe({ [stem + 'A']: 1, [stem + 'B']: 2, id: 1 }) as Shape;
  assert.equal(pair.hash, single.hash);
  assert.equal(pair.signature, single.signature);
  fp.fingerprint({ [stem + 'A']: 1, [stem + 'B']: 2, id: 1 });
  const fast = fp.last;
  assert.equal(fast.a.toString(16).padStart(8, '0') + fast.b.toString(16).padStart(8, '0'), pair.hash);
});

test('G4: schema_identity_limit holds when a hand settle and a batch settle race', async () => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1', SLUICE_PIPELINE: '0' } });
  try {
    const f = await createIngestKey(srv, 'settle race');
    const svc = srv.sluice.services.schema;
    const store = svc.db.store;
    let n = 0;
    const newId = () => `sch_${String(++n).padStart(20, '0')}`;
    const setup = async (slug: string) => {
      const { id, base } = await collection(srv, f, slug, {
        schema_identity_limit: 1,
        schema_bulk_rows: 10,
        schema_detector: 'manual',
      });
      const c = srv.sluice.services.collections.byId(id)! as CollectionRecord;
      const fp = new Fingerprinter(rulesOf(c));
      const sight = (record: Record<string, unknown>, rows: number, atMs: number): Sighting => {
        const shape = fp.describe(record) as Shape;
        return {
          key: fp.fingerprint(record),
          hash: shape.hash,
          rows,
          firstMs: atMs,
          lastMs: atMs,
          shape,
          sample: JSON.stringify(record),
        };
      };
      const book = await svc.book(c);
      const now = Date.now();
      const commit = async (plan: ReturnType<typeof book.planBatch>, apply: boolean) => {
        const m = await store.transaction(() => svc.stageCommit(c, plan, [], { first: 1, last: 1 }, book));
        if (apply) svc.applyCommitted(c, plan, m, book);
      };
      await commit(book.planBatch([sight({ a: 1 }, 1, now), sight({ b: 1 }, 1, now)], now, c, newId), true);
      const [va, vb] = book.live().sort((x, y) => x.version - y.version);
      const settledInStore = () =>
        svc.db.versions.list(id).filter((v) => v.merged_into === null && v.state === 'settled').length;
      return { c, base, book, sight, commit, va: va!, vb: vb!, now, settledInStore };
    };

    // A batch planned before a hand settle, committed after it: its bulk settle finds no room.
    const one = await setup('race-one');
    const plan = one.book.planBatch([one.sight({ b: 1 }, 10, one.now + 1)], one.now + 1, one.c, newId);
    assert.equal(plan.versions.find((v) => v.id === one.vb.id)!.state, 'settled', 'planned as a bulk settle');
    assert.equal((await srv.post(`${one.base}/schemas/${one.va.id}`, { state: 'settled' })).status, 200);
    await one.commit(plan, true);
    assert.equal(one.settledInStore(), 1);
    assert.equal(one.book.live().filter((v) => v.state === 'settled').length, 1);
    assert.equal(one.book.versions.get(one.vb.id)!.state, 'candidate');
    assert.equal(one.book.versions.get(one.vb.id)!.row_count, 11, 'its rows still count');

    // A batch's settle committed, not yet in the book: the hand settle is checked against LMDB.
    const two = await setup('race-two');
    await two.commit(two.book.planBatch([two.sight({ b: 1 }, 10, two.now + 1)], two.now + 1, two.c, newId), false);
    const res = await srv.post(`${two.base}/schemas/${two.va.id}`, { state: 'settled' });
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.error?.code, 'conflict');
    assert.equal(two.settledInStore(), 1);

    // Settled by hand before a batch is planned: the batch's commit writes it settled as planned
    // (without reading it back: book.ts `settledBefore`), with its rows, and it still holds the limit.
    const three = await setup('race-three');
    assert.equal((await srv.post(`${three.base}/schemas/${three.va.id}`, { state: 'settled' })).status, 200);
    const plan3 = three.book.planBatch(
      [three.sight({ a: 1 }, 3, three.now + 1), three.sight({ b: 1 }, 10, three.now + 1)],
      three.now + 1,
      three.c,
      newId,
    );
    assert.deepEqual([...plan3.settledBefore!], [three.va.id]);
    await three.commit(plan3, true);
    const stored = svc.db.versions.get(three.c.id, three.va.id)!;
    assert.equal(stored.state, 'settled');
    assert.equal(stored.settled_by, 'hand');
    assert.equal(stored.row_count, 4);
    assert.equal(svc.db.versions.get(three.c.id, three.vb.id)!.state, 'candidate', 'no room for a bulk settle');
    assert.equal(three.settledInStore(), 1);

    // No hand settle since the plan: nothing is read back, and what commits is the plan — a
    // candidate's rows, a bulk settle with room; a hand settle after that is checked as before.
    const four = await setup('race-four');
    const plan4 = four.book.planBatch([four.sight({ a: 1 }, 2, four.now + 1)], four.now + 1, four.c, newId);
    assert.equal(plan4.handSettles, 0);
    await four.commit(plan4, true);
    assert.deepEqual(
      [svc.db.versions.get(four.c.id, four.va.id)!.state, svc.db.versions.get(four.c.id, four.va.id)!.row_count],
      ['candidate', 3],
    );
    await four.commit(four.book.planBatch([four.sight({ b: 1 }, 10, four.now + 2)], four.now + 2, four.c, newId), true);
    assert.equal(svc.db.versions.get(four.c.id, four.vb.id)!.state, 'settled');
    assert.equal(four.settledInStore(), 1);
    const late = await srv.post(`${four.base}/schemas/${four.va.id}`, { state: 'settled' });
    assert.equal(late.status, 409, 'the limit, counted on what is committed');
    assert.equal(four.book.handSettles, 0, 'a refused settle is not counted');

    // Planned with a version as a candidate, settled by hand before the commit: it stays settled.
    const five = await setup('race-five');
    const plan5 = five.book.planBatch([five.sight({ a: 1 }, 2, five.now + 1)], five.now + 1, five.c, newId);
    assert.equal((await srv.post(`${five.base}/schemas/${five.va.id}`, { state: 'settled' })).status, 200);
    assert.equal(five.book.handSettles, 1);
    await five.commit(plan5, true);
    const a5 = svc.db.versions.get(five.c.id, five.va.id)!;
    assert.deepEqual([a5.state, a5.settled_by, a5.row_count], ['settled', 'hand', 3]);
  } finally {
    await srv.stop();
  }
});
