import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { TestServer } from '../helpers/server.js';
import { ManualClock } from '../../src/clock.js';
import { createIngestKey, ingest, ndjson, type IngestFixture } from '../ingest/helpers.js';

const HOUR = 3_600_000;

describe('collection schemas over HTTP', () => {
  let srv: TestServer;
  let f: IngestFixture;
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));
  let collectionId = '';
  const col = () => `/v1/projects/${f.projectId}/collections/${collectionId}`;

  const send = async (records: object[], collection = 'events') => {
    const res = await ingest(srv.url, `key=${f.secret}&collection=${collection}`, ndjson(records), {
      'content-type': 'application/x-ndjson',
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000), 'the pipeline drains the spool');
  };

  before(async () => {
    srv = await TestServer.start({ clock, env: { SLUICE_WORKERS: '1' } });
    f = await createIngestKey(srv, 'schema test');
    await send([{ kind: 'click', x: 1, user: { id: 'u1' } }]);
    const list = await srv.get(`/v1/projects/${f.projectId}/collections`);
    collectionId = list.body.data.find((c: any) => c.slug === 'events').id;
  });
  after(() => srv.stop());

  it('a new shape opens a candidate version with its typed fields', async () => {
    const res = await srv.get(`${col()}/schemas`);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 1);
    const v = res.body.data[0];
    assert.match(v.id, /^sch_[0-9a-z]{20}$/);
    assert.equal(v.object, 'collection_schema_version');
    assert.equal(v.state, 'candidate');
    assert.equal(v.version, 1);
    assert.equal(v.row_count, 1);
    assert.equal(v.signature, 'kind:string,user:object,user.id:string,x:number');
    assert.match(v.signature_hash, /^[0-9a-f]{16}$/);
    assert.deepEqual(v.fields, [
      { path: 'kind', type: 'string', optional: false },
      { path: 'user', type: 'object', optional: false },
      { path: 'user.id', type: 'string', optional: false },
      { path: 'x', type: 'number', optional: false },
    ]);
    const c = await srv.get(col());
    assert.equal(c.body.data.id, collectionId);
  });

  it('recurring after the gap settles the version; settling again answers request_no_update', async () => {
    clock.advance(2 * HOUR);
    await send([
      { kind: 'click', x: 2, user: { id: 'u2' } },
      { kind: 'view', page: '/a' },
    ]);
    const settled = await srv.get(`${col()}/schemas?state=settled`);
    assert.equal(settled.body.data.length, 1);
    assert.equal(settled.body.data[0].settled_by, 'recurrence');
    const candidates = await srv.get(`${col()}/schemas?state=candidate`);
    assert.equal(candidates.body.data.length, 1);
    const again = await srv.post(`${col()}/schemas/${settled.body.data[0].id}`, { state: 'settled' });
    assert.equal(again.status, 409);
    assert.equal(again.body.error!.code, 'request_no_update');
    const byHand = await srv.post(`${col()}/schemas/${candidates.body.data[0].id}`, { state: 'settled' });
    assert.equal(byHand.status, 200);
    assert.equal(byHand.body.data.state, 'settled');
    assert.equal(byHand.body.data.settled_by, 'hand');
  });

  it('validates the settle body and ids', async () => {
    const v = (await srv.get(`${col()}/schemas`)).body.data[0];
    const bad = await srv.post(`${col()}/schemas/${v.id}`, { state: 'stale' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error!.details[0].field, 'body.state');
    const extra = await srv.post(`${col()}/schemas/${v.id}`, { state: 'settled', x: 1 });
    assert.equal(extra.status, 400);
    const missing = await srv.post(`${col()}/schemas/sch_00000000000000000000`, { state: 'settled' });
    assert.equal(missing.status, 404);
    const list = await srv.get(`${col()}/schemas?state=gone`);
    assert.equal(list.status, 400);
  });

  it('lists versions newest first with cursors', async () => {
    const page1 = await srv.get(`${col()}/schemas?limit=1`);
    assert.equal(page1.body.data[0].version, 2);
    assert.ok(page1.body.pagination!.next_cursor);
    const page2 = await srv.get(`${col()}/schemas?limit=1&after=${page1.body.pagination!.next_cursor}`);
    assert.equal(page2.body.data[0].version, 1);
    assert.equal(page2.body.pagination!.next_cursor, null);
  });

  it('docs: documents as sent, newest first, filtered by version and time, paginated', async () => {
    const all = await srv.get(`${col()}/docs`);
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.deepEqual(all.body.data, [
      { kind: 'view', page: '/a' },
      { kind: 'click', x: 2, user: { id: 'u2' } },
      { kind: 'click', x: 1, user: { id: 'u1' } },
    ]);
    const v1 = (await srv.get(`${col()}/schemas?state=settled`)).body.data.find((v: any) => v.version === 1);
    const clicks = await srv.get(`${col()}/docs?schema_version_id=${v1.id}`);
    assert.deepEqual(
      clicks.body.data.map((d: any) => d.x),
      [2, 1],
    );
    const p1 = await srv.get(`${col()}/docs?limit=2`);
    assert.equal(p1.body.data.length, 2);
    const p2 = await srv.get(`${col()}/docs?limit=2&after=${p1.body.pagination!.next_cursor}`);
    assert.deepEqual(p2.body.data, [{ kind: 'click', x: 1, user: { id: 'u1' } }]);
    assert.equal(p2.body.pagination!.next_cursor, null);
    const back = await srv.get(`${col()}/docs?limit=2&before=${p2.body.pagination!.prev_cursor}`);
    assert.deepEqual(back.body.data, p1.body.data);
    const since = new Date(clock.now() - HOUR).toISOString();
    const recent = await srv.get(`${col()}/docs?start_at=${since}`);
    assert.equal(recent.body.data.length, 2);
    const bad = await srv.get(`${col()}/docs?start_at=yesterday`);
    assert.equal(bad.status, 400);
  });

  it('storage_gb and schema_count come from the files and versions', async () => {
    const dir = join(srv.dataDir, 'files', f.projectId, collectionId);
    assert.ok(existsSync(dir));
    const versions = readdirSync(dir).filter((d) => d.startsWith('sch_'));
    assert.equal(versions.length, 2);
  });

  it('schema_report and schema_preview: invented keys are proposed; preview changes nothing', async () => {
    const days = ['2026-02-01', '2026-02-02', '2026-02-03', '2026-02-04', '2026-02-05'];
    // schema_detector manual holds the proposal for a person.
    const created = await srv.post(`/v1/projects/${f.projectId}/collections`, {
      name: 'stats',
      slug: 'stats',
      source_id: f.sourceId,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const stats = created.body.data.id;
    const base = `/v1/projects/${f.projectId}/collections/${stats}`;
    assert.equal((await srv.post(base, { schema_detector: 'manual' })).status, 200);
    await send(
      days.map((d) => ({ id: 1, daily: { total: 1, [d]: { n: 1 } } })),
      'stats',
    );
    const report = await srv.get(`${base}/schema_report`);
    assert.equal(report.status, 200);
    const r = report.body.data;
    assert.equal(r.object, 'collection_schema_report');
    assert.deepEqual(r.shapes, { before: 5, after: 5 });
    assert.equal(r.proposals.length, 1);
    assert.deepEqual(r.proposals[0].path, ['daily']);
    assert.deepEqual(r.proposals[0].tracked, ['total']);
    assert.equal(r.proposals[0].shapes_after, 1);
    assert.equal(r.keys_look_like_data, false);
    const preview = await srv.post(`${base}/schema_preview`, { schema_opaque_paths: [['daily']] });
    assert.equal(preview.status, 200);
    assert.deepEqual(preview.body.data.shapes, { before: 5, after: 1 });
    assert.deepEqual(preview.body.data.rules, { opaque_paths: [['daily']], tracked_paths: [], max_depth: 6 });
    assert.equal((await srv.get(`${base}/schemas`)).body.data.length, 5, 'preview changed nothing');
    const badPreview = await srv.post(`${base}/schema_preview`, { schema_max_depth: 11 });
    assert.equal(badPreview.status, 400);
    // The update's rule holds for a preview too: tracked paths lie inside opaque ones.
    const outside = await srv.post(`${base}/schema_preview`, { schema_tracked_paths: [['x', 'y']] });
    assert.equal(outside.status, 400);
    assert.equal(outside.body.error!.code, 'request_validation_failed');
    assert.match(outside.body.error!.message, /schema_tracked_paths\[0\]/);
    // Applying the rules re-keys: the five versions merge into one.
    const upd = await srv.post(base, { schema_opaque_paths: [['daily']], schema_tracked_paths: [['daily', 'total']] });
    assert.equal(upd.status, 200, JSON.stringify(upd.body));
    const merged = await srv.get(`${base}/schemas`);
    assert.equal(merged.body.data.length, 1);
    assert.equal(merged.body.data[0].row_count, 5);
    assert.equal(merged.body.data[0].signature, 'daily:object,daily.total:number,id:number');
    assert.equal((await srv.get(`${base}/docs`)).body.data.length, 5);
    assert.equal((await srv.get(`${base}/docs?schema_version_id=${merged.body.data[0].id}`)).body.data.length, 5);
  });

  it('schema_detector auto applies a safe proposal by itself', async () => {
    const days = ['2026-02-01', '2026-02-02', '2026-02-03', '2026-02-04'];
    await send(
      days.map((d) => ({ id: 1, by_day: { [d]: 1 } })),
      'auto',
    );
    const list = await srv.get(`/v1/projects/${f.projectId}/collections`);
    const c = list.body.data.find((x: any) => x.slug === 'auto');
    assert.deepEqual(c.schema_opaque_paths, [['by_day']]);
    const versions = await srv.get(`/v1/projects/${f.projectId}/collections/${c.id}/schemas`);
    assert.equal(versions.body.data.length, 1);
    assert.equal(versions.body.data[0].row_count, 4);
  });

  it('bad input is stored and classified, never crashes the pipeline', async () => {
    // Deeper than docs nest (512) yet within what the ingest front accepts (1,000 levels);
    // deeper records reaching the pipeline are covered in poison-batch.test.ts.
    const deep = '{"a":'.repeat(900) + '1' + '}'.repeat(900);
    const res = await ingest(
      srv.url,
      `key=${f.secret}&collection=bad`,
      deep + '\n' + JSON.stringify({ ['k'.repeat(100_000)]: 1, big: 1e300 }) + '\n',
      { 'content-type': 'application/x-ndjson' },
    );
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    const list = await srv.get(`/v1/projects/${f.projectId}/collections`);
    const bad = list.body.data.find((c: any) => c.slug === 'bad').id;
    const versions = await srv.get(`/v1/projects/${f.projectId}/collections/${bad}/schemas`);
    assert.equal(versions.body.data.length, 2);
    const docs = await srv.get(`/v1/projects/${f.projectId}/collections/${bad}/docs`);
    assert.equal(docs.status, 200);
    assert.equal(docs.body.data.length, 2);
    assert.ok(
      docs.body.data.some((d: unknown) => typeof d === 'string' && d === deep),
      'a document too deep to nest is returned as its JSON text',
    );
  });

  it('retention counts from arrival: a backfill of old events is kept like any other rows', async () => {
    await send([{ old: 1, timestamp: '2020-01-01T00:00:00Z' }], 'backfill');
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    await srv.sluice.services.pipeline!.sweepRetention();
    const list = await srv.get(`/v1/projects/${f.projectId}/collections`);
    const backfill = list.body.data.find((c: any) => c.slug === 'backfill').id;
    assert.deepEqual((await srv.get(`/v1/projects/${f.projectId}/collections/${backfill}/docs`)).body.data, [
      { old: 1, timestamp: '2020-01-01T00:00:00Z' },
    ]);
  });

  it('rows without a settled version go after schema_unclassified_retention_days; settled rows stay', async () => {
    const list = await srv.get(`/v1/projects/${f.projectId}/collections`);
    const bad = list.body.data.find((c: any) => c.slug === 'bad').id;
    clock.advance(31 * 24 * HOUR);
    const removed = await srv.sluice.services.pipeline!.sweepRetention();
    assert.ok(removed >= 1);
    assert.equal((await srv.get(`/v1/projects/${f.projectId}/collections/${bad}/docs`)).body.data.length, 0);
    assert.equal((await srv.get(`${col()}/docs`)).body.data.length, 3, 'settled versions keep their rows');
    const stale = await srv.get(`/v1/projects/${f.projectId}/collections/${bad}/schemas?state=stale`);
    assert.equal(stale.body.data.length, 2, 'candidates unseen for stale_after_ms read as stale');
    const staleAfter = list.body.data.find((c: any) => c.slug === 'bad').schema_stale_after_ms;
    for (const v of stale.body.data)
      assert.equal(
        v.stale_at,
        new Date(Date.parse(v.last_seen_at) + staleAfter).toISOString(),
        'stale_at says when it went stale',
      );
  });

  it('versions open in order of first sight, within one request too; a later subset joins the earlier version', async () => {
    await send([{ a: 1, b: 'x' }, { a: 2 }, { c: true }], 'order');
    const list = await srv.get(`/v1/projects/${f.projectId}/collections`);
    const id = list.body.data.find((c: any) => c.slug === 'order').id;
    const res = await srv.get(`/v1/projects/${f.projectId}/collections/${id}/schemas?sort=asc`);
    assert.deepEqual(
      res.body.data.map((v: any) => [v.version, v.signature, v.row_count]),
      [
        [1, 'a:number,b:string', 2],
        [2, 'c:boolean', 1],
      ],
    );
  });

  it('another team cannot see the schemas (404)', async () => {
    const other = await srv.get(`/v1/projects/prj_00000000000000000000/collections/${collectionId}/schemas`);
    assert.equal(other.status, 404);
  });
});
