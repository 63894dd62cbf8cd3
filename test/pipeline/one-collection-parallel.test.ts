import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import pino from 'pino';
import { TestServer } from '../helpers/server.js';
import { filesUnder } from '../helpers/files.js';
import { childApi, drainAndStop, startChild, type ChildServer } from '../helpers/child.js';
import { createIngestKey, ingest, type IngestFixture } from '../ingest/helpers.js';
import { systemClock } from '../../src/clock.js';
import { Spool } from '../../src/spool/spool.js';
import { POISON_ATTEMPTS } from '../../src/pipeline/runner.js';
import { SchemaService } from '../../src/schema/schema-service.js';
import { Store } from '../../src/store/db.js';

/**
 * Every worker on one collection (docs/architecture.md, "Ordering"): many small batches of ONE
 * collection run on the workers at once, and what they commit is what a sequential run commits —
 * each record once, the same schema versions — through a crash and past a poison entry.
 */

/** Records per ingest request, and per batch (SLUICE_LEASE_MAX_RECORDS): two requests a batch. */
const PER_REQUEST = 100;
const LEASE = '200';

/** Record `i` of the stream: several shapes, some subsets of others, one appearing late. */
function record(i: number): Record<string, unknown> {
  const id = `r${i}`;
  if (i >= 6_000 && i % 7 === 0) return { id, late: [i, i + 1], a: i };
  switch (i % 5) {
    case 0:
      return { id, a: i };
    case 1:
      return { id, a: i, b: 'x' };
    case 2:
      return { id, b: 'y', c: i % 2 === 0 };
    case 3:
      return { id, a: i, nested: { d: i } };
    default:
      return { id, a: null, e: 'z' };
  }
}

function body(request: number): string {
  return Array.from({ length: PER_REQUEST }, (_, k) => JSON.stringify(record(request * PER_REQUEST + k))).join('\n');
}

/** How many times each record id is in the collection's committed files; asserts no file is an orphan. */
async function countRows(schema: SchemaService, dir: string, collectionId: string): Promise<Map<string, number>> {
  const manifests = schema.manifests(collectionId);
  const known = new Set(manifests.map((m) => m.id));
  for (const f of filesUnder(dir))
    assert.ok(known.has(relative(dir, f)), `file ${relative(dir, f)} is not in a manifest`);
  const reader = await schema.fileReader();
  const rows = await reader.docs({ paths: manifests.map((m) => join(dir, m.id)), limit: 10_000_000, sort: 'asc' });
  const seen = new Map<string, number>();
  for (const r of rows) {
    const id = (JSON.parse(r.doc) as { id: string }).id;
    seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  return seen;
}

/** The collection's live versions as committed, in a form two runs can be compared by. */
function versionsOf(schema: SchemaService, collectionId: string) {
  return schema.db.versions
    .list(collectionId)
    .filter((v) => v.merged_into === null)
    .sort((x, y) => x.version - y.version)
    .map((v) => ({
      version: v.version,
      signature: v.signature,
      fields: v.fields,
      state: v.state,
      row_count: v.row_count,
      shape_count: v.shape_count,
    }));
}

/** The collection's shapes as committed: signature, rows, and the number of the version each belongs to. */
function shapesOf(schema: SchemaService, collectionId: string) {
  const numbers = new Map(schema.db.versions.list(collectionId).map((v) => [v.id, v.version]));
  return schema.db.shapes
    .list(collectionId)
    .map((s) => ({
      signature: s.signature,
      rows: s.rows,
      version: s.version_id === null ? null : numbers.get(s.version_id),
    }))
    .sort((x, y) => x.signature.localeCompare(y.signature));
}

interface Run {
  versions: ReturnType<typeof versionsOf>;
  shapes: ReturnType<typeof shapesOf>;
  /** Samples in which two or more batches of the collection were on workers at once. */
  concurrentSamples: number;
  maxLeases: number;
}

/**
 * Send `requests` requests into one collection of a fresh server: the first alone (it brings every
 * shape but the late one, so versions are numbered the same in every run), then four at a time.
 */
async function runStream(workers: number, requests: number): Promise<Run> {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: String(workers), SLUICE_LEASE_MAX_RECORDS: LEASE } });
  try {
    const f = await createIngestKey(srv, 'parallel');
    const created = await srv.post(`/v1/projects/${f.projectId}/collections`, {
      name: 'Events',
      source_id: f.sourceId,
      slug: 'events',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const collectionId = created.body.data.id as string;
    const { spool, schema } = srv.sluice.services;
    const pipeline = srv.sluice.services.pipeline!;
    // Watch, as often as the event loop allows, how many batches of the collection are out.
    let concurrentSamples = 0;
    let maxLeases = 0;
    const watch = setInterval(() => {
      const leases = spool.leasesOf(collectionId);
      maxLeases = Math.max(maxLeases, leases);
      // Only this collection receives records: every batch on a worker is one of its.
      if (leases >= 2 && pipeline.running() >= 2) concurrentSamples++;
    }, 1);
    try {
      const send = async (r: number) => {
        const res = await ingest(srv.url, `key=${f.secret}&collection=events`, body(r), {
          'content-type': 'application/x-ndjson',
        });
        assert.equal(res.status, 202, JSON.stringify(res.body));
      };
      await send(0);
      let next = 1;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < requests) await send(next++);
        }),
      );
      assert.ok(await pipeline.idle(60_000), 'the pipeline drains the spool');
    } finally {
      clearInterval(watch);
    }
    const c = srv.sluice.services.collections.byId(collectionId)!;
    const seen = await countRows(schema, schema.filesDir(c), collectionId);
    for (const [id, n] of seen) assert.equal(n, 1, `record ${id} is in the files ${n} times`);
    assert.equal(seen.size, requests * PER_REQUEST, 'every record is in the files');
    assert.deepEqual(schema.unprocessable(collectionId), []);
    return {
      versions: versionsOf(schema, collectionId),
      shapes: shapesOf(schema, collectionId),
      concurrentSamples,
      maxLeases,
    };
  } finally {
    await srv.stop();
  }
}

describe('one collection, batches in parallel', () => {
  it('batches of one collection run on both workers at once; each record lands once; versions equal a sequential run', async (t) => {
    const requests = 100;
    const parallel = await runStream(2, requests);
    t.diagnostic(
      `2 workers: ${parallel.concurrentSamples} samples with two batches of the collection on workers, at most ${parallel.maxLeases} leases`,
    );
    assert.ok(parallel.concurrentSamples > 0, 'two batches of the one collection were on the workers at the same time');
    assert.ok(parallel.maxLeases >= 2);
    const sequential = await runStream(1, requests);
    assert.equal(sequential.maxLeases, 1, 'one worker: one batch at a time');
    assert.deepEqual(parallel.versions, sequential.versions, 'the same versions, row counts and states as one worker');
    assert.deepEqual(parallel.shapes, sequential.shapes, 'the same shapes and shape rows as one worker');
    assert.equal(
      parallel.versions.reduce((n, v) => n + v.row_count, 0),
      requests * PER_REQUEST,
      'row counts add up to the records',
    );
  });

  describe('SIGKILL with several batches of the collection in flight', () => {
    const KEY = 'slk_one_collection_crash_key_000000000000000';
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-lane-crash-'));
    let child: ChildServer | null = null;
    after(() => {
      child?.proc.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('restart: every acknowledged record is in the collection files exactly once', async (t) => {
      const env = {
        SLUICE_DATA_DIR: dataDir,
        SLUICE_BOOTSTRAP_KEY: KEY,
        SLUICE_WORKERS: '2',
        SLUICE_LEASE_MAX_RECORDS: LEASE,
      };
      const api = (method: string, path: string, b?: unknown) => childApi(child!.url, KEY, method, path, b);
      child = await startChild(env);
      const base = child.url;
      const project = await api('POST', '/v1/projects', { name: 'crash' });
      const source = await api('POST', `/v1/projects/${project.id}/sources`, { name: 'load' });
      const key = await api('POST', `/v1/projects/${project.id}/sources/${source.id}/ingest_keys`, {});

      const acked = new Set<number>();
      let next = 0;
      let stop = false;
      const sender = async () => {
        while (!stop) {
          const r = next++;
          try {
            const res = await fetch(`${base}/ingest?key=${key.key}&collection=events`, {
              method: 'POST',
              body: body(r),
              headers: { 'content-type': 'application/x-ndjson' },
            });
            if (res.status === 202) acked.add(r);
            await res.arrayBuffer();
          } catch {
            return; // the server is gone
          }
        }
      };
      const load = Promise.all(Array.from({ length: 4 }, sender));
      // Kill at a moment when more records are being processed than one batch holds: several
      // batches of the one collection are out (each is two whole requests, 200 records).
      const deadline = Date.now() + 30_000;
      let processing = 0;
      for (;;) {
        const live = await api('GET', `/v1/projects/${project.id}/pipeline/live`);
        processing = live.processing_records;
        if ((processing > Number(LEASE) && acked.size >= 100) || Date.now() > deadline) break;
      }
      child.proc.kill('SIGKILL');
      await child.exited;
      stop = true;
      await load;
      t.diagnostic(`killed with ${processing} records being processed; ${acked.size} requests acknowledged`);
      assert.ok(processing > Number(LEASE), 'several batches of the collection were in flight at the kill');

      child = await startChild(env);
      await drainAndStop(child, () => api('GET', `/v1/projects/${project.id}/pipeline/live`));
      child = null;

      const store = new Store(dataDir);
      const schema = new SchemaService(store, systemClock, pino({ level: 'silent' }), dataDir);
      try {
        assert.equal(new Spool(store).pendingRecords(), 0);
        const [collectionId] = readdirSync(join(dataDir, 'files', project.id));
        const seen = await countRows(schema, join(dataDir, 'files', project.id, collectionId!), collectionId!);
        for (const [id, n] of seen) assert.equal(n, 1, `record ${id} is in the files ${n} times`);
        for (const r of acked)
          for (let k = 0; k < PER_REQUEST; k++)
            assert.ok(
              seen.has(`r${r * PER_REQUEST + k}`),
              `acknowledged record r${r * PER_REQUEST + k} is in the files`,
            );
        const counted = versionsOf(schema, collectionId!).reduce((n, v) => n + v.row_count, 0);
        assert.equal(counted, seen.size, 'version row counts add up to the rows in the files');
        t.diagnostic(`${seen.size} records, each exactly once`);
      } finally {
        schema.close();
        await store.close();
      }
    });
  });

  it('a poison entry in the middle of the stream is set aside; the batches behind it flow', async () => {
    const srv = await TestServer.start({ env: { SLUICE_WORKERS: '2', SLUICE_LEASE_MAX_RECORDS: LEASE } });
    try {
      const f: IngestFixture = await createIngestKey(srv, 'poison stream');
      const created = await srv.post(`/v1/projects/${f.projectId}/collections`, {
        name: 'Events',
        source_id: f.sourceId,
        slug: 'events',
      });
      const collectionId = created.body.data.id as string;
      const { spool, schema } = srv.sluice.services;
      const c = srv.sluice.services.collections.byId(collectionId)!;
      // A real, deterministic failure tied to one entry: its record that is not an object goes to
      // the `_overflow` file, and a plain file stands where that directory should be.
      mkdirSync(schema.filesDir(c), { recursive: true });
      writeFileSync(join(schema.filesDir(c), '_overflow'), 'in the way');
      const requests = 60;
      let poisonSeq = 0;
      for (let r = 0; r < requests; r++) {
        if (r === requests / 2) {
          poisonSeq = await spool.append({
            collection_id: collectionId,
            project_id: f.projectId,
            received_at: Date.now(),
            records: 2,
            format: 'ndjson',
            body: new TextEncoder().encode('{"id":"poison","a":1}\n7'),
          });
        }
        const res = await ingest(srv.url, `key=${f.secret}&collection=events`, body(r), {
          'content-type': 'application/x-ndjson',
        });
        assert.equal(res.status, 202);
      }
      assert.ok(await srv.sluice.services.pipeline!.idle(60_000), 'the stream drains past the poison entry');
      const aside = schema.unprocessable(collectionId);
      assert.deepEqual(
        aside.map((e) => [e.seq, e.records, e.attempts]),
        [[poisonSeq, 2, POISON_ATTEMPTS]],
      );
      rmSync(join(schema.filesDir(c), '_overflow'));
      const seen = await countRows(schema, schema.filesDir(c), collectionId);
      assert.equal(seen.has('poison'), false, 'nothing of the set-aside entry is in the files');
      for (const [id, n] of seen) assert.equal(n, 1, `record ${id} is in the files ${n} times`);
      assert.equal(seen.size, requests * PER_REQUEST, 'every other record is in the files');
      assert.equal(
        versionsOf(schema, collectionId).reduce((n, v) => n + v.row_count, 0),
        requests * PER_REQUEST,
        'nothing of the failed attempts is counted',
      );
    } finally {
      await srv.stop();
    }
  });
});
