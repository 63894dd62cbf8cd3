import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';
import { systemClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import { PipelineRunner } from '../../src/pipeline/runner.js';
import { WorkerPool } from '../../src/pipeline/pool.js';

/**
 * A collection re-keyed while one of its batches is on a worker: the batch was planned under the
 * old rules, so it must not commit; it runs again under the new ones.
 */
test('a batch in flight when the rules change commits nothing stale and is re-run under the new rules', async () => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  const pool = new WorkerPool(1);
  try {
    const { spool, schema, collections } = srv.sluice.services;
    const f = await createIngestKey(srv, 'rekey race');
    const send = async (records: object[]) => {
      const res = await ingest(srv.url, `key=${f.secret}&collection=events`, ndjson(records), {
        'content-type': 'application/x-ndjson',
      });
      assert.equal(res.status, 202, JSON.stringify(res.body));
    };
    // The real pool; once armed, the rules change (and the collection re-keys) right after the
    // worker finished and before the runner commits: the exact window of the race.
    let armed = false;
    let rekeys = 0;
    const racingPool = {
      size: pool.size,
      run: async (...args: Parameters<WorkerPool['run']>) => {
        const out = await pool.run(...args);
        if (armed) {
          armed = false;
          const id = args[0].collectionId;
          const c = collections.byId(id)!;
          const next = await collections.update(c.source_id, id, () => ({ schema_opaque_paths: [['m']] }));
          await schema.book(next!);
          rekeys++;
        }
        return out;
      },
      destroy: () => pool.destroy(),
    };
    const runner = new PipelineRunner({
      spool,
      collections: { byId: (id) => collections.byId(id) },
      schema,
      pool: racingPool as unknown as WorkerPool,
      clock: systemClock,
      log: createLogger('silent'),
    });
    runner.start();
    await send([{ m: { '2026-01-01': 1 } }]);
    assert.ok(await runner.idle(20_000));
    const collection = () => collections.byId(collections.table.list(f.sourceId)[0]!.id)!;
    assert.equal((await schema.listVersions(collection())).length, 1);

    armed = true;
    await send([{ m: { '2026-01-02': 1 } }, { m: { '2026-01-03': 1 } }]);
    assert.ok(await runner.idle(20_000));
    await runner.stop();
    assert.equal(rekeys, 1);
    assert.equal(runner.batches(), 2, 'the stale run is not counted; its re-run is');
    const versions = await schema.listVersions(collection());
    assert.deepEqual(
      versions.map((v) => [v.signature, v.row_count]),
      [['m:object', 3]],
    );
    assert.deepEqual(
      schema.db.versions
        .list(collection().id)
        .filter((v) => v.merged_into === null)
        .map((v) => v.signature),
      ['m:object'],
    );
    assert.equal(schema.unprocessable(collection().id).length, 0);
    const docs = await srv.get(`/v1/projects/${f.projectId}/collections/${collection().id}/docs?limit=10`);
    assert.equal(docs.body.data.length, 3);
  } finally {
    await pool.destroy();
    await srv.stop();
  }
});
