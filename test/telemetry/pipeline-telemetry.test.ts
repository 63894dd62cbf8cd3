import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ManualClock } from '../../src/clock.js';
import { PIPELINE_ERROR_REASONS } from '../../src/telemetry/pipeline-telemetry.js';
import { localServerId } from '../../src/ingest/local-server.js';
import { createIngestKey, ingest, ndjson, type IngestFixture } from '../ingest/helpers.js';

const MIN = 60_000;

describe('pipeline telemetry endpoints', () => {
  let srv: TestServer;
  let f: IngestFixture;
  // 10 s into a minute, so the test controls which minute each event lands in.
  const T0 = Math.floor(Date.parse('2026-03-01T10:00:00Z') / MIN) * MIN + 10_000;
  const clock = new ManualClock(T0);

  before(async () => {
    srv = await TestServer.start({ clock, env: { SLUICE_PIPELINE: '0' } });
    f = await createIngestKey(srv);
  });
  after(() => srv.stop());

  it('live: the queue now and the totals of the last completed minute, by reason', async () => {
    const live0 = await srv.get(`/v1/projects/${f.projectId}/pipeline/live`);
    assert.equal(live0.status, 200);
    // The node started within the current minute and has nothing for the previous one: unknown.
    assert.equal(live0.body.data.throughput_records, null);
    assert.equal(live0.body.data.pipeline_error_counts, null);

    const q = `key=${f.secret}`;
    await ingest(srv.url, q, ndjson([{ a: 1 }, { a: 2 }, { a: 3 }]));
    await ingest(srv.url, q, '[]');
    await ingest(srv.url, q, '{"a":');
    await ingest(srv.url, q, '{"a":1}\n[2]');
    await ingest(srv.url, `key=${f.secret}&bogus=1`, '{}');
    const lease = srv.sluice.services.spool.lease(2)!;
    await srv.sluice.services.spool.complete(lease);
    await srv.sluice.services.telemetry.tick();
    clock.advance(MIN);

    const live = (await srv.get(`/v1/projects/${f.projectId}/pipeline/live`)).body.data;
    assert.equal(live.object, 'project_pipeline_live');
    assert.equal(live.state, 'fresh');
    assert.equal(live.pending_records, 0, 'the one entry (3 records) was drained');
    assert.equal(live.processing_records, 0);
    assert.equal(live.pending_is_estimated, false);
    assert.equal(live.contributing_servers, 1);
    assert.equal(live.fresh_servers, 1);
    assert.equal(live.observed_at, new Date(T0 + MIN).toISOString());
    assert.equal(live.pending_observed_at, live.observed_at);
    assert.equal(live.window_start_at, new Date(T0 - 10_000).toISOString());
    assert.equal(live.window_end_at, new Date(T0 - 10_000 + MIN).toISOString());
    assert.equal(live.throughput_records, 3);
    assert.equal(live.errors, 4);
    assert.deepEqual(live.pipeline_error_counts, { empty_payload: 1, frame_invalid: 2, request_validation_failed: 1 });
    for (const k of Object.keys(live.pipeline_error_counts))
      assert.ok((PIPELINE_ERROR_REASONS as readonly string[]).includes(k));
    const expected = [
      'observed_at',
      'pending_records',
      'processing_records',
      'pending_observed_at',
      'pending_is_estimated',
      'state',
      'contributing_servers',
      'fresh_servers',
      'window_start_at',
      'window_end_at',
      'throughput_records',
      'errors',
      'pipeline_error_counts',
    ];
    for (const k of expected) assert.ok(k in live, `live pipeline has ${k}`);
  });

  it('history: TimeseriesAggregation with Pending, Throughput and Errors per minute and per hour', async () => {
    // Minute 2: 5 records wait in the queue while sampled, then drain.
    await ingest(srv.url, `key=${f.secret}`, ndjson([1, 2, 3, 4, 5].map((i) => ({ i }))));
    await srv.sluice.services.telemetry.tick();
    const lease = srv.sluice.services.spool.lease(100)!;
    await srv.sluice.services.spool.complete(lease);
    await srv.sluice.services.telemetry.tick();
    clock.advance(MIN);
    await srv.sluice.services.telemetry.flush();

    const start = new Date(T0 - 10_000 - MIN).toISOString();
    const end = new Date(T0 - 10_000 + 3 * MIN).toISOString();
    const r = await srv.get(`/v1/projects/${f.projectId}/pipeline?start_at=${start}&end_at=${end}&interval=minute`);
    assert.equal(r.status, 200);
    const agg = r.body.data;
    assert.equal(agg.coverage_mode, null);
    assert.equal(agg.interval, 'minute');
    assert.deepEqual(agg.values, ['sum', 'average']);
    assert.deepEqual(
      agg.series.map((s: any) => s.details.label),
      ['Pending', 'Throughput', 'Errors'],
    );
    assert.equal(agg.series_total, 3);
    const [pending, throughput, errors] = agg.series;
    const m = (i: number) => new Date(T0 - 10_000 + i * MIN).toISOString();
    assert.deepEqual(Object.keys(throughput.records), [m(-1), m(0), m(1), m(2)]);
    assert.deepEqual(throughput.records[m(-1)], [null, null], 'before the node ran: unknown');
    assert.equal(throughput.records[m(0)][0], 3);
    assert.equal(throughput.records[m(1)][0], 5);
    assert.equal(errors.records[m(0)][0], 4);
    assert.equal(errors.records[m(1)][0], 0);
    assert.equal(pending.records[m(1)][0], null);
    assert.equal(pending.records[m(1)][1], 2.5, 'samples 5 and 0 average 2.5');
    assert.equal(pending.records[m(-1)][1], null);
    assert.equal(agg.complete_through_at, m(2));

    const hourly = (await srv.get(`/v1/projects/${f.projectId}/pipeline?start_at=${start}&end_at=${end}&interval=hour`))
      .body.data;
    const hourKey = new Date(T0 - 10_000).toISOString();
    assert.deepEqual(Object.keys(hourly.series[1].records), [new Date(T0 - 10_000 - 3_600_000).toISOString(), hourKey]);
    assert.equal(hourly.series[1].records[hourKey][0], 8);
    assert.equal(hourly.series[2].records[hourKey][0], 4);

    // Defaults: the last 12 hours by minute (now is 10 s into a minute: 720 whole buckets plus the current one).
    const def = (await srv.get(`/v1/projects/${f.projectId}/pipeline`)).body.data;
    assert.equal(Object.keys(def.series[0].records).length, 12 * 60 + 1);
    assert.equal(def.end_at, new Date(clock.now()).toISOString());

    // The node is the project's server 0; its pipeline history is the same.
    const server = await srv.get(
      `/v1/projects/${f.projectId}/servers/${localServerId(f.projectId)}/pipeline?start_at=${start}&end_at=${end}`,
    );
    assert.equal(server.status, 200);
    assert.deepEqual(server.body.data.series[1].records, throughput.records);
    const other = await srv.get(`/v1/projects/${f.projectId}/servers/${f.projectId}_s1/pipeline`);
    assert.equal(other.status, 404);
  });

  it('validates the range and needs servers:read; other teams see 404', async () => {
    const bad = async (qs: string) => (await srv.get(`/v1/projects/${f.projectId}/pipeline?${qs}`)).body.error!;
    assert.equal((await bad('interval=day')).code, 'request_validation_failed');
    assert.equal(
      (await bad('start_at=2026-03-02T00:00:00Z&end_at=2026-03-01T00:00:00Z')).code,
      'request_validation_failed',
    );
    assert.equal(
      (await bad('start_at=2025-01-01T00:00:00Z&end_at=2026-03-01T00:00:00Z')).code,
      'request_validation_failed',
    );
    assert.equal((await bad('start_at=nope')).details[0].field, 'query.start_at');
    assert.equal((await bad('foo=1')).details[0].field, 'query.foo');
    const key = await srv.post('/v1/keys', { name: 'no servers', scopes: { projects: ['read'] } });
    assert.equal(key.status, 201);
    const denied = await srv.get(`/v1/projects/${f.projectId}/pipeline/live`, { token: key.body.data.api_key });
    assert.equal(denied.status, 403);
    const missing = await srv.get('/v1/projects/prj_00000000000000000000/pipeline/live');
    assert.equal(missing.status, 404);
  });
});
