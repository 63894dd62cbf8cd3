import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { TestServer } from '../helpers/server.js';
import { decodeRecords } from '../../src/ingest/framing.js';
import { GLOBAL } from '../../src/accounts/repo.js';
import { createIngestKey, ingest, ndjson, type IngestFixture } from './helpers.js';

describe('HTTP ingest', () => {
  let srv: TestServer;
  let f: IngestFixture;
  const q = () => `key=${f.secret}`;
  /** Every record spooled for the project so far, decoded, in sequence order. */
  const spooled = (projectId = f.projectId) =>
    [...srv.sluice.services.spool.scan()]
      .filter((e) => e.project_id === projectId)
      .flatMap((e) => decodeRecords(e.format, e.body));

  before(async () => {
    srv = await TestServer.start({ env: { SLUICE_MAX_INGEST_BYTES: String(64 * 1024), SLUICE_PIPELINE: '0' } });
    f = await createIngestKey(srv);
  });
  after(() => srv.stop());

  it('the ingest key url points at /ingest with the key', () => {
    assert.match(f.url, new RegExp(`/ingest\\?key=${f.secret}$`));
  });

  it('accepts one object, an array of objects and NDJSON, 202 only after the commit', async () => {
    const one = await ingest(srv.url, q(), JSON.stringify({ n: 1, timestamp: '2026-01-01T00:00:00Z' }), {
      'content-type': 'application/json',
    });
    assert.equal(one.status, 202);
    assert.deepEqual(one.body.data, { accepted: 1 });
    assert.equal(one.body.endpoint, 'POST /ingest');
    assert.equal(one.body.error, null);
    const arr = await ingest(srv.url, q(), JSON.stringify([{ n: 2 }, { n: 3, timestamp: 1767225600000 }]));
    assert.deepEqual([arr.status, arr.body.data], [202, { accepted: 2 }]);
    const nd = await ingest(srv.url, q(), `{"n":4}\r\n\n{"n":5}\n   \n{"n":6}`, {
      'content-type': 'application/x-ndjson',
    });
    assert.deepEqual([nd.status, nd.body.data], [202, { accepted: 3 }]);
    // A pretty-printed single object spans lines and is still one record.
    const pretty = await ingest(srv.url, q(), JSON.stringify({ n: 7, nested: { a: [1, 2] } }, null, 2));
    assert.deepEqual([pretty.status, pretty.body.data], [202, { accepted: 1 }]);
    // Durable before the answer: already in the spool when the 202 arrives, raw bytes kept.
    assert.deepEqual(
      spooled().map((r) => r.n),
      [1, 2, 3, 4, 5, 6, 7],
    );
    assert.equal(srv.sluice.services.spool.pendingRecords(f.projectId), 7);
    const entries = [...srv.sluice.services.spool.scan()].filter((e) => e.project_id === f.projectId);
    assert.deepEqual(
      entries.map((e) => e.format),
      ['ndjson', 'array', 'ndjson', 'object'],
    );
    assert.equal(Buffer.from(entries[2]!.body).toString(), `{"n":4}\r\n\n{"n":5}\n   \n{"n":6}`);
    for (let i = 1; i < entries.length; i++) assert.ok(entries[i]!.seq > entries[i - 1]!.seq);
  });

  it('creates the collection on first data; default slug is "default"', async () => {
    const g = await createIngestKey(srv, 'collections');
    const r = await ingest(srv.url, `key=${g.secret}&collection=checkout-events`, '{"x":1}');
    assert.equal(r.status, 202);
    await ingest(srv.url, `key=${g.secret}`, '{"x":2}');
    const list = await srv.get(`/v1/projects/${g.projectId}/collections?source_id=${g.sourceId}`);
    assert.deepEqual(list.body.data.map((c: any) => c.slug).sort(), ['checkout-events', 'default']);
    const entries = [...srv.sluice.services.spool.scan()].filter((e) => e.project_id === g.projectId);
    const ids = new Set(entries.map((e) => e.collection_id));
    assert.equal(ids.size, 2);
    const bad = await ingest(srv.url, `key=${g.secret}&collection=Not%20A%20Slug`, '{"x":3}');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'request_validation_failed');
    assert.equal(bad.body.error.details[0].field, 'query.collection');
  });

  it('accepts gzip and deflate bodies; a decompression bomb is payload_too_large', async () => {
    const body = ndjson([{ z: 1 }, { z: 2 }]);
    const gz = await ingest(srv.url, q(), gzipSync(body), {
      'content-encoding': 'gzip',
      'content-type': 'application/x-ndjson',
    });
    assert.deepEqual([gz.status, gz.body.data], [202, { accepted: 2 }]);
    // 1 MiB of spaces compresses to about 1 KiB but expands past the 64 KiB limit.
    const bomb = gzipSync(Buffer.concat([Buffer.from('{"a":"'), Buffer.alloc(1024 * 1024, 0x61), Buffer.from('"}')]));
    assert.ok(bomb.length < 64 * 1024);
    const big = await ingest(srv.url, q(), bomb, { 'content-encoding': 'gzip' });
    assert.equal(big.status, 413);
    assert.equal(big.body.error.code, 'payload_too_large');
    const broken = await ingest(srv.url, q(), Buffer.from('not gzip at all'), { 'content-encoding': 'gzip' });
    assert.equal(broken.status, 400);
    assert.equal(broken.body.error.code, 'frame_invalid');
    const br = await ingest(srv.url, q(), '{"a":1}', { 'content-encoding': 'br' });
    assert.equal(br.status, 415);
  });

  it('refuses every bad request with its reason, and spools nothing of it', async () => {
    const before = srv.sluice.services.spool.pendingRecords(f.projectId);
    const cases: [string, string | Uint8Array | undefined, Record<string, string>, number, string, unknown?][] = [
      ['', '{"a":1}', {}, 401, 'auth_missing_credentials'],
      ['key=pik_unknown', '{"a":1}', {}, 401, 'auth_invalid_credentials'],
      [q(), undefined, {}, 400, 'empty_payload'],
      [q(), ' \n \n', {}, 400, 'empty_payload'],
      [q(), '[]', {}, 400, 'empty_payload'],
      [q(), '{"a":1}\n{"b":', {}, 400, 'frame_invalid', { line: 2 }],
      [q(), '{"a":1}\n{"b":2}\n"text"', {}, 400, 'frame_invalid', { line: 3 }],
      [q(), '[{"a":1},{"b":2},null]', {}, 400, 'frame_invalid', { index: 2 }],
      [q(), '[{"a":1},[1]]', {}, 400, 'frame_invalid', { index: 1 }],
      [q(), '{"a":1,"timestamp":"yesterday"}', {}, 400, 'frame_invalid', { line: 1 }],
      [q(), '{"a":1,"timestamp":true}', {}, 400, 'frame_invalid', { line: 1 }],
      [q(), '{"a":1,"timestamp":"March 7"}', {}, 400, 'frame_invalid', { line: 1 }],
      [q(), '{"a":1}\n{"a":2,"timestamp":1e20}', {}, 400, 'frame_invalid', { line: 2 }],
      [
        q(),
        Buffer.concat([Buffer.from('{"a":1}\n\n{"s":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
        {},
        400,
        'frame_invalid',
        { line: 3 },
      ],
      [
        q(),
        Buffer.concat([Buffer.from('[{"a":1},{"s":"'), Buffer.from([0xc3]), Buffer.from('"}]')]),
        {},
        400,
        'frame_invalid',
        { index: 1 },
      ],
      [q(), '[{"a":1},{"b":},{"c":3}]', {}, 400, 'frame_invalid', { index: 1 }],
      [q(), '42', {}, 400, 'frame_invalid', { line: 1 }],
      [q(), 'x'.repeat(65 * 1024), {}, 413, 'payload_too_large'],
      [`${q()}&extra=1`, '{"a":1}', {}, 400, 'request_validation_failed'],
      [q(), '{"a":1}', { 'idempotency-key': 'k'.repeat(256) }, 400, 'request_validation_failed'],
      [q(), '{"a":1}', { 'idempotency-key': 'has space' }, 400, 'request_validation_failed'],
    ];
    for (const [query, body, headers, status, code, detail] of cases) {
      const r = await ingest(srv.url, query, body, headers);
      assert.equal(r.status, status, `${code}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, code);
      assert.equal(r.body.data, null);
      assert.equal(r.headers.get('access-control-allow-origin'), '*');
      if (detail)
        for (const [k, v] of Object.entries(detail as Record<string, unknown>))
          assert.equal(r.body.error.details[k], v, `${code} detail ${k}`);
    }
    assert.equal(
      srv.sluice.services.spool.pendingRecords(f.projectId),
      before,
      'all or nothing: no record of a refused request is spooled',
    );
  });

  it('refuses a revoked (deleted) key, a deleted source and an inactive team', async () => {
    const g = await createIngestKey(srv, 'lifecycle');
    assert.equal((await ingest(srv.url, `key=${g.secret}`, '{"a":1}')).status, 202);
    // Disabled / revoked statuses are refused like unknown keys.
    const rec = srv.sluice.services.ingestKeys.byId(g.keyId)!;
    await srv.sluice.services.ingestKeys.table.put(rec.source_id, { ...rec, status: 'disabled' });
    const disabled = await ingest(srv.url, `key=${g.secret}`, '{"a":1}');
    assert.deepEqual([disabled.status, disabled.body.error.code], [401, 'auth_invalid_credentials']);
    await srv.sluice.services.ingestKeys.table.put(rec.source_id, { ...rec, status: 'active' });
    assert.equal((await ingest(srv.url, `key=${g.secret}`, '{"a":1}')).status, 202);

    const del = await srv.delete(`/v1/projects/${g.projectId}/sources/${g.sourceId}`);
    assert.equal(del.status, 200);
    const gone = await ingest(srv.url, `key=${g.secret}`, '{"a":1}');
    assert.deepEqual([gone.status, gone.body.error.code], [410, 'source_deleted']);

    const h = await createIngestKey(srv, 'team');
    const teamId = srv.sluice.services.projects.byId(h.projectId)!.team_id;
    const team = srv.sluice.services.accounts.getTeam(teamId)!;
    await srv.sluice.services.accounts.teams.put(GLOBAL, { ...team, status: 'delinquent' });
    try {
      const stopped = await ingest(srv.url, `key=${h.secret}`, '{"a":1}');
      assert.deepEqual([stopped.status, stopped.body.error.code], [403, 'team_not_active']);
    } finally {
      await srv.sluice.services.accounts.teams.put(GLOBAL, team);
    }
    const ikDelete = await srv.delete(`/v1/projects/${h.projectId}/sources/${h.sourceId}/ingest_keys/${h.keyId}`);
    assert.equal(ikDelete.status, 200);
    const deleted = await ingest(srv.url, `key=${h.secret}`, '{"a":1}');
    assert.deepEqual([deleted.status, deleted.body.error.code], [401, 'auth_invalid_credentials']);
  });

  it('under concurrent ingest, every request sent after a key deletion is answered is refused', async () => {
    const g = await createIngestKey(srv, 'hot delete');
    let stop = false;
    let accepted = 0;
    // Keep the key's verification warm (requests between two commits share one check).
    const streams = Array.from({ length: 8 }, async () => {
      while (!stop) {
        const r = await ingest(srv.url, `key=${g.secret}`, '{"a":1}');
        if (r.status === 202) accepted++;
      }
    });
    while (accepted < 50) await new Promise((r) => setTimeout(r, 5));
    const del = await srv.delete(`/v1/projects/${g.projectId}/sources/${g.sourceId}/ingest_keys/${g.keyId}`);
    assert.equal(del.status, 200);
    const after = await Promise.all(Array.from({ length: 16 }, () => ingest(srv.url, `key=${g.secret}`, '{"a":1}')));
    stop = true;
    await Promise.all(streams);
    assert.deepEqual(
      after.map((r) => [r.status, r.body.error?.code]),
      after.map(() => [401, 'auth_invalid_credentials']),
    );
  });

  it('answers the CORS preflight and other methods with 405', async () => {
    const pre = await fetch(`${srv.url}/ingest?key=${f.secret}`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://shop.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), '*');
    assert.match(pre.headers.get('access-control-allow-methods')!, /POST/);
    assert.match(pre.headers.get('access-control-allow-headers')!, /content-type/);
    assert.match(pre.headers.get('access-control-allow-headers')!, /idempotency-key/);
    const get = await fetch(`${srv.url}/ingest?key=${f.secret}`);
    assert.equal(get.status, 405);
    assert.equal(((await get.json()) as any).error.code, 'method_not_allowed');
  });

  it('an Idempotency-Key retry answers the first result without spooling twice', async () => {
    const before = srv.sluice.services.spool.pendingRecords(f.projectId);
    const headers = { 'idempotency-key': 'order-42-attempt' };
    const first = await ingest(srv.url, q(), ndjson([{ o: 1 }, { o: 2 }]), headers);
    assert.deepEqual([first.status, first.body.data], [202, { accepted: 2 }]);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const retry = await ingest(srv.url, q(), ndjson([{ o: 1 }, { o: 2 }]), headers);
    assert.deepEqual([retry.status, retry.body.data], [202, { accepted: 2 }]);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    // Concurrent duplicates coalesce into one spool entry.
    const burst = await Promise.all(
      Array.from({ length: 8 }, () => ingest(srv.url, q(), '{"burst":1}', { 'idempotency-key': 'burst-1' })),
    );
    assert.ok(burst.every((r) => r.status === 202 && r.body.data.accepted === 1));
    assert.equal(srv.sluice.services.spool.pendingRecords(f.projectId), before + 3);
    // The same key from another ingest key is a different request.
    const g = await createIngestKey(srv, 'other key');
    const other = await ingest(srv.url, `key=${g.secret}`, '{"o":1}', headers);
    assert.equal(other.headers.get('idempotent-replayed'), null);
    // Remembered across a restart (persisted with the spool entry).
    await srv.restart();
    const afterRestart = await ingest(srv.url, q(), ndjson([{ o: 1 }, { o: 2 }]), headers);
    assert.equal(afterRestart.headers.get('idempotent-replayed'), 'true');
    assert.equal(srv.sluice.services.spool.pendingRecords(f.projectId), before + 3);
  });

  it('sets last_activity_at on the project and last_used_at on the key', async () => {
    const g = await createIngestKey(srv, 'activity');
    const keyPath = `/v1/projects/${g.projectId}/sources/${g.sourceId}/ingest_keys/${g.keyId}`;
    assert.equal((await srv.get(`/v1/projects/${g.projectId}`)).body.data.last_activity_at, null);
    assert.equal((await srv.get(keyPath)).body.data.last_used_at, null);
    const t0 = Date.now();
    await ingest(srv.url, `key=${g.secret}`, '{"a":1}');
    const project = (await srv.get(`/v1/projects/${g.projectId}`)).body.data;
    const key = (await srv.get(keyPath)).body.data;
    assert.ok(Date.parse(project.last_activity_at) >= t0 - 1000);
    assert.ok(Date.parse(key.last_used_at) >= t0 - 1000);
    // A refused request is not activity.
    const h = await createIngestKey(srv, 'no activity');
    await ingest(srv.url, `key=${h.secret}`, '[]');
    assert.equal((await srv.get(`/v1/projects/${h.projectId}`)).body.data.last_activity_at, null);
  });

  it('keeps the spool across a restart, with sequence numbers continuing', async () => {
    const spool = () => srv.sluice.services.spool;
    const before = [...spool().scan()];
    await srv.restart();
    const after = [...spool().scan()];
    assert.deepEqual(
      after.map((e) => e.seq),
      before.map((e) => e.seq),
    );
    assert.equal(
      spool().pendingRecords(f.projectId),
      before.filter((e) => e.project_id === f.projectId).reduce((n, e) => n + e.records, 0),
    );
    const last = spool().lastSeq();
    assert.equal((await ingest(srv.url, q(), '{"after":"restart"}')).status, 202);
    assert.equal(spool().lastSeq(), last + 1);
  });
});
