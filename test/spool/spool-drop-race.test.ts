import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import type { Spool, SpoolInput } from '../../src/spool/spool.js';

describe('spool: dropping a collection while data is being written to it', () => {
  let srv: TestServer;
  const spool = (): Spool => srv.sluice.services.spool;
  const entry = (collection: string, project: string): SpoolInput => ({
    collection_id: collection,
    project_id: project,
    received_at: Date.now(),
    records: 3,
    format: 'ndjson',
    body: Buffer.from('{"a":1}\n{"a":2}\n{"a":3}\n'),
  });

  before(async () => {
    srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  });
  after(() => srv.stop());

  it('an append racing dropCollection leaves no queue, no counters and nothing on disk; lease() returns', async () => {
    const appended = spool().append(entry('col_race1', 'prj_race1'));
    const dropped = spool().dropCollection('col_race1');
    await Promise.allSettled([appended, dropped]);
    // Checked before lease(): with a resurrected queue the old lease() never returned.
    assert.equal(spool().pendingEntries('col_race1'), 0, 'no queue entry survives the drop');
    assert.equal(spool().pendingRecords('prj_race1'), 0);
    assert.equal(spool().inFlightRecords(), 0);
    assert.equal([...spool().scan()].filter((e) => e.collection_id === 'col_race1').length, 0, 'nothing left on disk');
    assert.equal(spool().lease(100), null);
    assert.equal(spool().processingRecords('prj_race1'), 0);
  });

  it('an append issued after dropCollection is refused and stores nothing', async () => {
    const dropped = spool().dropCollection('col_race2');
    await assert.rejects(
      spool().append(entry('col_race2', 'prj_race2')),
      (e: Error & { code?: string }) => e.code === 'source_deleted',
    );
    await dropped;
    assert.equal(spool().pendingRecords('prj_race2'), 0);
    assert.equal([...spool().scan()].filter((e) => e.collection_id === 'col_race2').length, 0);
    assert.equal(spool().lease(100), null);
  });

  it('lease() visits each collection at most once per call and repairs counters that disagree with the index', async () => {
    // Other collections with data are still served while a queue has nothing on disk.
    const seq = await spool().append(entry('col_live', 'prj_live'));
    // Simulate counters out of step with the index (what the race used to leave behind).
    await srv.sluice.services.store.transaction(() => {
      (spool() as any).entries.remove(seq);
      (spool() as any).index.remove(['col_live', seq]);
    });
    assert.equal(spool().pendingRecords('prj_live'), 3);
    const started = Date.now();
    assert.equal(spool().lease(100), null);
    assert.ok(Date.now() - started < 1000);
    assert.equal(spool().pendingEntries('col_live'), 0, 'rebuilt from the index');
    assert.equal(spool().pendingRecords('prj_live'), 0);
    assert.equal(
      spool().pendingRecords(),
      [...spool().scan()].reduce((n, e) => n + e.records, 0),
    );
  });

  it('a lease completing while its collection is dropped is fenced off, and every counter ends at zero, never below', async () => {
    await spool().append(entry('col_race3', 'prj_race3'));
    const lease = spool().lease(100, (id) => (id === 'col_race3' ? 100 : 0))!;
    assert.equal(lease.collectionId, 'col_race3');
    const totalBefore = spool().pendingRecords() - 3;
    const [completed] = await Promise.allSettled([spool().complete(lease), spool().dropCollection('col_race3')]);
    assert.equal(completed.status, 'rejected', 'the drop fences the batch off: its commit aborts');
    assert.equal(spool().pendingRecords('prj_race3'), 0);
    assert.equal(spool().processingRecords('prj_race3'), 0);
    assert.equal(spool().pendingRecords(), totalBefore);
    assert.equal(spool().processingRecords(), 0);
  });
});
