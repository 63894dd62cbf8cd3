import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ManualClock } from '../../src/clock.js';
import { createIngestKey, ingest, ndjson, type IngestFixture } from '../ingest/helpers.js';

const DAY = 86_400_000;

/** schema_unclassified_retention_days: what goes, what stays, and the counts that follow. */
describe('retention of rows without a settled version', () => {
  let srv: TestServer;
  let f: IngestFixture;
  const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
  const base = () => `/v1/projects/${f.projectId}/collections`;

  /** A collection made through the API with `settings`, before any data. */
  const collection = async (slug: string, settings: Record<string, unknown>): Promise<string> => {
    const made = await srv.post(base(), { name: slug, slug, source_id: f.sourceId });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const upd = await srv.post(`${base()}/${made.body.data.id}`, {
      schema_unclassified_retention_days: 1,
      ...settings,
    });
    assert.equal(upd.status, 200, JSON.stringify(upd.body));
    return made.body.data.id;
  };
  const send = async (slug: string, records: object[]) => {
    const res = await ingest(srv.url, `key=${f.secret}&collection=${slug}`, ndjson(records), {
      'content-type': 'application/x-ndjson',
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000), 'the pipeline drains the spool');
  };
  const versions = async (id: string) =>
    (await srv.get(`${base()}/${id}/schemas`)).body.data as Array<{
      id: string;
      signature: string;
      row_count: number;
      state: string;
    }>;
  const docs = async (id: string) => (await srv.get(`${base()}/${id}/docs?sort=asc`)).body.data as object[];
  const kinds = (id: string) =>
    srv.sluice.services.schema
      .manifests(id)
      .map((m) => m.kind)
      .sort();

  before(async () => {
    srv = await TestServer.start({ clock, env: { SLUICE_WORKERS: '1' } });
    f = await createIngestKey(srv, 'retention');
  });
  after(() => srv.stop());

  it("removes a candidate version's rows and unclassified rows, and takes them out of row_count and the report", async () => {
    const id = await collection('counts', { schema_candidate_pool: 1 });
    await send('counts', [{ a: 1 }, { a: 2 }]);
    await send('counts', [{ b: 'x' }]); // the pool is full: stored unclassified
    assert.deepEqual(
      (await versions(id)).map((v) => [v.signature, v.row_count]),
      [['a:number', 2]],
    );
    const before = (await srv.get(`${base()}/${id}/schema_report`)).body.data.unclassified;
    assert.deepEqual([before.shapes, before.rows], [1, 1]);

    clock.advance(2 * DAY);
    assert.equal(await srv.sluice.services.pipeline!.sweepRetention(), 2);
    assert.deepEqual(await docs(id), []);
    assert.deepEqual(
      (await versions(id)).map((v) => [v.signature, v.row_count]),
      [['a:number', 0]],
      'row_count counts stored rows',
    );
    const after = (await srv.get(`${base()}/${id}/schema_report`)).body.data.unclassified;
    assert.equal(after.rows, 0, 'unclassified rows are gone from the report');

    // Counting goes on from there: new rows of the same version are counted once.
    await send('counts', [{ a: 3 }]);
    assert.deepEqual(
      (await versions(id)).map((v) => v.row_count),
      [1],
    );
    assert.deepEqual(await docs(id), [{ a: 3 }]);
  });

  it('a _mixed file goes when none of its versions is settled, and stays while one is', async () => {
    const id = await collection('mixed', { schema_writer_limit: 1 });
    await send('mixed', [{ p: 1 }, { q: 'one' }]); // two candidate versions, one file: `_mixed`
    const [p] = (await versions(id)).filter((v) => v.signature === 'p:number');
    const settle = await srv.post(`${base()}/${id}/schemas/${p!.id}`, { state: 'settled' });
    assert.equal(settle.status, 200, JSON.stringify(settle.body));
    clock.advance(1000);
    await send('mixed', [{ r: true }, { s: null }]); // two more candidates, another `_mixed` file
    assert.deepEqual(kinds(id), ['mixed', 'mixed']);

    clock.advance(2 * DAY);
    assert.equal(await srv.sluice.services.pipeline!.sweepRetention(), 1);
    assert.deepEqual(kinds(id), ['mixed']);
    assert.deepEqual(await docs(id), [{ p: 1 }, { q: 'one' }], 'the file with a settled version keeps all its rows');
    const counts = Object.fromEntries((await versions(id)).map((v) => [v.signature, v.row_count]));
    assert.deepEqual(counts, { 'p:number': 1, 'q:string': 1, 'r:boolean': 0, 's:null': 0 });
  });

  it('files written by an earlier release (no counts) are removed as before, their counts left as they were', async () => {
    const id = await collection('legacy', {});
    await send('legacy', [{ old: 1 }]);
    const store = srv.sluice.services.schema['db'];
    for (const m of srv.sluice.services.schema.manifests(id)) {
      const { counts: _dropped, ...legacy } = m;
      await store.files.put(id, legacy);
    }
    clock.advance(2 * DAY);
    assert.equal(await srv.sluice.services.pipeline!.sweepRetention(), 1);
    assert.deepEqual(await docs(id), []);
    assert.deepEqual(
      (await versions(id)).map((v) => v.row_count),
      [1],
    );
  });

  it("rows refused classification count in the report's unclassified rows until retention removes them", async () => {
    const id = await collection('refused', {});
    const wide = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i]));
    await send('refused', [wide]);
    const report = (await srv.get(`${base()}/${id}/schema_report`)).body.data;
    assert.deepEqual(
      [report.unclassified.rows, (await versions(id)).length],
      [1, 0],
      'no version, one unclassified row',
    );
    assert.equal((await docs(id)).length, 1, 'the document is kept as sent');
    clock.advance(2 * DAY);
    assert.equal(await srv.sluice.services.pipeline!.sweepRetention(), 1);
    assert.equal((await srv.get(`${base()}/${id}/schema_report`)).body.data.unclassified.rows, 0);
  });

  it('a settle racing a purge and two overlapping purges leave counts that match what is stored', async () => {
    const id = await collection('races', {});
    await send('races', [{ a: 1 }, { a: 2 }]);
    const wide = (n: number) => Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, n]));
    await send('races', [wide(1)]); // refused classification: an overflow file
    clock.advance(2 * DAY);
    await send('races', [wide(2)]); // a new overflow file, within the retention
    const c = srv.sluice.services.collections.byId(id)!;
    const schema = srv.sluice.services.schema;
    const [v] = await schema.listVersions(c);
    const filesBefore = schema.manifests(id).length;
    const [settled, first, second] = await Promise.all([
      schema.settle(c, v!.id),
      schema.purgeUnclassified(c),
      schema.purgeUnclassified(c),
    ]);
    assert.equal(settled.state, 'settled');
    // Whichever committed first, the counts agree with what is stored.
    const left = schema.manifests(id);
    assert.equal(first + second, filesBefore - left.length, 'each removed file counted once');
    assert.ok(
      left.some((m) => m.kind === 'overflow'),
      'the recent overflow file stays',
    );
    const [after] = await versions(id);
    const versionDocs = (await srv.get(`${base()}/${id}/docs?schema_version_id=${v!.id}`)).body.data.length;
    assert.equal(after!.row_count, versionDocs, 'row_count is the rows stored under the version');
    assert.equal((await srv.get(`${base()}/${id}/schema_report`)).body.data.unclassified.rows, 1);
    assert.equal(
      schema.collectionStats(id).docBytes,
      left.reduce((n, m) => n + m.doc_bytes, 0),
      'storage counted down once per file',
    );
    // Settled first, the version's rows stay; purged first, they were gone before it settled.
    assert.ok(versionDocs === 2 || versionDocs === 0);
  });
});
