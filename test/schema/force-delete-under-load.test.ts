import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson, type IngestFixture } from '../ingest/helpers.js';

/**
 * Force-deleting a collection while producers keep writing to it and its batches are on the
 * workers: the delete succeeds, nothing of the collection is left (records, versions, manifests,
 * files, spool entries), and the collections beside it are untouched.
 */
describe('force delete of a collection under ingest', () => {
  let srv: TestServer;
  let f: IngestFixture;
  before(async () => {
    srv = await TestServer.start({ env: { SLUICE_WORKERS: '2' } });
    f = await createIngestKey(srv, 'force under load');
  });
  after(() => srv.stop());

  it('leaves nothing behind and does not disturb its neighbour', async () => {
    const base = `/v1/projects/${f.projectId}/collections`;
    let keptRecords = 0;
    for (let round = 0; round < 3; round++) {
      const slug = `doomed-${round}`;
      let stop = false;
      const producers = [0, 1, 2].map(async (w) => {
        for (let r = 0; !stop && r < 200; r++) {
          await ingest(
            srv.url,
            `key=${f.secret}&collection=${slug}`,
            ndjson(Array.from({ length: 300 }, (_, k) => ({ w, r, k, [`f${k % 6}`]: k }))),
            { 'content-type': 'application/x-ndjson' },
          );
        }
      });
      const kept = await ingest(srv.url, `key=${f.secret}&collection=kept`, ndjson([{ round }]), {
        'content-type': 'application/x-ndjson',
      });
      assert.equal(kept.status, 202);
      keptRecords++;
      await new Promise((r) => setTimeout(r, 250 + round * 40));
      const doomed = (await srv.get(base)).body.data.find((c: any) => c.slug === slug);
      const del = await srv.delete(`${base}/${doomed.id}/force`);
      stop = true;
      await Promise.all(producers);
      assert.equal(del.status, 200, JSON.stringify(del.body));
      assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
      const schema = srv.sluice.services.schema;
      assert.deepEqual(schema.manifests(doomed.id), [], 'no manifests');
      assert.equal(
        srv.sluice.services.collections.byId(doomed.id)?.id,
        undefined,
        'no record (a later write under the slug makes a new collection)',
      );
      assert.equal(
        [...srv.sluice.services.spool.scan()].filter((e) => e.collection_id === doomed.id).length,
        0,
        'no spool entries',
      );
      const dir = join(srv.dataDir, 'files', f.projectId, doomed.id);
      assert.ok(
        !existsSync(dir) || readdirSync(dir, { recursive: true }).every((p) => !String(p).endsWith('.parquet')),
        'no files',
      );
    }
    const kept = (await srv.get(base)).body.data.find((c: any) => c.slug === 'kept');
    assert.equal(
      (await srv.get(`${base}/${kept.id}/docs?limit=100`)).body.data.length,
      keptRecords,
      'the neighbour keeps every record',
    );
  });
});
