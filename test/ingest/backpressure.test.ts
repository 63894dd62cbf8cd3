import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ManualClock } from '../../src/clock.js';
import { IngestGate } from '../../src/ingest/backpressure.js';
import type { ApiError } from '../../src/errors.js';
import { createIngestKey, ingest, ndjson } from './helpers.js';
import { WsClient } from './ws-client.js';

describe('ingest backpressure', () => {
  it('refuses past the queue depth with 503 spool_full_ingest_queue and Retry-After, and recovers once drained', async () => {
    const srv = await TestServer.start({ env: { SLUICE_MAX_PENDING_RECORDS: '5', SLUICE_PIPELINE: '0' } });
    try {
      const f = await createIngestKey(srv);
      const q = `key=${f.secret}`;
      assert.equal((await ingest(srv.url, q, ndjson([{ a: 1 }, { a: 2 }, { a: 3 }]))).status, 202);
      const full = await ingest(srv.url, q, ndjson([{ a: 4 }, { a: 5 }, { a: 6 }]));
      assert.equal(full.status, 503);
      assert.equal(full.body.error.code, 'spool_full_ingest_queue');
      assert.ok(Number(full.headers.get('retry-after')) > 0);
      assert.equal(
        srv.sluice.services.spool.pendingRecords(f.projectId),
        3,
        'nothing of the refused request is spooled',
      );
      // What still fits is accepted.
      assert.equal((await ingest(srv.url, q, ndjson([{ a: 4 }, { a: 5 }]))).status, 202);
      // A WebSocket frame is refused the same way, without closing.
      const ws = await WsClient.connect(`${srv.url}/ingest?${q}`);
      ws.send('{"a":6}');
      const refused = JSON.parse(await ws.message(0));
      assert.equal(refused.seq, 1);
      assert.equal(refused.error.code, 'spool_full_ingest_queue');
      assert.ok(refused.retry_after > 0);
      // The pipeline drains; ingest resumes.
      const spool = srv.sluice.services.spool;
      for (let l = spool.lease(100); l; l = spool.lease(100)) await spool.complete(l);
      ws.send('{"a":6}');
      assert.deepEqual(JSON.parse(await ws.message(1)), { seq: 2, accepted: 1 });
      ws.close();
      assert.equal((await ingest(srv.url, q, '{"a":7}')).status, 202);
      // Refusals are counted by reason.
      const live = srv.sluice.services.telemetry.minute(f.projectId, Math.floor(Date.now() / 60_000) * 60_000);
      assert.ok((live?.error_counts.spool_full_ingest_queue ?? 0) >= 1);
    } finally {
      await srv.stop();
    }
  });

  it('refuses below the free-disk threshold with spool_full_disk_gate', async () => {
    const srv = await TestServer.start({ env: { SLUICE_MIN_FREE_DISK_BYTES: String(2 ** 60), SLUICE_PIPELINE: '0' } });
    try {
      const f = await createIngestKey(srv);
      const r = await ingest(srv.url, `key=${f.secret}`, '{"a":1}');
      assert.equal(r.status, 503);
      assert.equal(r.body.error.code, 'spool_full_disk_gate');
      assert.equal(r.headers.get('retry-after'), '60');
      assert.equal(srv.sluice.services.spool.pendingRecords(f.projectId), 0);
      // One refused request is one error (`errors` counts requests, not the layers they pass).
      const minute = srv.sluice.services.telemetry.minute(f.projectId, Math.floor(Date.now() / 60_000) * 60_000);
      assert.equal(minute?.errors, 1);
      assert.deepEqual(minute?.error_counts, { spool_full_disk_gate: 1 });
      // A key that is not known is counted once too (under the node, no project to tie it to).
      const node = () =>
        srv.sluice.services.telemetry.minute('_node', Math.floor(Date.now() / 60_000) * 60_000)?.error_counts
          .auth_invalid_credentials ?? 0;
      const before = node();
      assert.equal((await ingest(srv.url, 'key=pik_unknown', '{"a":1}')).status, 401);
      assert.equal(node() - before, 1);
    } finally {
      await srv.stop();
    }
  });

  it('after a storage write failure, and past the bytes held in memory, the gate refuses', async () => {
    const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
    try {
      const clock = new ManualClock(1_000_000);
      const gate = new IngestGate(
        { dataDir: srv.dataDir, minFreeDiskBytes: 0, maxPendingRecords: 1000, maxBytesInFlight: 100 },
        srv.sluice.services.spool,
        clock,
      );
      gate.check(10, 10);
      gate.storageFailed();
      assert.throws(
        () => gate.check(1, 1),
        (e: ApiError) => e.code === 'spool_full_storage_write' && e.status === 503 && e.headers['retry-after'] === '10',
      );
      clock.advance(6_000);
      gate.check(1, 1);
      gate.hold(80);
      assert.throws(
        () => gate.check(0, 30),
        (e: ApiError) => e.code === 'spool_full_ingest_queue',
      );
      gate.release(80);
      gate.check(0, 30);
      assert.throws(
        () => gate.check(1001, 0),
        (e: ApiError) => e.code === 'spool_full_ingest_queue',
      );
    } finally {
      await srv.stop();
    }
  });
});
