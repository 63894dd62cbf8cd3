import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { decodeRecords } from '../../src/ingest/framing.js';
import { GLOBAL } from '../../src/accounts/repo.js';
import type { SinkOutcome } from '../../src/ingest/record-sink-types.js';
import { createIngestKey, ingest, type IngestFixture } from './helpers.js';

const PRODUCER = 'pull:pul_test';

function refused(o: SinkOutcome, status: number, code: string): Extract<SinkOutcome, { ok: false }> {
  assert.equal(o.ok, false, `expected a refusal, got ${JSON.stringify(o)}`);
  if (o.ok) throw new Error('unreachable');
  assert.deepEqual([o.status, o.code], [status, code], o.message);
  assert.ok(o.message.length > 0);
  return o;
}

describe('record sink (pipeline off)', () => {
  let srv: TestServer;
  let f: IngestFixture;
  const sink = () => srv.sluice.services.sink;
  const spooled = (projectId = f.projectId) =>
    [...srv.sluice.services.spool.scan()]
      .filter((e) => e.project_id === projectId)
      .flatMap((e) => decodeRecords(e.format, e.body));
  const minute = (projectId: string) =>
    srv.sluice.services.telemetry.minute(projectId, Math.floor(Date.now() / 60_000) * 60_000);

  before(async () => {
    srv = await TestServer.start({ env: { SLUICE_MAX_INGEST_BYTES: String(64 * 1024), SLUICE_PIPELINE: '0' } });
    f = await createIngestKey(srv, 'sink');
  });
  after(() => srv.stop());

  it('writes records into a collection it creates by slug, with telemetry and project activity, no key', async () => {
    const records = [
      { n: 1, timestamp: '2026-01-01T00:00:00Z' },
      { n: 2, nested: { a: [1, 'x'] } },
      { n: 3, text: 'line\nbreak' },
    ];
    const out = await sink().write(
      { projectId: f.projectId, sourceId: f.sourceId, collectionSlug: 'pulled' },
      records,
      { producer: PRODUCER },
    );
    assert.deepEqual(out, { ok: true, accepted: 3, replayed: false });
    assert.deepEqual(spooled(), records);
    const listed = await srv.get(`/v1/projects/${f.projectId}/collections`);
    assert.equal(listed.status, 200);
    const c = listed.body.data.find((x: any) => x.slug === 'pulled');
    assert.ok(c, 'the collection was created on first data');
    assert.equal(c.source_id, f.sourceId);
    const entries = [...srv.sluice.services.spool.scan()].filter((e) => e.project_id === f.projectId);
    assert.deepEqual([...new Set(entries.map((e) => e.collection_id))], [c.id]);
    assert.equal(minute(f.projectId)?.accepted_records, 3);
    const project = await srv.get(`/v1/projects/${f.projectId}`);
    assert.ok(project.body.data.last_activity_at, 'last_activity_at set');
    // No ingest key was used.
    assert.equal(srv.sluice.services.activity.lastActivityAt(f.keyId), null);
    // The same collection again: no second one.
    assert.equal(
      (
        await sink().write({ projectId: f.projectId, sourceId: f.sourceId, collectionSlug: 'pulled' }, [{ n: 4 }], {
          producer: PRODUCER,
        })
      ).ok,
      true,
    );
    const again = await srv.get(`/v1/projects/${f.projectId}/collections`);
    assert.equal(again.body.data.filter((x: any) => x.slug === 'pulled').length, 1);
  });

  it('refuses what the front refuses, as values, spooling nothing', async () => {
    const g = await createIngestKey(srv, 'sink validation');
    const t = { projectId: g.projectId, sourceId: g.sourceId, collectionSlug: 'default' };
    const w = (records: unknown[], opts: { producer: string; idempotencyKey?: string } = { producer: PRODUCER }) =>
      sink().write(t, records as Array<Record<string, unknown>>, opts);

    const notObject = refused(await w([{ a: 1 }, 5]), 400, 'frame_invalid');
    assert.deepEqual((notObject.details as any).index, 1);
    assert.equal((refused(await w([null]), 400, 'frame_invalid').details as any).index, 0);
    assert.equal((refused(await w([{ a: 1 }, { b: 2 }, [1, 2]]), 400, 'frame_invalid').details as any).index, 2);
    assert.equal((refused(await w([undefined]), 400, 'frame_invalid').details as any).index, 0);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    refused(await w([cyclic]), 400, 'frame_invalid');
    refused(await w([{ big: 1n }]), 400, 'frame_invalid');
    const badTime = refused(await w([{ a: 1 }, { timestamp: 'March 7' }]), 400, 'frame_invalid');
    assert.equal((badTime.details as any).index, 1, "the parser's line is reported as the array index");
    assert.match(badTime.message, /^Record at index 1 /);
    const nested: unknown = JSON.parse('['.repeat(1001) + ']'.repeat(1001));
    const deep = refused(await w([{ d: nested }]), 400, 'frame_invalid');
    assert.equal((deep.details as any).index, 0);
    refused(await w([]), 400, 'empty_payload');
    const tooLarge = refused(await w([{ blob: 'x'.repeat(70 * 1024) }]), 413, 'payload_too_large');
    assert.deepEqual(tooLarge.details, { limit_bytes: 64 * 1024 });
    refused(await w(Array.from({ length: 2000 }, (_, i) => ({ i, pad: 'y'.repeat(40) }))), 413, 'payload_too_large');
    refused(
      await sink().write({ ...t, collectionSlug: 'Not A Slug!' }, [{ a: 1 }], { producer: PRODUCER }),
      400,
      'request_validation_failed',
    );
    refused(await w([{ a: 1 }], { producer: PRODUCER, idempotencyKey: '' }), 400, 'request_validation_failed');
    assert.deepEqual(spooled(g.projectId), [], 'nothing of a refused write is spooled');
    const counts = minute(g.projectId)?.error_counts ?? {};
    assert.ok(
      Object.values(counts).reduce((a, b) => a + (b ?? 0), 0) >= 10,
      `refusals counted: ${JSON.stringify(counts)}`,
    );
  });

  it('replays a repeated idempotency key without spooling again; keys are scoped to the producer and source', async () => {
    const g = await createIngestKey(srv, 'sink idempotency');
    const t = { projectId: g.projectId, sourceId: g.sourceId, collectionSlug: 'default' };
    const first = await sink().write(t, [{ a: 1 }, { a: 2 }], { producer: PRODUCER, idempotencyKey: 'run-1' });
    assert.deepEqual(first, { ok: true, accepted: 2, replayed: false });
    const repeat = await sink().write(t, [{ a: 1 }, { a: 2 }], { producer: PRODUCER, idempotencyKey: 'run-1' });
    assert.deepEqual(repeat, { ok: true, accepted: 2, replayed: true });
    assert.equal(spooled(g.projectId).length, 2);
    // Different records under the same key: refused, nothing stored.
    refused(
      await sink().write(t, [{ a: 3 }], { producer: PRODUCER, idempotencyKey: 'run-1' }),
      409,
      'idempotency_key_reused',
    );
    // Another producer's key of the same name is its own.
    assert.deepEqual(
      await sink().write(t, [{ a: 1 }, { a: 2 }], { producer: 'check:chk_other', idempotencyKey: 'run-1' }),
      { ok: true, accepted: 2, replayed: false },
    );
    // And the HTTP front's Idempotency-Key namespace (per ingest key) does not collide with the sink's.
    const http = await ingest(srv.url, `key=${g.secret}`, '[{"a":1},{"a":2}]', { 'idempotency-key': 'run-1' });
    assert.equal(http.status, 202);
    assert.equal(spooled(g.projectId).length, 6);
  });

  it('refuses a deleted source, a deleted or unknown project and an inactive team', async () => {
    const g = await createIngestKey(srv, 'sink lifecycle');
    const t = { projectId: g.projectId, sourceId: g.sourceId, collectionSlug: 'default' };
    assert.equal((await sink().write(t, [{ a: 1 }], { producer: PRODUCER })).ok, true);

    const teamId = srv.sluice.services.projects.byId(g.projectId)!.team_id;
    const team = srv.sluice.services.accounts.getTeam(teamId)!;
    await srv.sluice.services.accounts.teams.put(GLOBAL, { ...team, status: 'delinquent' });
    try {
      refused(await sink().write(t, [{ a: 1 }], { producer: PRODUCER }), 403, 'team_not_active');
    } finally {
      await srv.sluice.services.accounts.teams.put(GLOBAL, team);
    }

    assert.equal((await srv.delete(`/v1/projects/${g.projectId}/sources/${g.sourceId}`)).status, 200);
    refused(await sink().write(t, [{ a: 1 }], { producer: PRODUCER }), 410, 'source_deleted');
    refused(
      await sink().write({ ...t, sourceId: 'src_doesnotexist0000000' }, [{ a: 1 }], { producer: PRODUCER }),
      410,
      'source_deleted',
    );
    refused(
      await sink().write({ ...t, projectId: 'prj_doesnotexist0000000' }, [{ a: 1 }], { producer: PRODUCER }),
      410,
      'source_deleted',
    );

    const h = await createIngestKey(srv, 'sink project delete');
    assert.equal((await srv.delete(`/v1/projects/${h.projectId}`)).status, 200);
    refused(
      await sink().write({ projectId: h.projectId, sourceId: h.sourceId, collectionSlug: 'default' }, [{ a: 1 }], {
        producer: PRODUCER,
      }),
      410,
      'source_deleted',
    );
    // A source of another project is not reachable through this project.
    refused(
      await sink().write({ projectId: f.projectId, sourceId: h.sourceId, collectionSlug: 'default' }, [{ a: 1 }], {
        producer: PRODUCER,
      }),
      410,
      'source_deleted',
    );
    assert.equal(spooled(h.projectId).length, 0);
  });
});

describe('record sink backpressure and shutdown', () => {
  it('refuses past the queue depth as a value with retryAfterSeconds, and once the server stops', async () => {
    const srv = await TestServer.start({ env: { SLUICE_MAX_PENDING_RECORDS: '5', SLUICE_PIPELINE: '0' } });
    let stopped = false;
    try {
      const f = await createIngestKey(srv, 'sink backpressure');
      const t = { projectId: f.projectId, sourceId: f.sourceId, collectionSlug: 'default' };
      const sink = srv.sluice.services.sink;
      assert.deepEqual(await sink.write(t, [{ a: 1 }, { a: 2 }, { a: 3 }], { producer: PRODUCER }), {
        ok: true,
        accepted: 3,
        replayed: false,
      });
      const full = refused(
        await sink.write(t, [{ a: 4 }, { a: 5 }, { a: 6 }], { producer: PRODUCER }),
        503,
        'spool_full_ingest_queue',
      );
      assert.equal(full.retryAfterSeconds, 2);
      assert.equal(srv.sluice.services.spool.pendingRecords(f.projectId), 3, 'nothing of the refused write is spooled');
      assert.deepEqual(await sink.write(t, [{ a: 4 }, { a: 5 }], { producer: PRODUCER }), {
        ok: true,
        accepted: 2,
        replayed: false,
      });
      await srv.stop();
      stopped = true;
      refused(await sink.write(t, [{ a: 6 }], { producer: PRODUCER }), 503, 'service_unavailable');
    } finally {
      if (!stopped) await srv.stop();
    }
  });
});

describe('record sink with the pipeline', () => {
  it('records written through the sink reach the collection files', async () => {
    const srv = await TestServer.start();
    try {
      const f = await createIngestKey(srv, 'sink pipeline');
      const records = Array.from({ length: 25 }, (_, i) => ({
        i,
        kind: 'pulled',
        timestamp: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
      }));
      assert.deepEqual(
        await srv.sluice.services.sink.write(
          { projectId: f.projectId, sourceId: f.sourceId, collectionSlug: 'metrics' },
          records,
          { producer: PRODUCER },
        ),
        { ok: true, accepted: 25, replayed: false },
      );
      const c = srv.sluice.services.collections.bySlug(f.sourceId, 'metrics');
      assert.ok(c);
      let rows = 0;
      for (let i = 0; i < 200 && rows < 25; i++) {
        rows = srv.sluice.services.schema.manifests(c.id).reduce((a, m) => a + m.rows, 0);
        if (rows < 25) await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(rows, 25, 'every record is in a collection file');
    } finally {
      await srv.stop();
    }
  });
});
