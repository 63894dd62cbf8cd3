/** `page_id` on the aggregation endpoint: `time_range=custom` reads the page's saved custom range (spec: Metrics, aggregation parameters). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { TestServer } from '../helpers/server.js';
import { fails, ok } from '../catalog/helpers.js';
import { MemoryRollups, type Rec } from '../rollup/aggregation-fixtures.js';
import { pageSetup } from './helpers.js';

const NOW = Date.parse('2026-04-02T12:00:00Z');

test("page_id: time_range=custom answers the page's saved range; a page of another project or none is 404", async (t) => {
  const srv = await TestServer.start({ clock: new ManualClock(NOW), env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const s = await pageSetup(srv, { metrics: 0 });
  const other = await pageSetup(srv, { name: 'Other', metrics: 0 });
  const m = ok(await srv.post(s.metricsPath, { name: 'Plain', view_id: s.view.id }), 201);
  const recs: Rec[] = Array.from({ length: 240 }, (_, i) => ({ series: 'x', t: NOW - 4 * 3_600_000 + i * 60_000 }));
  srv.sluice.services.rollups = new MemoryRollups(recs, NOW);
  const page = ok(
    await srv.post(s.pages, {
      name: 'Incident',
      time_range: 'custom',
      custom_range_start_at: '2026-04-02T09:00:00Z',
      custom_range_end_at: '2026-04-02T10:00:00Z',
    }),
    201,
  );
  const base = `${s.metricsPath}/${m.id}/aggregation`;

  const a = ok(await srv.get(`${base}?time_range=custom&page_id=${page.id}&interval=minute`));
  assert.equal(a.start_at, '2026-04-02T09:00:00.000Z');
  assert.equal(a.end_at, '2026-04-02T10:00:00.000Z');
  assert.equal(Object.keys(a.series[0].records).length, 60);
  // Without page_id the metric has no saved custom range: the spec's 400.
  fails(await srv.get(`${base}?time_range=custom`), 400, 'request_validation_failed', 'query.time_range');
  // Another range ignores the page's custom one.
  assert.notEqual(ok(await srv.get(`${base}?time_range=last_hour&page_id=${page.id}`)).start_at, a.start_at);

  const bare = ok(await srv.post(s.pages, { name: 'No range' }), 201);
  fails(
    await srv.get(`${base}?time_range=custom&page_id=${bare.id}`),
    400,
    'request_validation_failed',
    'query.time_range',
  );
  const foreign = ok(
    await srv.post(other.pages, {
      name: 'Theirs',
      time_range: 'custom',
      custom_range_start_at: '2026-04-02T09:00:00Z',
      custom_range_end_at: '2026-04-02T10:00:00Z',
    }),
    201,
  );
  fails(await srv.get(`${base}?time_range=custom&page_id=${foreign.id}`), 404, 'not_found', 'query.page_id');
  fails(await srv.get(`${base}?time_range=custom&page_id=pg_00000000000000000000`), 404, 'not_found', 'query.page_id');
  // A changed range is read at once.
  ok(
    await srv.post(`${s.pages}/${page.id}`, {
      custom_range_start_at: '2026-04-02T10:00:00Z',
      custom_range_end_at: '2026-04-02T10:30:00Z',
    }),
  );
  assert.equal(
    ok(await srv.get(`${base}?time_range=custom&page_id=${page.id}&interval=minute`)).start_at,
    '2026-04-02T10:00:00.000Z',
  );
});
