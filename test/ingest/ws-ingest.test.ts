import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { TestServer } from '../helpers/server.js';
import { decodeRecords } from '../../src/ingest/framing.js';
import { createIngestKey, ndjson, type IngestFixture } from './helpers.js';
import { WsClient, zeroMaskFrame } from './ws-client.js';

describe('WebSocket ingest', () => {
  let srv: TestServer;
  let f: IngestFixture;
  const wsUrl = (query: string) => `${srv.url}/ingest?${query}`;
  const records = (projectId: string) =>
    [...srv.sluice.services.spool.scan()]
      .filter((e) => e.project_id === projectId)
      .flatMap((e) => decodeRecords(e.format, e.body));

  before(async () => {
    srv = await TestServer.start({ env: { SLUICE_MAX_INGEST_BYTES: String(64 * 1024), SLUICE_PIPELINE: '0' } });
    f = await createIngestKey(srv);
  });
  after(() => srv.stop());

  it('acks each frame with its seq after it is durable; an invalid frame is answered without closing', async () => {
    const ws = await WsClient.connect(wsUrl(`key=${f.secret}&collection=live`));
    ws.send(JSON.stringify({ n: 1 }));
    ws.send(JSON.stringify([{ n: 2 }, { n: 3 }]));
    ws.send('{"n":4}\n{"n":'); // invalid: the whole frame is dropped
    ws.send(ndjson([{ n: 5 }, { n: 6 }]));
    ws.send(gzipSync(ndjson([{ n: 7 }])));
    ws.send('');
    const replies = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => ws.message(i).then((m) => JSON.parse(m))));
    const bySeq = new Map(replies.map((r) => [r.seq, r]));
    assert.deepEqual(bySeq.get(1), { seq: 1, accepted: 1 });
    assert.deepEqual(bySeq.get(2), { seq: 2, accepted: 2 });
    assert.equal(bySeq.get(3).error.code, 'frame_invalid');
    assert.equal(bySeq.get(3).error.details.line, 2);
    assert.deepEqual(bySeq.get(4), { seq: 4, accepted: 2 });
    assert.deepEqual(bySeq.get(5), { seq: 5, accepted: 1 });
    assert.equal(bySeq.get(6).error.code, 'empty_payload');
    assert.equal(ws.closeCode, null, 'still open after invalid frames');
    assert.deepEqual(
      records(f.projectId).map((r) => r.n),
      [1, 2, 3, 5, 6, 7],
    );
    ws.close();
    assert.equal(await ws.closed(), 1000);
  });

  it('refuses the upgrade with an error envelope when the key is missing or invalid', async () => {
    await assert.rejects(
      WsClient.connect(wsUrl('collection=x')),
      (err: any) => err.status === 401 && JSON.parse(err.body).error.code === 'auth_missing_credentials',
    );
    await assert.rejects(
      WsClient.connect(wsUrl('key=pik_nope')),
      (err: any) => err.status === 401 && JSON.parse(err.body).error.code === 'auth_invalid_credentials',
    );
    await assert.rejects(WsClient.connect(wsUrl(`key=${f.secret}&seq=0`)), (err: any) => err.status === 400);
  });

  it('with stream and seq, a resent frame is answered from the first result, not spooled twice', async () => {
    const g = await createIngestKey(srv, 'ws idempotency');
    const a = await WsClient.connect(wsUrl(`key=${g.secret}&stream=device-7`));
    a.send('{"i":1}');
    a.send('{"i":2}\n{"i":3}');
    assert.deepEqual(JSON.parse(await a.message(0)), { seq: 1, accepted: 1 });
    assert.deepEqual(JSON.parse(await a.message(1)), { seq: 2, accepted: 2 });
    a.destroy();
    // Reconnect and resend from frame 2, then a new frame 3.
    const b = await WsClient.connect(wsUrl(`key=${g.secret}&stream=device-7&seq=2`));
    b.send('{"i":2}\n{"i":3}');
    b.send('{"i":4}');
    assert.deepEqual(JSON.parse(await b.message(0)), { seq: 2, accepted: 2, replayed: true });
    assert.deepEqual(JSON.parse(await b.message(1)), { seq: 3, accepted: 1 });
    b.close();
    assert.deepEqual(
      records(g.projectId).map((r) => r.i),
      [1, 2, 3, 4],
    );
  });

  it('closes with 1008 when the key is deleted while connected, and counts connection_closed', async () => {
    const g = await createIngestKey(srv, 'ws revoke');
    const ws = await WsClient.connect(wsUrl(`key=${g.secret}`));
    ws.send('{"a":1}');
    assert.equal(JSON.parse(await ws.message(0)).accepted, 1);
    const del = await srv.delete(`/v1/projects/${g.projectId}/sources/${g.sourceId}/ingest_keys/${g.keyId}`);
    assert.equal(del.status, 200);
    ws.send('{"a":2}');
    assert.equal(JSON.parse(await ws.message(1)).error.code, 'auth_invalid_credentials');
    assert.equal(await ws.closed(), 1008);

    // A client vanishing with frames unanswered is a dropped connection.
    const h = await createIngestKey(srv, 'ws drop');
    const drop = await WsClient.connect(wsUrl(`key=${h.secret}`));
    drop.send('{"a":1}');
    drop.destroy();
    await new Promise((r) => setTimeout(r, 200));
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    const counters =
      srv.sluice.services.telemetry.minute(h.projectId, minute) ??
      srv.sluice.services.telemetry.minute(h.projectId, minute - 60_000);
    assert.equal(counters?.error_counts.connection_closed, 1);
  });

  it('a client that never reads its answers is closed once 4 MiB of them are buffered; the server stays up', async (t) => {
    const g = await createIngestKey(srv, 'ws backpressure');
    const ws = await WsClient.connect(wsUrl(`key=${g.secret}`));
    ws.pauseReading();
    // Invalid frames cost the server no spooling but each gets a ~200-byte error answer, which
    // piles up in the server's buffers (and the kernel's) because nothing reads them.
    const one = zeroMaskFrame(Buffer.from('x'));
    const chunk = Buffer.concat(Array.from({ length: 500 }, () => one));
    const since = Date.now() - 60_000;
    /** This project's error counts since the test began (a minute boundary may pass meanwhile). */
    const counts = () => {
      const sum: Record<string, number> = {};
      for (const m of srv.sluice.services.telemetry.range(g.projectId, since, Date.now() + 60_000).values()) {
        for (const [k, v] of Object.entries(m.error_counts)) sum[k] = (sum[k] ?? 0) + (v ?? 0);
      }
      return sum;
    };
    const closes = () => counts().connection_closed ?? 0;
    // ~200 B answers × 60,000 frames = 12 MB: past 4 MiB plus what the kernel buffers on both ends.
    for (let frames = 0; frames < 60_000 && closes() === 0; frames += 500) if (!(await ws.writeDrained(chunk))) break;
    const until = Date.now() + 30_000;
    while (closes() === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    t.diagnostic(`the server closed the connection after ${counts().frame_invalid} frames were answered`);
    assert.equal(closes(), 1, 'closed by the server and counted once as connection_closed');
    // The paused client sees the close when a write finds the connection gone.
    const deadline = Date.now() + 10_000;
    while (ws.closeCode === null && Date.now() < deadline && (await ws.writeDrained(one)))
      await new Promise((r) => setTimeout(r, 50));
    assert.equal(
      await ws.closed(1000),
      1006,
      'closed by the server (the client reads nothing, not even a close frame)',
    );
    // The server took no harm: a new connection is answered as usual.
    const again = await WsClient.connect(wsUrl(`key=${g.secret}`));
    again.send('{"after":1}');
    assert.deepEqual(JSON.parse(await again.message(0)), { seq: 1, accepted: 1 });
    again.close();
  });
});
