import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createIngestKey } from '../ingest/helpers.js';

describe('spool: the oldest receive time a collection holds (completeness)', () => {
  it('counts an append from the moment its put is issued, before its commit, and forgets it once drained', async () => {
    const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
    try {
      const f = await createIngestKey(srv, 'oldest in flight');
      const s = srv.sluice.services;
      const collection = await s.collections.ensure(s.sources.byId(f.sourceId)!, 'events');
      const spool = s.spool;
      const entry = (receivedAt: number) => ({
        collection_id: collection.id,
        project_id: f.projectId,
        received_at: receivedAt,
        records: 1,
        format: 'ndjson' as const,
        body: Buffer.from('{"a":1}\n'),
      });
      assert.equal(spool.oldestReceivedAt(collection.id), null);
      // Received just before a minute ended, committed after: until its commit the index does not
      // hold it, yet the minute must not be complete (a monitor would judge it without the record).
      const first = spool.append(entry(1_700_000_059_990));
      assert.equal(spool.oldestReceivedAt(collection.id), 1_700_000_059_990, 'seen while its commit is pending');
      await first;
      assert.equal(spool.oldestReceivedAt(collection.id), 1_700_000_059_990, 'and once durable');
      // A later append in flight does not move the oldest; an earlier-received one does.
      const later = spool.append(entry(1_700_000_070_000));
      const earlier = spool.append(entry(1_700_000_050_000));
      assert.equal(spool.oldestReceivedAt(collection.id), 1_700_000_050_000);
      await Promise.all([later, earlier]);
      for (let l = spool.lease(100); l; l = spool.lease(100)) await spool.complete(l);
      assert.equal(spool.oldestReceivedAt(collection.id), null, 'drained: nothing holds the minute');
    } finally {
      await srv.stop();
    }
  });
});
