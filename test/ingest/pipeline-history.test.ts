import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ManualClock } from '../../src/clock.js';
import { createIngestKey, ingest } from './helpers.js';

const MIN = 60_000;

describe('pipeline history', () => {
  let srv: TestServer;
  const T0 = Math.floor(Date.parse('2026-03-01T10:00:00Z') / MIN) * MIN + 10_000;
  const clock = new ManualClock(T0);

  before(async () => {
    srv = await TestServer.start({ clock, env: { SLUICE_PIPELINE: '0' } });
  });
  after(() => srv.stop());

  it('buckets after now are null (unknown), not 0; the current bucket is known', async () => {
    const f = await createIngestKey(srv);
    await ingest(srv.url, `key=${f.secret}`, '{"a":');
    await srv.sluice.services.telemetry.flush();
    const start = new Date(T0 - 10_000 - 2 * MIN).toISOString();
    const end = new Date(T0 - 10_000 + 3 * MIN).toISOString();
    const r = await srv.get(`/v1/projects/${f.projectId}/pipeline?start_at=${start}&end_at=${end}`);
    assert.equal(r.status, 200);
    const errors = r.body.data.series.find((s: any) => s.details.label === 'Errors').records as Record<
      string,
      [number | null, number | null]
    >;
    const at = (ms: number) => errors[new Date(ms).toISOString()];
    const current = T0 - 10_000;
    assert.deepEqual(at(current), [1, 1], 'the current minute holds the refusal');
    assert.deepEqual(at(current + MIN), [null, null], 'the next minute has not happened');
    assert.deepEqual(at(current + 2 * MIN), [null, null]);
    assert.deepEqual(at(current - MIN), [null, null], 'before the node started: unknown');
  });

  it("edges: the current minute's pending waits for its first sample; a range ending mid-hour averages its own minutes", async () => {
    const { pipelineAggregation } = await import('../../src/api/pipeline/timeseries.js');
    const H = Date.parse('2026-01-01T10:00:00Z');
    const minutes = new Map<number, any>();
    for (let m = 0; m < 60; m++)
      minutes.set(H + m * MIN, {
        throughput_records: 60,
        errors: 0,
        error_counts: {},
        pending_sum: m < 5 ? 500 : 0,
        samples: m < 5 ? 1 : 0,
        pending_max: 0,
        processing_sum: 0,
        accepted_records: 0,
        accepted_requests: 0,
      });
    const records = (agg: any, label: string) => agg.series.find((s: any) => s.details.label === label).records;
    // Now is two seconds into 10:05: 10:04 was sampled, 10:05 not yet.
    const early = pipelineAggregation(minutes, H + 4 * MIN, H + 6 * MIN, 'minute', H, H + 5 * MIN + 2000);
    assert.deepEqual(records(early, 'Pending')[new Date(H + 5 * MIN).toISOString()], [null, null]);
    const half = pipelineAggregation(minutes, H, H + 30 * MIN, 'hour', H, H + 2 * 3_600_000);
    assert.deepEqual(
      records(half, 'Throughput')[new Date(H).toISOString()],
      [1800, 60],
      'thirty minutes asked, thirty averaged',
    );
  });

  it('hour buckets average over the minutes watched; a watched project with nothing spooled has pending 0', async () => {
    const f = await createIngestKey(srv, 'hourly');
    await ingest(srv.url, `key=${f.secret}`, '{"a":'); // one refusal in the first minute
    clock.advance(2 * MIN); // three minutes of this hour watched so far: 10:00, 10:01, 10:02
    await srv.sluice.services.telemetry.flush();
    const hour = Math.floor(T0 / 3_600_000) * 3_600_000;
    const q = (interval: string) =>
      srv.get(
        `/v1/projects/${f.projectId}/pipeline?interval=${interval}&start_at=${new Date(hour).toISOString()}&end_at=${new Date(hour + 3_600_000).toISOString()}`,
      );
    const byLabel = (r: any, label: string) =>
      r.body.data.series.find((x: any) => x.details.label === label).records as Record<
        string,
        [number | null, number | null]
      >;
    const hourly = await q('hour');
    assert.deepEqual(
      byLabel(hourly, 'Errors')[new Date(hour).toISOString()],
      [1, 0.33],
      'one error over three watched minutes',
    );
    assert.deepEqual(byLabel(hourly, 'Pending')[new Date(hour).toISOString()], [null, null], 'the hour is not over');
    const minutes = byLabel(await q('minute'), 'Pending');
    const minute = (n: number) => minutes[new Date(hour + n * MIN).toISOString()];
    assert.deepEqual(
      [minute(0), minute(1)],
      [
        [null, 0],
        [null, 0],
      ],
      'watched and over, nothing spooled: 0',
    );
    assert.deepEqual(minute(2), [null, null], 'the current minute, not sampled yet');
    assert.deepEqual(minute(3), [null, null], 'not yet happened: unknown');
  });
});
