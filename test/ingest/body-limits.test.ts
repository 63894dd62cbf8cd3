import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { TestServer } from '../helpers/server.js';
import { decodeRecords } from '../../src/ingest/framing.js';
import { createIngestKey, ingest, ndjson, type IngestFixture } from './helpers.js';
import { WsClient } from './ws-client.js';

/** A raw HTTP/1.1 request whose body the test sends (or withholds) by hand. */
function rawRequest(
  port: number,
  path: string,
  headers: Record<string, string>,
): { socket: Socket; response: Promise<{ status: number; text: string; closed: boolean }> } {
  const socket = connect(port, '127.0.0.1');
  let data = '';
  const response = new Promise<{ status: number; text: string; closed: boolean }>((resolve) => {
    socket.on('data', (d) => (data += d.toString('latin1')));
    socket.on('close', () => resolve({ status: Number(data.split(' ')[1]), text: data, closed: true }));
    socket.on('error', () => undefined);
  });
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`,
  );
  return { socket, response };
}

describe('ingest bodies: memory of uploads in progress, read time limit, BOM, nesting depth', () => {
  let srv: TestServer;
  let f: IngestFixture;
  let port: number;

  before(async () => {
    srv = await TestServer.start({
      env: { SLUICE_PIPELINE: '0', SLUICE_MAX_INGEST_MEMORY_BYTES: '1000', SLUICE_INGEST_BODY_TIMEOUT_MS: '600' },
    });
    f = await createIngestKey(srv);
    port = Number(new URL(srv.url).port);
  });
  after(() => srv.stop());

  it('declared bytes of a body still arriving count against the memory cap from admission; they are released when it ends', async () => {
    const stalled = rawRequest(port, `/ingest?key=${f.secret}`, {
      'content-length': '800',
      'content-type': 'application/x-ndjson',
    });
    stalled.socket.write('{"a":1}\n');
    await new Promise((r) => setTimeout(r, 50));
    const refused = await ingest(srv.url, `key=${f.secret}`, ndjson(Array.from({ length: 30 }, (_, i) => ({ i }))));
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error.code, 'spool_full_ingest_queue');
    assert.equal(refused.headers.get('retry-after'), '2');
    stalled.socket.destroy();
    await stalled.response;
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(
      (await ingest(srv.url, `key=${f.secret}`, ndjson(Array.from({ length: 30 }, (_, i) => ({ i }))))).status,
      202,
      'released on abort',
    );
    const minutes = [
      ...srv.sluice.services.telemetry.range(f.projectId, Date.now() - 120_000, Date.now() + 60_000).values(),
    ];
    assert.equal(
      minutes.reduce((n, m) => n + (m.error_counts.connection_closed ?? 0), 0),
      1,
      'a client gone mid-body is counted as connection_closed',
    );
  });

  it('chunked bytes count as they arrive: past the cap the upload is refused with 503', async () => {
    const chunked = rawRequest(port, `/ingest?key=${f.secret}`, { 'transfer-encoding': 'chunked' });
    const line = '{"pad":"' + 'x'.repeat(90) + '"}\n';
    for (let i = 0; i < 12; i++) chunked.socket.write(`${Buffer.byteLength(line).toString(16)}\r\n${line}\r\n`);
    const r = await chunked.response;
    assert.equal(r.status, 503);
    assert.match(r.text, /spool_full_ingest_queue/);
    assert.match(r.text, /retry-after: 2/i);
    assert.equal((await ingest(srv.url, `key=${f.secret}`, '{"after":1}')).status, 202, 'nothing stays counted');
  });

  it('a body not complete within the time limit is refused and its connection closed', async () => {
    const started = Date.now();
    const slow = rawRequest(port, `/ingest?key=${f.secret}`, { 'content-length': '100' });
    slow.socket.write('{"a":');
    const r = await slow.response;
    const took = Date.now() - started;
    assert.equal(r.status, 400);
    assert.match(r.text, /body_timeout/);
    assert.ok(r.closed);
    assert.ok(took >= 550 && took < 3000, `closed after ${took} ms`);
    assert.equal(
      (await ingest(srv.url, `key=${f.secret}`, ndjson(Array.from({ length: 30 }, (_, i) => ({ i }))))).status,
      202,
      'its bytes were released',
    );
  });

  it('a leading UTF-8 BOM is stripped from bodies and frames before parsing and spooling', async () => {
    const g = await createIngestKey(srv, 'bom');
    assert.equal((await ingest(srv.url, `key=${g.secret}`, '\uFEFF[{"a":1},{"a":2}]')).status, 202);
    assert.equal((await ingest(srv.url, `key=${g.secret}`, '\uFEFF{"b":1}\n{"b":2}\n')).status, 202);
    const ws = await WsClient.connect(`${srv.url}/ingest?key=${g.secret}`);
    ws.send(Buffer.from('\uFEFF{"c":1}'), true);
    assert.deepEqual(JSON.parse(await ws.message(0)), { seq: 1, accepted: 1 });
    ws.close();
    const mine = [...srv.sluice.services.spool.scan()].filter((e) => e.project_id === g.projectId);
    assert.equal(mine.length, 3);
    for (const e of mine) assert.notEqual(e.body[0], 0xef, 'stored without the BOM');
    assert.deepEqual(
      mine.flatMap((e) => decodeRecords(e.format, e.body)),
      [{ a: 1 }, { a: 2 }, { b: 1 }, { b: 2 }, { c: 1 }],
    );
  });

  it('records nested deeper than 1,000 levels are refused with frame_invalid naming the line or index', async () => {
    const h = await createIngestKey(srv, 'deep');
    // Only the memory cap of this suite is small; these bodies go through a second server.
    const big = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
    try {
      const k = await createIngestKey(big, 'deep');
      const nest = (levels: number) => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);
      assert.equal((await ingest(big.url, `key=${k.secret}`, nest(1000))).status, 202, 'exactly 1,000 levels is fine');
      const line = await ingest(big.url, `key=${k.secret}`, `{"ok":1}\n${nest(100_000)}\n`);
      assert.equal(line.status, 400);
      assert.equal(line.body.error.code, 'frame_invalid');
      assert.equal(line.body.error.details.line, 2);
      assert.match(line.body.error.message, /nested deeper than 1000 levels/);
      const arr = await ingest(big.url, `key=${k.secret}`, `[{"ok":1},${'['.repeat(0)}${nest(1001)}]`);
      assert.equal(arr.status, 400);
      assert.equal(arr.body.error.code, 'frame_invalid');
      assert.equal(arr.body.error.details.index, 1);
      const arrays = await ingest(big.url, `key=${k.secret}`, `{"x":${'['.repeat(5000)}${']'.repeat(5000)}}`);
      assert.equal(arrays.status, 400);
      assert.equal(arrays.body.error.details.line, 1);
      assert.equal(big.sluice.services.spool.pendingRecords(k.projectId), 1, 'only the 1,000-level record was stored');
    } finally {
      await big.stop();
    }
    assert.ok(h.projectId);
  });
});

describe('ingest bodies: large uploads that stall', () => {
  it('count the bytes that arrived, not the length they declared: others are still admitted', async () => {
    const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0', SLUICE_MAX_INGEST_MEMORY_BYTES: '200000' } });
    try {
      const f = await createIngestKey(srv);
      const port = Number(new URL(srv.url).port);
      // Declares 150 KB, sends 8 bytes and stalls (a slow or hostile client).
      const stalled = rawRequest(port, `/ingest?key=${f.secret}`, {
        'content-length': '150000',
        'content-type': 'application/x-ndjson',
      });
      stalled.socket.write('{"a":1}\n');
      await new Promise((r) => setTimeout(r, 50));
      // 100 KB more would pass the 200 KB cap if the stalled upload held its declared length.
      const body = ndjson(Array.from({ length: 1000 }, (_, i) => ({ i, pad: 'x'.repeat(80) })));
      assert.ok(body.length > 64 * 1024 && body.length < 150_000);
      const r = await ingest(srv.url, `key=${f.secret}`, body, { 'content-type': 'application/x-ndjson' });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      stalled.socket.destroy();
      await stalled.response;
    } finally {
      await srv.stop();
    }
  });

  it('a large declared body arriving in pieces is spooled byte for byte (one buffer of its length)', async () => {
    const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
    try {
      const f = await createIngestKey(srv);
      const port = Number(new URL(srv.url).port);
      const body = Buffer.from(
        ndjson(Array.from({ length: 3000 }, (_, i) => ({ i, s: `é ${i} `.repeat(1 + (i % 40)) }))),
      );
      assert.ok(body.length > 256 * 1024);
      const req = rawRequest(port, `/ingest?key=${f.secret}&collection=pieces`, {
        'content-length': String(body.length),
        'content-type': 'application/x-ndjson',
      });
      // Uneven pieces, with pauses, so uWS hands them over as several chunks.
      for (let at = 0, k = 1; at < body.length; k++) {
        const end = Math.min(body.length, at + 1000 * k * k);
        req.socket.write(body.subarray(at, end));
        at = end;
        await new Promise((r) => setTimeout(r, 5));
      }
      const answer = await Promise.race([
        req.response,
        new Promise<{ text: string }>((r) => req.socket.on('data', (d) => r({ text: d.toString('latin1') }))),
      ]);
      assert.match(answer.text, /^HTTP\/1\.1 202/);
      req.socket.destroy();
      const stored = [...srv.sluice.services.spool.scan()].filter((e) => e.records === 3000);
      assert.equal(stored.length, 1);
      assert.ok(Buffer.from(stored[0]!.body).equals(body), 'the spooled body is what was sent');
      // Refusals of such bodies are unchanged: a bad byte on a late line, a line that is not JSON.
      const lines = body.toString('utf8').split('\n');
      const badUtf8 = Buffer.concat([
        Buffer.from(lines.slice(0, 2500).join('\n') + '\n{"x":"'),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('"}\n' + lines.slice(2500).join('\n')),
      ]);
      const r1 = await ingest(srv.url, `key=${f.secret}&collection=pieces`, badUtf8, {
        'content-type': 'application/x-ndjson',
      });
      assert.equal(r1.status, 400);
      assert.equal(r1.body.error.code, 'frame_invalid');
      assert.deepEqual(r1.body.error.details, {
        line: 2501,
        reason: 'is not valid UTF-8: send JSON text encoded as UTF-8',
      });
      const notJson = lines.slice(0, 2999).join('\n') + '\n{"x":1,}\n';
      const r2 = await ingest(srv.url, `key=${f.secret}&collection=pieces`, notJson, {
        'content-type': 'application/x-ndjson',
      });
      assert.equal(r2.status, 400);
      assert.equal(r2.body.error.details.line, 3000);
      assert.equal([...srv.sluice.services.spool.scan()].length, 1, 'nothing of them spooled');
    } finally {
      await srv.stop();
    }
  });
});
