import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ManualClock } from '../../src/clock.js';
import { IdempotencyStore, SWEEP_CHUNK } from '../../src/ingest/idempotency.js';
import { IDEMPOTENCY_TTL_MS } from '../../src/ingest/limits.js';
import { createIngestKey, ingest, ndjson } from './helpers.js';
import { WsClient } from './ws-client.js';

describe('idempotent retries: request fingerprint, answer during backpressure, sweep', () => {
  let srv: TestServer;
  const clock = new ManualClock(Date.parse('2026-03-01T10:00:00Z'));

  before(async () => {
    srv = await TestServer.start({ clock, env: { SLUICE_PIPELINE: '0', SLUICE_MAX_PENDING_RECORDS: '3' } });
  });
  after(() => srv.stop());

  it('a retry with the same key but another body or collection is refused 409 idempotency_key_reused; the same body replays even while the gate refuses', async () => {
    const f = await createIngestKey(srv, 'idem');
    const q = `key=${f.secret}`;
    const body = ndjson([{ a: 1 }, { a: 2 }, { a: 3 }]);
    const first = await ingest(srv.url, q, body, { 'idempotency-key': 'k1' });
    assert.equal(first.status, 202);
    // The queue is now full (3 of 3): new data is refused ...
    const fresh = await ingest(srv.url, q, '{"a":4}', { 'idempotency-key': 'k2' });
    assert.equal(fresh.status, 503);
    assert.equal(fresh.body.error.code, 'spool_full_ingest_queue');
    // ... but the retry of a stored request still gets its stored answer.
    const retry = await ingest(srv.url, q, body, { 'idempotency-key': 'k1' });
    assert.equal(retry.status, 202);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.equal(retry.body.data.accepted, 3);
    // A BOM in front of the same body is the same request.
    assert.equal((await ingest(srv.url, q, '\uFEFF' + body, { 'idempotency-key': 'k1' })).status, 202);
    const other = await ingest(srv.url, q, ndjson([{ a: 1 }, { a: 2 }, { a: 99 }]), { 'idempotency-key': 'k1' });
    assert.equal(other.status, 409);
    assert.equal(other.body.error.code, 'idempotency_key_reused');
    assert.match(other.body.error.message, /different request/);
    const otherCollection = await ingest(srv.url, `${q}&collection=elsewhere`, body, { 'idempotency-key': 'k1' });
    assert.equal(otherCollection.status, 409);
    assert.equal(otherCollection.body.error.code, 'idempotency_key_reused');
    assert.equal(srv.sluice.services.spool.pendingRecords(f.projectId), 3, 'stored once');
    // WebSocket frames: (stream, seq) is the key; a different frame under it is refused the same way.
    const spool = srv.sluice.services.spool;
    for (let l = spool.lease(100); l; l = spool.lease(100)) await spool.complete(l);
    const ws = await WsClient.connect(`${srv.url}/ingest?${q}&stream=dev1`);
    ws.send('{"w":1}');
    assert.deepEqual(JSON.parse(await ws.message(0)), { seq: 1, accepted: 1 });
    ws.close();
    const again = await WsClient.connect(`${srv.url}/ingest?${q}&stream=dev1&seq=1`);
    again.send('{"w":2}');
    const refused = JSON.parse(await again.message(0));
    assert.equal(refused.seq, 1);
    assert.equal(refused.error.code, 'idempotency_key_reused');
    again.close();
  });

  it('a sweep removes every expired result, more than one chunk of them, and keeps fresh ones', async () => {
    const store = new IdempotencyStore(srv.sluice.services.store, clock);
    const n = SWEEP_CHUNK * 2 + 345;
    const stored = (key: string) =>
      store.run(key, 'h', async (stage) => {
        stage({ accepted: 1 });
        return { accepted: 1 };
      });
    await Promise.all(Array.from({ length: n }, (_, i) => stored(`sweep:${i}`)));
    await srv.sluice.services.store.root.flushed;
    assert.ok(store.has('sweep:0') && store.has(`sweep:${n - 1}`));
    clock.advance(IDEMPOTENCY_TTL_MS + 1);
    await stored('sweep:fresh');
    const removed = await store.sweep();
    assert.ok(removed >= n, `removed ${removed} of at least ${n}`);
    const left = [...(store as any).expiry.getKeys({})] as [number, string][];
    assert.deepEqual(
      left.filter(([, k]) => k.startsWith('sweep:')).map(([, k]) => k),
      ['sweep:fresh'],
    );
    assert.equal((store as any).results.get('sweep:0'), undefined);
    assert.equal((store as any).results.get(`sweep:${n - 1}`), undefined);
    assert.ok(store.has('sweep:fresh'));
    assert.equal(await store.sweep(), 0);
  });
});
