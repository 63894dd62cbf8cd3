import { after, before, describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestServer } from '../helpers/server.js';
import { isEnvironmental, POISON_ATTEMPTS } from '../../src/pipeline/runner.js';
import { createIngestKey, ingest, ndjson, type IngestFixture } from '../ingest/helpers.js';

/**
 * Bad input must never stall a collection: a record nested deeper than anything the stack can
 * recurse over is stored, and a batch that keeps failing is moved aside so later records flow.
 */
describe('pipeline survives hostile records', () => {
  let srv: TestServer;
  let f: IngestFixture;
  let collectionId = '';
  const col = () => `/v1/projects/${f.projectId}/collections/${collectionId}`;

  before(async () => {
    srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
    f = await createIngestKey(srv, 'poison test');
    const res = await ingest(srv.url, `key=${f.secret}&collection=events`, ndjson([{ arr: [1], k: 0 }]), {
      'content-type': 'application/x-ndjson',
    });
    assert.equal(res.status, 202);
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    const list = await srv.get(`/v1/projects/${f.projectId}/collections`);
    collectionId = list.body.data.find((c: any) => c.slug === 'events').id;
  });
  after(() => srv.stop());

  it('a record nested 200,000 levels deep is stored and later records flow', async () => {
    const { spool } = srv.sluice.services;
    const deep = `{"arr":${'['.repeat(200_000)}${']'.repeat(200_000)},"k":1}`;
    await spool.append({
      collection_id: collectionId,
      project_id: f.projectId,
      received_at: Date.now(),
      records: 1,
      format: 'ndjson',
      body: new TextEncoder().encode(deep),
    });
    const res = await ingest(srv.url, `key=${f.secret}&collection=events`, ndjson([{ arr: [2], k: 2 }]), {
      'content-type': 'application/x-ndjson',
    });
    assert.equal(res.status, 202);
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000), 'the pipeline drains the spool');
    const docs = await srv.get(`${col()}/docs?limit=10&sort=asc`);
    assert.equal(docs.status, 200, JSON.stringify(docs.body));
    assert.equal(docs.body.data.length, 3);
  });

  it('a batch that keeps failing is narrowed to the failing entry, which is set aside; the rest flows', async () => {
    const { spool, schema, telemetry } = srv.sluice.services;
    const c = srv.sluice.services.collections.byId(collectionId)!;
    // A real, deterministic failure tied to one input: refused rows (a record that is not an
    // object) go to the `_overflow` directory, and a plain file stands where it should be.
    const dir = schema.filesDir(c);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, '_overflow'), 'in the way');
    const put = (body: string, records = 1) =>
      spool.append({
        collection_id: collectionId,
        project_id: f.projectId,
        received_at: Date.now(),
        records,
        format: 'ndjson',
        body: new TextEncoder().encode(body),
      });
    const seqs = await Promise.all([
      put('{"arr":[3],"k":3}'),
      put('{"arr":[4],"k":4}\n7', 2),
      put('{"arr":[5],"k":5}'),
      put('{"arr":[6],"k":6}'),
    ]);
    assert.ok(await srv.sluice.services.pipeline!.idle(60_000), 'the pipeline drains the spool');
    assert.equal(spool.pendingRecords(), 0);
    const aside = schema.unprocessable(collectionId);
    assert.equal(aside.length, 1);
    assert.equal(aside[0]!.seq, seqs[1]);
    assert.equal(aside[0]!.records, 2);
    assert.equal(aside[0]!.attempts, POISON_ATTEMPTS);
    assert.equal(Buffer.from(aside[0]!.body).toString(), '{"arr":[4],"k":4}\n7');
    assert.match(aside[0]!.error, /EEXIST|ENOTDIR|_overflow/);
    const docs = await srv.get(`${col()}/docs?limit=50&sort=asc`);
    const ks = docs.body.data.map((d: any) => (typeof d === 'string' ? JSON.parse(d).k : d.k));
    assert.deepEqual(ks, [0, 1, 2, 3, 5, 6]);
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    const counters = telemetry.minute(f.projectId, minute) ?? telemetry.minute(f.projectId, minute - 60_000);
    assert.equal(counters?.error_counts.server_error, 1);
  });

  it('set-aside entries are listed with their error, read with their body, and sent back once fixed', async () => {
    const list = await srv.get(`${col()}/unprocessable`);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.equal(list.body.data.length, 1);
    const [entry] = list.body.data;
    assert.equal(entry.object, 'unprocessable_entry');
    assert.deepEqual([entry.records, entry.format, entry.attempts], [2, 'ndjson', POISON_ATTEMPTS]);
    assert.match(entry.error, /EEXIST|ENOTDIR|_overflow/);
    assert.equal(entry.body, undefined, 'lists leave bodies out');
    const one = await srv.get(`${col()}/unprocessable/${entry.seq}`);
    assert.equal(one.body.data.body, '{"arr":[4],"k":4}\n7');
    assert.equal((await srv.get(`${col()}/unprocessable/999999`)).status, 404);
    assert.equal((await srv.get(`${col()}/unprocessable/abc`)).status, 400);
    // The cause goes away; the entry is retried and its records land.
    const c = srv.sluice.services.collections.byId(collectionId)!;
    rmSync(join(srv.sluice.services.schema.filesDir(c), '_overflow'), { force: true });
    // Retried three times at once: one is taken, the others find it gone (no records twice).
    const tries = await Promise.all([0, 1, 2].map(() => srv.post(`${col()}/unprocessable/${entry.seq}/retry`, {})));
    assert.deepEqual(tries.map((t) => t.status).sort(), [202, 404, 404]);
    const retried = tries.find((t) => t.status === 202)!;
    assert.ok(retried.body.data.spool_seq > entry.seq, 'a new sequence number');
    assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
    assert.deepEqual((await srv.get(`${col()}/unprocessable`)).body.data, []);
    const docs = await srv.get(`${col()}/docs?limit=50&sort=asc`);
    assert.equal(docs.body.data.length, 8, 'its two records (one refused classification) are stored now');
    assert.equal((await srv.post(`${col()}/unprocessable/${entry.seq}/retry`, {})).status, 404, 'retried once');
  });
});

test('failures of the machine (full disk, no descriptors, I/O) are retried, never a reason to set records aside', () => {
  const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  assert.equal(isEnvironmental(enospc), true);
  // As it reaches the runner from a worker: a message inside the pool's catalogue error.
  assert.equal(
    isEnvironmental(
      new Error('pipeline worker failed: ENOSPC: no space left on device, write', { cause: new Error('x') }),
    ),
    true,
  );
  assert.equal(
    isEnvironmental(new Error('wrapped', { cause: Object.assign(new Error('emfile'), { code: 'EMFILE' }) })),
    true,
  );
  assert.equal(isEnvironmental(new Error('MDB_MAP_FULL: Environment mapsize limit reached')), true);
  assert.equal(isEnvironmental(new Error('Maximum call stack size exceeded')), false);
  assert.equal(isEnvironmental(new SyntaxError('Unexpected token } in JSON')), false);
});
