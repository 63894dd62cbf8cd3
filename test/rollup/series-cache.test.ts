import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { scratchStore } from '../helpers/scratch-store.js';
import { MetricStore } from '../../src/rollup/metric-store.js';
import type { MetricSeriesRecord } from '../../src/rollup/metric-records.js';
import type { MetricCatalog } from '../../src/rollup/metric-catalog.js';
import { ingestProject, settle } from './rollup-helpers.js';

/**
 * Issue 12, Deliver 5: the series registry is served from memory (a metric may have 100,000 series)
 * and must always equal what LMDB holds: after registration by live batches, pins and colors, a
 * rebuild, a restart and a deletion.
 */

const byHash = (a: MetricSeriesRecord, b: MetricSeriesRecord) => (a.hash < b.hash ? -1 : 1);

/** The in-memory registry of a metric equals LMDB's, record for record. */
function assertCurrent(metrics: MetricCatalog, metricId: string, revision: number, what: string): MetricSeriesRecord[] {
  const fromDisk = metrics.store.seriesOf(metricId).sort(byHash);
  const view = metrics.store.seriesView({ id: metricId, definition_revision: revision });
  const fromMemory = [...view.hashes()].map((h) => view.get(h)!).sort(byHash);
  assert.deepEqual(fromMemory, fromDisk, what);
  assert.deepEqual(
    view.pinned().map((s) => s.hash),
    fromDisk.filter((s) => s.pinned_at !== null).map((s) => s.hash),
    `${what}: pins`,
  );
  return fromDisk;
}

test('series registry in memory follows registration, pins and colors, a rebuild, a restart and a deletion', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { project, send } = await ingestProject(srv, 'series cache', 'requests');
  const metricsPath = `${project}/metrics`;
  const metrics = () => srv.sluice.services.metrics;

  await send([{ region: 'eu', latency: 1 }]);
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  const [collection] = ok(await srv.get(`${project}/collections`));
  const view = ok(
    await srv.post(`${project}/views`, {
      name: 'Requests',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: 'function transform(r) { return { region: r.region, latency: r.latency }; }',
      output_schema: [
        { name: 'region', type: 'string' },
        { name: 'latency', type: 'number' },
      ],
    }),
    201,
  );
  for (let i = 0; i < 200 && ok(await srv.get(`${project}/views/${view.id}/records`)).length === 0; i++)
    await new Promise((r) => setTimeout(r, 50));
  const m = ok(
    await srv.post(metricsPath, { name: 'Latency', view_id: view.id, group_by: ['region'], value_field: 'latency' }),
    201,
  );
  await settle(srv, metricsPath, [m.id]);
  const agg = async (extra = '') =>
    ok(
      await srv.get(
        `${metricsPath}/${m.id}/aggregation?time_range=last_hour&coverage_mode=observed&interval=minute&values=count${extra}`,
      ),
    );
  const labels = async (extra = '') => (await agg(extra)).series.map((s: any) => s.details.label);

  // The registry is loaded by the first request, then kept current by the commits that follow.
  assert.deepEqual(await labels(), ['eu']);
  assert.ok(metrics().store.seriesCache.holds(m.id), 'loaded on first use');
  await send([
    { region: 'us', latency: 5 },
    { region: 'ap', latency: 3 },
    { region: 'eu', latency: 2 },
  ]);
  await settle(srv, metricsPath, [m.id]);
  assert.ok(metrics().store.seriesCache.holds(m.id), 'kept, not reloaded');
  let series = assertCurrent(metrics(), m.id, 1, 'after new series registered');
  assert.equal(series.length, 3);
  assert.deepEqual(await labels(), ['us', 'ap', 'eu'], 'ranked by last_value from memory');
  assert.deepEqual(await labels('&max_series=1'), ['us', 'Other']);
  await send([{ region: 'eu', latency: 9 }]);
  await settle(srv, metricsPath, [m.id]);
  assertCurrent(metrics(), m.id, 1, 'after a last_value changed');
  assert.deepEqual(await labels('&max_series=1'), ['eu', 'Other'], 'the new last_value ranks');

  // Pins and colors (POST .../series/:id) show at once in answers and in the listing.
  const ap = series.find((s) => s.dimensions['region'] === 'ap')!;
  ok(await srv.post(`${metricsPath}/${m.id}/series/${ap.id}`, { pinned: true, color: '#00aa00' }));
  assertCurrent(metrics(), m.id, 1, 'after a pin and a color');
  const pinnedAnswer = await agg('&max_series=1');
  assert.deepEqual(
    pinnedAnswer.series.map((s: any) => [s.details.label, s.details.color]),
    [
      ['ap', '#00aa00'],
      ['Other', null],
    ],
    'pins replace ranking',
  );
  const listed = ok(await srv.get(`${metricsPath}/${m.id}/series?order_by=last_value&sort=desc`));
  assert.deepEqual(
    listed.map((s: any) => s.dimensions.region),
    ['eu', 'us', 'ap'],
  );
  assert.equal(listed[2].color, '#00aa00');
  assert.ok(listed[2].pinned_at);
  // Paginated: the cursor walks the in-memory order.
  const first = await srv.get(`${metricsPath}/${m.id}/series?limit=2`);
  const second = ok(await srv.get(`${metricsPath}/${m.id}/series?limit=2&after=${first.body.pagination!.next_cursor}`));
  assert.deepEqual(
    [...first.body.data, ...second].map((s: any) => s.id),
    series
      .slice()
      .sort((a, b) => a.first_seen_at.localeCompare(b.first_seen_at) || a.id.localeCompare(b.id))
      .map((s) => s.id),
  );
  ok(await srv.post(`${metricsPath}/${m.id}/series/${ap.id}`, { pinned: false }));
  assertCurrent(metrics(), m.id, 1, 'after an unpin');
  assert.deepEqual(await labels('&max_series=1'), ['eu', 'Other']);
  ok(await srv.post(`${metricsPath}/${m.id}/series/${ap.id}`, { pinned: true }));

  // A rebuild (new revision) drops the metric's view; the next use loads it again from LMDB.
  ok(await srv.post(`${metricsPath}/${m.id}/backfill`, {}));
  assert.equal(metrics().store.seriesCache.holds(m.id), false, 'dropped by the rebuild');
  await settle(srv, metricsPath, [m.id]);
  series = assertCurrent(metrics(), m.id, 2, 'after the rebuild');
  assert.deepEqual(await labels('&max_series=1'), ['ap', 'Other'], 'the pin survives the rebuild');

  // A restart: the view is derived from LMDB again, equal to before.
  await srv.restart();
  assert.equal(metrics().store.seriesCache.holds(m.id), false);
  assert.deepEqual(assertCurrent(metrics(), m.id, 2, 'after a restart'), series);
  assert.deepEqual(await labels('&max_series=1'), ['ap', 'Other']);
  assert.deepEqual(
    ok(await srv.get(`${metricsPath}/${m.id}/series`)).map((s: any) => s.id),
    series
      .slice()
      .sort((a, b) => a.first_seen_at.localeCompare(b.first_seen_at) || a.id.localeCompare(b.id))
      .map((s) => s.id),
  );

  // Destroyed: the view goes with the metric's records.
  ok(await srv.delete(`${metricsPath}/${m.id}/force`));
  assert.equal(metrics().store.seriesCache.holds(m.id), false);
  assert.deepEqual(metrics().store.seriesOf(m.id), []);
});

test('series cache: bounded across metrics (least recently used dropped), a transaction that fails leaves it equal to LMDB', async (t) => {
  const store = scratchStore(t, 'sluice-series-cache-');
  const metrics = new MetricStore(store, { cachedSeries: 4 });
  const record = (metricId: string, hash: string, over: Partial<MetricSeriesRecord> = {}): MetricSeriesRecord => ({
    id: `mse_${metricId}${hash}`.padEnd(24, '0'),
    metric_id: metricId,
    hash,
    dimensions: { k: hash },
    display_values: null,
    display_label: null,
    first_seen_at: '2026-01-01T00:00:00.000Z',
    last_seen_at: '2026-01-01T00:00:00.000Z',
    last_value: 1,
    last_value_at: null,
    color: null,
    pinned_at: null,
    ...over,
  });
  await store.transaction(() => {
    for (const h of ['a', 'b', 'c']) metrics.stageSeries(record('m1', h));
    for (const h of ['a', 'b']) metrics.stageSeries(record('m2', h));
  });
  assert.equal(metrics.seriesView({ id: 'm1', definition_revision: 1 }).size, 3);
  assert.equal(metrics.seriesView({ id: 'm2', definition_revision: 1 }).size, 2);
  assert.equal(
    metrics.seriesCache.holds('m1'),
    false,
    '5 series over a bound of 4: the least recently used metric is dropped',
  );
  assert.equal(metrics.seriesCache.holds('m2'), true);

  // A transaction whose callback throws: the view is read again, so it shows exactly what LMDB kept.
  await assert.rejects(
    store.transaction(() => {
      metrics.stageSeries(record('m2', 'z'));
      throw new Error('abort');
    }),
  );
  assert.equal(metrics.seriesCache.holds('m2'), false, 'dropped');
  const m2 = metrics.seriesView({ id: 'm2', definition_revision: 1 });
  assert.deepEqual(
    [...m2.hashes()].sort(),
    metrics
      .seriesOf('m2')
      .map((s) => s.hash)
      .sort(),
  );
  // A committed one does, with no reload.
  await store.transaction(() =>
    metrics.stageSeries(record('m2', 'a', { pinned_at: '2026-01-02T00:00:00.000Z', color: 'teal' })),
  );
  assert.equal(metrics.seriesView({ id: 'm2', definition_revision: 1 }), m2, 'the same view, kept current');
  assert.deepEqual(
    m2.pinned().map((s) => [s.hash, s.color]),
    [['a', 'teal']],
  );
  assert.equal(m2.size, metrics.seriesOf('m2').length);
});
