import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { decodeRecords } from '../../src/ingest/framing.js';
import type { Spool, SpoolEntry, SpoolLease } from '../../src/spool/spool.js';
import { openPlain } from '../../src/store/db.js';
import { openSpoolIndex } from '../../src/spool/spool-index.js';
import { createIngestKey, ingest, ndjson, type IngestFixture } from '../ingest/helpers.js';

describe('spool: group commit, consumer leases, restart', () => {
  let srv: TestServer;
  let f: IngestFixture;
  const spool = (): Spool => srv.sluice.services.spool;
  const txnId = () => (srv.sluice.services.store.root.getStats() as { lastTxnId: number }).lastTxnId;

  before(async () => {
    srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
    f = await createIngestKey(srv);
  });
  after(() => srv.stop());

  it('appends issued in the same event-loop turn share one durable LMDB commit', async () => {
    const collection = await srv.sluice.services.collections.ensure(
      srv.sluice.services.sources.byId(f.sourceId)!,
      'group',
    );
    const before = txnId();
    const seqs = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        spool().append({
          collection_id: collection.id,
          project_id: f.projectId,
          received_at: Date.now(),
          records: 1,
          format: 'ndjson',
          body: Buffer.from(`{"i":${i}}`),
        }),
      ),
    );
    assert.equal(txnId() - before, 1, '100 appends, one transaction');
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => a - b),
    );
    assert.equal(new Set(seqs).size, 100);
  });

  it('concurrent HTTP requests share commits (fewer transactions than requests)', async (t) => {
    await ingest(srv.url, `key=${f.secret}`, '{"warm":1}');
    const before = txnId();
    const n = 64;
    const replies = await Promise.all(
      Array.from({ length: n }, (_, i) => ingest(srv.url, `key=${f.secret}`, ndjson([{ i }, { i }]))),
    );
    assert.ok(replies.every((r) => r.status === 202));
    const commits = txnId() - before;
    assert.ok(commits < n, `${commits} transactions for ${n} requests`);
    t.diagnostic(`${n} concurrent requests took ${commits} commits`);
  });

  it('a test consumer drains every collection in order with no loss, leasing collections in parallel', async () => {
    const g = await createIngestKey(srv, 'consumer');
    // Drain what earlier tests left so only this test's records are counted below.
    const drainAll = async () => {
      for (let l = spool().lease(1_000_000); l; l = spool().lease(1_000_000)) await spool().complete(l);
    };
    await drainAll();
    const slugs = ['a', 'b', 'c'];
    const perCollection = 40;
    const consumed = new Map<string, number[]>(slugs.map((s) => [s, []]));
    let stop = false;
    let releases = 0;
    let maxParallel = 0;
    /** Per collection: the first seq of a lease given back, which the next lease must start with. */
    const releasedFirst = new Map<string, number>();
    const consumer = async () => {
      const held: SpoolLease[] = [];
      while (!stop || spool().pendingRecords(g.projectId) > 0) {
        // Take up to two leases at once: they must be of different collections.
        for (let l = spool().lease(7); l && held.length < 2; l = held.length < 2 ? spool().lease(7) : null)
          held.push(l);
        if (held.length === 2) assert.notEqual(held[0]!.collectionId, held[1]!.collectionId);
        maxParallel = Math.max(maxParallel, held.length);
        for (const lease of held.splice(0)) {
          for (let i = 1; i < lease.entries.length; i++) assert.ok(lease.entries[i]!.seq > lease.entries[i - 1]!.seq);
          const again = releasedFirst.get(lease.collectionId);
          if (again !== undefined) {
            if (again !== -1) assert.equal(lease.firstSeq, again, 'a released lease comes again, first');
            releasedFirst.set(lease.collectionId, -1);
          } else {
            // Give each collection's first lease back: the same entries must come again, first.
            releasedFirst.set(lease.collectionId, lease.firstSeq);
            spool().release(lease);
            releases++;
            continue;
          }
          for (const e of lease.entries)
            for (const r of decodeRecords(e.format, e.body)) consumed.get(r.c as string)!.push(r.i as number);
          await spool().complete(lease);
        }
        await new Promise((r) => setImmediate(r));
      }
    };
    const producer = async (slug: string, from: number) => {
      for (let i = from; i < perCollection; i += 2) {
        const r = await ingest(
          srv.url,
          `key=${g.secret}&collection=${slug}`,
          ndjson([
            { c: slug, i },
            { c: slug, i: i + 1 },
          ]),
        );
        assert.equal(r.status, 202);
      }
    };
    // Every collection holds data before the consumer starts, so its first pass takes two leases.
    await Promise.all(
      slugs.map((slug) =>
        ingest(
          srv.url,
          `key=${g.secret}&collection=${slug}`,
          ndjson([
            { c: slug, i: 0 },
            { c: slug, i: 1 },
          ]),
        ),
      ),
    );
    const consuming = consumer();
    await Promise.all(slugs.map((slug) => producer(slug, 2)));
    stop = true;
    await consuming;
    for (const slug of slugs)
      assert.deepEqual(
        consumed.get(slug),
        Array.from({ length: perCollection }, (_, i) => i),
        `collection ${slug} in order, each record once`,
      );
    assert.equal(spool().pendingRecords(g.projectId), 0);
    assert.equal(spool().processingRecords(g.projectId), 0);
    assert.equal(maxParallel, 2, 'two collections leased at once');
    assert.equal(releases, slugs.length, 'each collection had one lease given back');
    for (const slug of slugs) assert.ok(consumed.get(slug)!.length > 0);
    assert.deepEqual(
      [...releasedFirst.values()],
      slugs.map(() => -1),
      'every released lease was leased again, first',
    );
    // Deterministically: two collections with data are leased in parallel, a third lease finds none.
    await ingest(srv.url, `key=${g.secret}&collection=a`, '{"c":"a","i":-1}');
    await ingest(srv.url, `key=${g.secret}&collection=b`, '{"c":"b","i":-1}');
    const l1 = spool().lease(10)!;
    const l2 = spool().lease(10)!;
    assert.notEqual(l1.collectionId, l2.collectionId);
    assert.equal(spool().lease(10), null);
    assert.equal(spool().processingRecords(g.projectId), 2);
    await spool().complete(l1);
    await spool().complete(l2);
    // Throughput telemetry counts drained records.
    await srv.sluice.services.telemetry.flush();
    const live = await srv.get(
      `/v1/projects/${g.projectId}/pipeline?start_at=${new Date(Date.now() - 120_000).toISOString()}`,
    );
    const throughput = live.body.data.series.find((s: any) => s.details.label === 'Throughput');
    const total = Object.values(throughput.records as Record<string, [number, number]>).reduce(
      (n, v) => n + (v[0] ?? 0),
      0,
    );
    assert.equal(total, slugs.length * perCollection + 2);
  });

  it('a lease stops at its byte budget (at least one entry), and the next lease goes on from there', async () => {
    const collection = await srv.sluice.services.collections.ensure(
      srv.sluice.services.sources.byId(f.sourceId)!,
      'bytes',
    );
    for (let l = spool().lease(1_000_000); l; l = spool().lease(1_000_000)) await spool().complete(l);
    const body = (i: number) => Buffer.from(`{"i":${i},"pad":"${'x'.repeat(90)}"}`);
    const size = body(0).byteLength;
    const seqs = await Promise.all(
      [0, 1, 2, 3, 4].map((i) =>
        spool().append({
          collection_id: collection.id,
          project_id: f.projectId,
          received_at: Date.now(),
          records: 1,
          format: 'ndjson',
          body: body(i),
        }),
      ),
    );
    const ahead = () => 3;
    // Two bodies reach the budget; a budget below one body still takes one entry.
    const first = spool().lease(100, undefined, ahead, 2 * size)!;
    assert.deepEqual(
      first.entries.map((e) => e.seq),
      seqs.slice(0, 2),
    );
    const second = spool().lease(100, undefined, ahead, 1)!;
    assert.deepEqual(
      second.entries.map((e) => e.seq),
      seqs.slice(2, 3),
    );
    const rest = spool().lease(100, undefined, ahead)!;
    assert.deepEqual(
      rest.entries.map((e) => e.seq),
      seqs.slice(3),
    );
    for (const l of [first, second, rest]) await spool().complete(l);
  });

  it('a lease not completed before a restart is replayed; force-deleting a collection drops its entries', async () => {
    const g = await createIngestKey(srv, 'replay');
    for (let l = spool().lease(1_000_000); l; l = spool().lease(1_000_000)) await spool().complete(l);
    await ingest(srv.url, `key=${g.secret}&collection=replay`, ndjson([{ r: 1 }, { r: 2 }]));
    const lease = spool().lease(100)!;
    assert.equal(lease.records, 2);
    assert.equal(spool().processingRecords(g.projectId), 2);
    assert.equal(spool().lease(100), null, 'one lease per collection');
    await srv.restart();
    assert.equal(spool().pendingRecords(g.projectId), 2);
    assert.equal(spool().processingRecords(g.projectId), 0);
    const again = spool().lease(100)!;
    assert.deepEqual(
      again.entries.map((e) => e.seq),
      lease.entries.map((e) => e.seq),
    );
    spool().release(again);

    const cols = await srv.get(`/v1/projects/${g.projectId}/collections?source_id=${g.sourceId}`);
    const id = cols.body.data.find((c: any) => c.slug === 'replay').id;
    const del = await srv.delete(`/v1/projects/${g.projectId}/collections/${id}/force`);
    assert.equal(del.status, 200);
    assert.equal(spool().pendingRecords(g.projectId), 0);
    assert.equal([...spool().scan()].filter((e) => e.collection_id === id).length, 0);
  });

  it("a lease's bodies are one buffer of exactly its entries' bodies, in order; entries indexed without their size (an earlier release) are measured", async () => {
    const g = await createIngestKey(srv, 'packed');
    const collection = await srv.sluice.services.collections.ensure(
      srv.sluice.services.sources.byId(g.sourceId)!,
      'packed',
    );
    for (let l = spool().lease(1_000_000); l; l = spool().lease(1_000_000)) await spool().complete(l);
    const bodies = ['{"a":1}', '{"b":"' + 'x'.repeat(70_000) + '"}\n{"b":2}', '{"c":3}'];
    const seqs: number[] = [];
    for (const [i, b] of bodies.entries())
      seqs.push(
        await spool().append({
          collection_id: collection.id,
          project_id: g.projectId,
          received_at: 1_700_000_000_000 + i,
          records: i === 1 ? 2 : 1,
          format: 'ndjson',
          body: Buffer.from(b),
        }),
      );
    // The index rows of an earlier release carried no body size (msgpack arrays): rewrite the middle one so.
    const row = openSpoolIndex(srv.sluice.services.store).get([collection.id, seqs[1]!])!;
    assert.equal(row[4], Buffer.byteLength(bodies[1]!), 'the index holds the body size');
    const legacyIndex = openPlain<unknown[], [string, number]>(srv.sluice.services.store, 'spool_meta');
    await srv.sluice.services.store.transaction(() => void legacyIndex.put([collection.id, seqs[1]!], row.slice(0, 4)));
    const lease = spool().lease(100)!;
    assert.deepEqual(
      lease.entries.map((e) => e.seq),
      seqs,
    );
    assert.equal(Buffer.from(lease.bodies).toString(), bodies.join(''), 'the bodies, back to back, nothing else');
    assert.equal(lease.bodies.byteOffset, 0);
    assert.equal(lease.bodies.buffer.byteLength, lease.bodies.byteLength, 'a buffer of its own, transferable as it is');
    for (const [i, e] of lease.entries.entries()) {
      assert.equal(e.body.buffer, lease.bodies.buffer, 'each body is a view into it');
      assert.equal(Buffer.from(e.body).toString(), bodies[i]);
    }
    // Taken away (transferred to a worker), the body as stored is still read back from the spool.
    const taken = lease.bodies.buffer as ArrayBuffer;
    structuredClone(taken, { transfer: [taken] });
    assert.equal(lease.entries[1]!.body.byteLength, 0);
    assert.equal(Buffer.from(spool().bodyOf(seqs[1]!)!).toString(), bodies[1]);
    spool().release(lease);
    // Given back, the same entries are leased again, their bodies read anew.
    const again = spool().lease(100)!;
    assert.deepEqual(
      again.entries.map((e) => Buffer.from(e.body).toString()),
      bodies,
    );
    await spool().complete(again);
  });

  it('index rows of earlier releases (msgpack, with and without the body size) and binary ones are counted on restart and leased alike', async () => {
    const g = await createIngestKey(srv, 'mixedrows');
    const collection = await srv.sluice.services.collections.ensure(
      srv.sluice.services.sources.byId(g.sourceId)!,
      'mixedrows',
    );
    for (let l = spool().lease(1_000_000); l; l = spool().lease(1_000_000)) await spool().complete(l);
    const bodies = ['{"a":1}', '{"b":1}\n{"b":2}', '[{"c":1},{"c":2},{"c":3}]', '{"d":"é"}'];
    const formats = ['object', 'ndjson', 'array', 'ndjson'] as const;
    const counts = [1, 2, 3, 1];
    const seqs: number[] = [];
    for (const [i, b] of bodies.entries()) {
      seqs.push(
        await spool().append({
          collection_id: collection.id,
          project_id: g.projectId,
          received_at: 1_700_000_000_123 + i,
          records: counts[i]!,
          format: formats[i]!,
          body: Buffer.from(b),
        }),
      );
    }
    // Rows 0 and 1 as earlier releases wrote them: msgpack arrays without and with the size.
    const legacyIndex = openPlain<unknown[], [string, number]>(srv.sluice.services.store, 'spool_meta');
    await srv.sluice.services.store.transaction(() => {
      void legacyIndex.put([collection.id, seqs[0]!], [1, g.projectId, 1_700_000_000_123, 'object']);
      void legacyIndex.put(
        [collection.id, seqs[1]!],
        [2, g.projectId, 1_700_000_000_124, 'ndjson', Buffer.byteLength(bodies[1]!)],
      );
    });
    const index = openSpoolIndex(srv.sluice.services.store);
    assert.deepEqual(index.get([collection.id, seqs[0]!]), [1, g.projectId, 1_700_000_000_123, 'object']);
    assert.deepEqual(index.get([collection.id, seqs[2]!]), [
      3,
      g.projectId,
      1_700_000_000_125,
      'array',
      Buffer.byteLength(bodies[2]!),
    ]);
    await srv.restart();
    assert.equal(spool().pendingRecords(g.projectId), 7, 'every row counted after the restart');
    assert.equal(spool().oldestReceivedAt(collection.id), 1_700_000_000_123);
    const lease = spool().lease(100)!;
    assert.deepEqual(
      lease.entries.map((e) => [
        e.seq,
        e.records,
        e.project_id,
        e.received_at,
        e.format,
        Buffer.from(e.body).toString(),
      ]),
      bodies.map((b, i) => [seqs[i], counts[i], g.projectId, 1_700_000_000_123 + i, formats[i], b]),
    );
    await spool().complete(lease);
    assert.equal(spool().pendingRecords(g.projectId), 0);
  });

  it('entries in the first spool layout (msgpack values) are carried over on start, none lost', async () => {
    const g = await createIngestKey(srv, 'legacy');
    const collection = await srv.sluice.services.collections.ensure(
      srv.sluice.services.sources.byId(g.sourceId)!,
      'legacy',
    );
    for (let l = spool().lease(1_000_000); l; l = spool().lease(1_000_000)) await spool().complete(l);
    // What the earlier release wrote: seq → whole entry, and [collection, seq] → [records, project].
    const store = srv.sluice.services.store;
    const legacy = openPlain<SpoolEntry, number>(store, 'spool');
    const legacyIndex = openPlain<[number, string], [string, number]>(store, 'spool_by_collection');
    const seqBase = spool().lastSeq() + 1000;
    const entries = [1, 2].map(
      (i): SpoolEntry => ({
        collection_id: collection.id,
        project_id: g.projectId,
        received_at: 1_700_000_000_000 + i,
        records: 2,
        format: 'ndjson',
        body: Buffer.from(`{"old":${i}}\n{"old":${i}}`),
      }),
    );
    await store.transaction(() => {
      entries.forEach((e, i) => {
        legacy.put(seqBase + i, e);
        legacyIndex.put([e.collection_id, seqBase + i], [e.records, e.project_id]);
      });
    });
    await srv.restart();
    assert.equal(spool().pendingRecords(g.projectId), 4);
    assert.ok(spool().lastSeq() >= seqBase + 1, 'new sequence numbers continue after the carried-over ones');
    const lease = spool().lease(100)!;
    assert.deepEqual(
      lease.entries.map((e) => e.seq),
      [seqBase, seqBase + 1],
    );
    assert.deepEqual(
      lease.entries.map((e) => e.received_at),
      [1_700_000_000_001, 1_700_000_000_002],
    );
    assert.deepEqual(
      lease.entries.flatMap((e) => decodeRecords(e.format, e.body)),
      [{ old: 1 }, { old: 1 }, { old: 2 }, { old: 2 }],
    );
    await spool().complete(lease);
    assert.equal(openPlain(srv.sluice.services.store, 'spool').getKeysCount(), 0, 'the old database is emptied');
  });
});
