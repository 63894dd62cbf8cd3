import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { BOOTSTRAP_KEY, TestServer } from '../helpers/server.js';
import { fetchFromChild, type FetchSpec } from '../helpers/fetch-client.js';
import { createIngestKey, type IngestFixture } from '../ingest/helpers.js';
import { BodyDrain, DRAIN_MAX_BYTES, shouldDrain } from '../../src/http/body-drain.js';

const MB = 1024 * 1024;
/** Each oversize case is sent this many times: closing on a client still sending failed most, not all, of the time. */
const ROUNDS = 10;

/** Every outcome of `spec` is `status` with error `code` (and, for 413, `Connection: close`). */
async function allRefused(spec: FetchSpec, status: number, code: string, endpoint: string): Promise<void> {
  const outcomes = await fetchFromChild(spec);
  assert.equal(outcomes.length, spec.rounds);
  for (const [i, o] of outcomes.entries()) {
    assert.ok('status' in o, `round ${i}: fetch failed: ${'error' in o ? o.error : ''}`);
    assert.equal(o.status, status, `round ${i}`);
    assert.equal(o.envelope.error.code, code);
    assert.equal(o.envelope.data, null);
    assert.equal(o.envelope.endpoint, endpoint);
    if (status === 413) assert.equal(o.connection, 'close');
  }
}

/** A raw request whose body is sent by hand; resolves with what came back once the server closes. */
function raw(port: number, head: string, body: Buffer | null): Promise<{ text: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('close', () => resolve({ text, ms: Date.now() - started }));
    socket.on('error', () => undefined);
    socket.write(head);
    if (body) socket.write(body);
  });
}

describe('refusals of bodies still arriving can be read by fetch', () => {
  let srv: TestServer;
  let f: IngestFixture;
  let port: number;

  before(async () => {
    srv = await TestServer.start({
      env: {
        SLUICE_PIPELINE: '0',
        SLUICE_MAX_INGEST_BYTES: String(MB),
        SLUICE_MAX_BODY_BYTES: String(MB),
        SLUICE_INGEST_BODY_TIMEOUT_MS: '1500',
      },
    });
    f = await createIngestKey(srv);
    port = Number(new URL(srv.url).port);
  });
  after(() => srv.stop());

  for (const body of ['buffer', 'stream'] as const) {
    it(`ingest: a ${body} body over the limit answers 413 payload_too_large, with Connection: close`, async () => {
      await allRefused(
        {
          url: `${srv.url}/ingest?key=${f.secret}`,
          body,
          bytes: 8 * MB,
          rounds: ROUNDS,
          headers: { 'content-type': 'application/x-ndjson' },
        },
        413,
        'payload_too_large',
        'POST /ingest',
      );
      assert.equal(srv.sluice.services.spool.pendingRecords(f.projectId), 0, 'nothing of it was spooled');
    });

    it(`ingest: a refusal before the ${body} body is read (unknown key) can be read too`, async () => {
      await allRefused(
        { url: `${srv.url}/ingest?key=not-a-key`, body, bytes: 4 * MB, rounds: ROUNDS },
        401,
        'auth_invalid_credentials',
        'POST /ingest',
      );
    });

    it(`control plane: a ${body} body over SLUICE_MAX_BODY_BYTES answers 413 payload_too_large`, async () => {
      const headers = { authorization: `Bearer ${BOOTSTRAP_KEY}`, 'content-type': 'application/json' };
      await allRefused(
        { url: `${srv.url}/v1/projects`, body, bytes: 8 * MB, rounds: ROUNDS, headers },
        413,
        'payload_too_large',
        'POST /v1/projects',
      );
    });
  }

  it('the server still answers after the refusals', async () => {
    assert.equal((await srv.get('/v1/projects')).status, 200);
    const ok = await fetch(`${srv.url}/ingest?key=${f.secret}`, { method: 'POST', body: '{"a":1}' });
    assert.equal(ok.status, 202);
  });

  it('a refused body that stalls is answered and closed at the body time limit', async () => {
    const r = await raw(
      port,
      `POST /ingest?key=${f.secret} HTTP/1.1\r\nHost: x\r\nContent-Length: ${4 * MB}\r\n\r\n`,
      Buffer.alloc(2 * MB, 0x61),
    );
    assert.match(r.text, /^HTTP\/1\.1 413 /);
    assert.match(r.text, /payload_too_large/);
    assert.ok(r.ms >= 1200 && r.ms < 5000, `closed after ${r.ms} ms`);
  });

  it(`a declared length past ${DRAIN_MAX_BYTES / MB} MB is answered at once, without reading it`, async () => {
    const r = await raw(
      port,
      `POST /ingest?key=${f.secret} HTTP/1.1\r\nHost: x\r\nContent-Length: ${DRAIN_MAX_BYTES + 1}\r\n\r\n`,
      null,
    );
    assert.match(r.text, /^HTTP\/1\.1 413 /);
    assert.ok(r.ms < 1000, `answered after ${r.ms} ms`);
    const cp = await raw(
      port,
      `POST /v1/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${BOOTSTRAP_KEY}\r\nContent-Length: ${DRAIN_MAX_BYTES + 1}\r\n\r\n`,
      null,
    );
    assert.match(cp.text, /^HTTP\/1\.1 413 /);
    assert.ok(cp.ms < 1000, `answered after ${cp.ms} ms`);
  });
});

describe('BodyDrain', () => {
  it('ends once: at the last chunk, past the byte bound, or at the time bound; not after cancel', async () => {
    let ends = 0;
    const last = new BodyDrain(10, { maxBytes: 100, timeoutMs: 10_000 }, () => ends++);
    last.chunk(50, false);
    assert.equal(ends, 0);
    last.chunk(0, true);
    last.chunk(10, true);
    assert.equal(ends, 1);

    const bytes = new BodyDrain(10, { maxBytes: 100, timeoutMs: 10_000 }, () => ends++);
    bytes.chunk(90, false);
    assert.equal(ends, 1, 'exactly the bound is still read');
    bytes.chunk(1, false);
    assert.equal(ends, 2);

    const started = Date.now();
    // The drain's timer does not hold the process open; this one does, for the wait.
    const hold = setTimeout(() => undefined, 5_000);
    await new Promise<void>((resolve) => new BodyDrain(0, { maxBytes: 100, timeoutMs: 50 }, resolve));
    clearTimeout(hold);
    assert.ok(Date.now() - started >= 45);

    const cancelled = new BodyDrain(0, { maxBytes: 100, timeoutMs: 20 }, () => ends++);
    cancelled.cancel();
    cancelled.chunk(0, true);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(ends, 2);
  });

  it('drains only bodies that are there and within the bound', () => {
    assert.equal(shouldDrain(0, false), false);
    assert.equal(shouldDrain(0, true), true);
    assert.equal(shouldDrain(1, false), true);
    assert.equal(shouldDrain(DRAIN_MAX_BYTES, false), true);
    assert.equal(shouldDrain(DRAIN_MAX_BYTES + 1, false), false);
  });
});
