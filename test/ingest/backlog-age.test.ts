import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { createIngestKey, ingest, ndjson } from './helpers.js';
import { WsClient } from './ws-client.js';

/** Drain every spooled entry by hand, as the pipeline would (the servers here run without one). */
async function drain(srv: TestServer): Promise<void> {
  const spool = srv.sluice.services.spool;
  for (let l = spool.lease(1000); l; l = spool.lease(1000)) await spool.complete(l);
}

describe('ingest backpressure by the age of the backlog (SLUICE_MAX_PENDING_AGE_MS)', () => {
  it('refuses a collection whose oldest spooled records waited too long, with the 503 contract, and only that collection', async () => {
    const clock = new ManualClock(Date.parse('2026-11-28T12:00:00Z'));
    // No pipeline: the spool is drained by hand, so the backlog's age is the test's to set.
    const srv = await TestServer.start({
      clock,
      env: { SLUICE_PIPELINE: '0', SLUICE_MAX_PENDING_AGE_MS: '2000' },
    });
    try {
      const f = await createIngestKey(srv, 'backlog age');
      const q = `key=${f.secret}&collection=busy`;
      const spool = srv.sluice.services.spool;
      assert.equal((await ingest(srv.url, q, ndjson([{ a: 1 }, { a: 2 }]))).status, 202);
      clock.advance(2000);
      // Exactly at the limit: not older than it yet.
      assert.equal((await ingest(srv.url, q, '{"a":3}')).status, 202);
      clock.advance(1);
      const refused = await ingest(srv.url, q, '{"a":4}');
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error.code, 'spool_full_ingest_queue');
      assert.equal(refused.headers.get('retry-after'), '2');
      assert.equal(refused.body.error.details.retry_after_seconds, 2);
      assert.match(
        refused.body.error.message,
        /waited 2\.0 s for the pipeline \(limit 2 s, SLUICE_MAX_PENDING_AGE_MS\)/,
      );
      assert.equal(spool.pendingRecords(f.projectId), 3, 'nothing of the refused request is spooled');

      // Another collection of the same source has no backlog: accepted.
      assert.equal((await ingest(srv.url, `key=${f.secret}&collection=quiet`, '{"b":1}')).status, 202);
      // A WebSocket frame into the busy collection is refused, the connection stays open.
      const ws = await WsClient.connect(`${srv.url}/ingest?${q}`);
      ws.send('{"a":5}');
      const frame = JSON.parse(await ws.message(0));
      assert.equal(frame.error.code, 'spool_full_ingest_queue');
      assert.equal(frame.retry_after, 2);
      // So is an in-process producer's write (pulls, checks), as a value.
      const sink = await srv.sluice.services.sink.write(
        { projectId: f.projectId, sourceId: f.sourceId, collectionSlug: 'busy' },
        [{ a: 6 }],
        { producer: 'test' },
      );
      assert.equal(sink.ok, false);
      assert.equal(!sink.ok && sink.code, 'spool_full_ingest_queue');
      assert.equal(!sink.ok && sink.retryAfterSeconds, 2);
      assert.equal(spool.pendingRecords(f.projectId), 4, 'only the quiet collection took a record');

      // The pipeline catches up: the same collection is accepted again, frame and request.
      await drain(srv);
      ws.send('{"a":5}');
      assert.deepEqual(JSON.parse(await ws.message(1)), { seq: 2, accepted: 1 });
      ws.close();
      assert.equal((await ingest(srv.url, q, '{"a":7}')).status, 202);
      // The refusals are counted under their reason.
      const minute = srv.sluice.services.telemetry.minute(f.projectId, Math.floor(clock.now() / 60_000) * 60_000);
      assert.equal(minute?.error_counts.spool_full_ingest_queue, 3);
    } finally {
      await srv.stop();
    }
  });

  it('follows the oldest entry left: a drained head makes the next one the measure', async () => {
    const clock = new ManualClock(Date.parse('2026-11-28T12:00:00Z'));
    const srv = await TestServer.start({ clock, env: { SLUICE_PIPELINE: '0', SLUICE_MAX_PENDING_AGE_MS: '2000' } });
    try {
      const f = await createIngestKey(srv, 'backlog head');
      const q = `key=${f.secret}`;
      const spool = srv.sluice.services.spool;
      assert.equal((await ingest(srv.url, q, '{"n":1}')).status, 202);
      clock.advance(1500);
      assert.equal((await ingest(srv.url, q, '{"n":2}')).status, 202);
      clock.advance(1000);
      assert.equal((await ingest(srv.url, q, '{"n":3}')).status, 503, 'the first entry waited 2.5 s');
      // The pipeline takes the first entry only: the oldest left waited 1 s.
      const first = spool.lease(1)!;
      assert.equal(first.records, 1);
      await spool.complete(first);
      assert.equal((await ingest(srv.url, q, '{"n":3}')).status, 202);
      clock.advance(1001);
      assert.equal((await ingest(srv.url, q, '{"n":4}')).status, 503, 'the second entry waited 2.001 s');
      await drain(srv);
      assert.equal((await ingest(srv.url, q, '{"n":4}')).status, 202);
    } finally {
      await srv.stop();
    }
  });

  it('an idempotent retry is answered from its stored result while the collection is refused', async () => {
    const clock = new ManualClock(Date.parse('2026-11-28T12:00:00Z'));
    const srv = await TestServer.start({ clock, env: { SLUICE_PIPELINE: '0', SLUICE_MAX_PENDING_AGE_MS: '2000' } });
    try {
      const f = await createIngestKey(srv, 'backlog idempotent');
      const q = `key=${f.secret}`;
      assert.equal((await ingest(srv.url, q, '{"a":1}', { 'idempotency-key': 'k1' })).status, 202);
      clock.advance(5000);
      const retry = await ingest(srv.url, q, '{"a":1}', { 'idempotency-key': 'k1' });
      assert.equal(retry.status, 202);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      assert.equal((await ingest(srv.url, q, '{"a":2}', { 'idempotency-key': 'k2' })).status, 503);
    } finally {
      await srv.stop();
    }
  });

  it('defaults: 3 s with a pipeline, no limit without one unless set; 0 turns it off', async () => {
    assert.equal(loadConfig({}).maxPendingAgeMs, 3000);
    assert.equal(loadConfig({ SLUICE_PIPELINE: '0' }).maxPendingAgeMs, 0);
    assert.equal(loadConfig({ SLUICE_PIPELINE: '0', SLUICE_MAX_PENDING_AGE_MS: '500' }).maxPendingAgeMs, 500);
    assert.equal(loadConfig({ SLUICE_MAX_PENDING_AGE_MS: '0' }).maxPendingAgeMs, 0);
    assert.throws(() => loadConfig({ SLUICE_MAX_PENDING_AGE_MS: 'soon' }), /SLUICE_MAX_PENDING_AGE_MS/);
    // Without a pipeline (and the knob unset) an hour-old backlog is still accepted: nothing drains it anyway.
    const clock = new ManualClock(Date.parse('2026-11-28T12:00:00Z'));
    const srv = await TestServer.start({ clock, env: { SLUICE_PIPELINE: '0' } });
    try {
      const f = await createIngestKey(srv, 'backlog off');
      assert.equal((await ingest(srv.url, `key=${f.secret}`, '{"a":1}')).status, 202);
      clock.advance(3_600_000);
      assert.equal((await ingest(srv.url, `key=${f.secret}`, '{"a":2}')).status, 202);
    } finally {
      await srv.stop();
    }
  });
});
