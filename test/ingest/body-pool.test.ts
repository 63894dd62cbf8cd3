import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BodyPool } from '../../src/ingest/body-pool.js';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson, type IngestFixture } from './helpers.js';

describe('ingest body buffers used again', () => {
  it('a buffer given back is handed out again for a body of its size class; foreign, repeated and excess ones are not kept', () => {
    const pool = new BodyPool(3 * 1024 * 1024);
    const a = pool.take(1_500_000);
    assert.equal(a.length, 1_500_000);
    assert.equal(a.buffer.byteLength, 2 * 1024 * 1024, 'size class: the next power of two');
    pool.give(a.subarray(10, 20));
    pool.give(a);
    assert.equal(pool.pooled(), 2 * 1024 * 1024, 'given back once');
    const b = pool.take(1_100_000);
    assert.equal(b.buffer, a.buffer, 'the same buffer again');
    assert.equal(pool.pooled(), 0);
    pool.give(Buffer.alloc(2 * 1024 * 1024));
    assert.equal(pool.pooled(), 0, 'a buffer it did not hand out is left alone');
    const c = pool.take(1_100_000);
    pool.give(b);
    pool.give(c);
    assert.equal(pool.pooled(), 2 * 1024 * 1024, 'past its bound it keeps no more');
    assert.equal(pool.take(100).buffer.byteLength, 64 * 1024);
    assert.equal(pool.take(40 * 1024 * 1024).length, 40 * 1024 * 1024, 'past the largest class, a buffer of its own');
  });

  describe('over HTTP', () => {
    let srv: TestServer;
    let f: IngestFixture;
    before(async () => {
      srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
      f = await createIngestKey(srv);
    });
    after(() => srv.stop());

    it('concurrent large bodies, round after round, each spooled exactly as sent; refused ones too leave the others intact', async () => {
      const sent: string[] = [];
      for (let round = 0; round < 4; round++) {
        const bodies = Array.from({ length: 6 }, (_, k) =>
          ndjson(
            Array.from({ length: 400 + 37 * k }, (_, i) => ({
              round,
              k,
              i,
              pad: `${round}-${k}-${i} `.repeat(10 + ((i * 7 + k) % 30)),
            })),
          ),
        );
        // One bad body per round: its buffer goes back at once and is taken by the next one.
        const bad = bodies[0]!.slice(0, -2) + ',}\n';
        const replies = await Promise.all(
          [...bodies, bad].map((b) =>
            ingest(srv.url, `key=${f.secret}&collection=reuse`, b, { 'content-type': 'application/x-ndjson' }),
          ),
        );
        assert.deepEqual(
          replies.map((r) => r.status),
          [202, 202, 202, 202, 202, 202, 400],
        );
        sent.push(...bodies);
      }
      const stored = [...srv.sluice.services.spool.scan()].map((e) => Buffer.from(e.body).toString('utf8'));
      assert.equal(stored.length, sent.length);
      assert.deepEqual([...stored].sort(), [...sent].sort(), 'every body byte for byte, none mixed with another');
    });
  });
});
