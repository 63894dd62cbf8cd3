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
    const errors = r.body.data.series.find((s: any) => s.details.label === 'Errors').records as Record<string, [number | null, number | null]>;
    const at = (ms: number) => errors[new Date(ms).toISOString()];
    const current = T0 - 10_000;
    assert.deepEqual(at(current), [1, 1], 'the current minute holds the refusal');
    assert.deepEqual(at(current + MIN), [null, null], 'the next minute has not happened');
    assert.deepEqual(at(current + 2 * MIN), [null, null]);
    assert.deepEqual(at(current - MIN), [null, null], 'before the node started: unknown');
  });
});
