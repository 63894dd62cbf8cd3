import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, type IngestFixture } from '../ingest/helpers.js';

/**
 * Spool sequence numbers name the collection files: one handed out twice would overwrite a file
 * of acknowledged records. A drained spool has no entries left to continue from.
 */
describe('sequence numbers across restarts of a drained spool', () => {
  let srv: TestServer;
  let f: IngestFixture;
  let collectionId = '';
  const send = async (record: object) => {
    const res = await ingest(srv.url, `key=${f.secret}&collection=seq`, JSON.stringify(record));
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    assert.equal(srv.sluice.services.spool.pendingRecords(), 0, 'drained');
  };
  const docs = async () =>
    (await srv.get(`/v1/projects/${f.projectId}/collections/${collectionId}/docs?sort=asc`)).body.data;

  before(async () => {
    srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
    f = await createIngestKey(srv, 'sequence');
  });
  after(() => srv.stop());

  it('continue past every number used before, so no file is overwritten', async () => {
    await send({ n: 1 });
    collectionId = (await srv.get(`/v1/projects/${f.projectId}/collections`)).body.data.find(
      (c: any) => c.slug === 'seq',
    ).id;
    const first = srv.sluice.services.spool.lastSeq();
    await srv.restart();
    assert.ok(
      srv.sluice.services.spool.lastSeq() >= first,
      `${srv.sluice.services.spool.lastSeq()} after restart, ${first} before`,
    );
    await send({ n: 2 });
    assert.deepEqual(await docs(), [{ n: 1 }, { n: 2 }]);
  });

  it('a data directory without the high-water mark continues past its files', async () => {
    // What an earlier release left: files, no mark.
    await srv.sluice.services.store.root.openDB({ name: 'spool_marks' }).remove('highest_deleted');
    await srv.restart();
    await send({ n: 3 });
    assert.deepEqual(await docs(), [{ n: 1 }, { n: 2 }, { n: 3 }]);
  });
});
