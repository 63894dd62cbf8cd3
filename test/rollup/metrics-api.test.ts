import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { fails, ok, otherTeamToken, scopedToken } from '../catalog/helpers.js';
import { SCRIPT, viewSetup } from '../transform/view-helpers.js';

const METRIC_FIELDS = [
  'object', 'id', 'name', 'team_id', 'project_id', 'deleted_at', 'view_id', 'status', 'group_by', 'filters', 'timestamp_field', 'value_field',
  'unique_field', 'null_handling', 'empty_bucket_handling', 'group_by_display_fields', 'backfill_strategy', 'ui_chart_family', 'ui_chart_type',
  'ui_chart_color_mode', 'ui_chart_color_base', 'ui_chart_color_rules', 'ui_chart_curve', 'ui_chart_show_alerts', 'ui_chart_show_monitors',
  'ui_chart_show_trends', 'ui_chart_compact_values', 'ui_chart_y_min', 'ui_chart_y_max', 'ui_chart_show_forecast', 'ui_chart_forecast_horizon',
  'ui_chart_forecast_model', 'ui_value_unit', 'ui_chart_value', 'ui_chart_time_range', 'ui_chart_interval', 'ui_chart_custom_range_start_at',
  'ui_chart_custom_range_end_at', 'ui_chart_max_series', 'created_at', 'updated_at', 'backfill_percent', 'backfill_total_count',
  'backfill_completed_count', 'backfill_completed_at', 'backfill_started_at', 'compact_percent', 'compact_total_count', 'compact_completed_count',
  'compact_started_at', 'has_triggered_monitors',
];

const OUT = [
  { name: 'path', type: 'string' },
  { name: 'status', type: 'number' },
  { name: 'duration', type: 'number' },
  { name: 'user_id', type: 'string' },
  { name: 'user_name', type: 'string' },
  { name: 'at', type: 'date' },
  { name: 'tags', type: 'array' },
  { name: 'ok', type: 'boolean' },
];

/** A project with an active view (a script, so it produces records) and a view with no script yet. */
async function metricSetup(srv: TestServer) {
  const setup = await viewSetup(srv);
  const view = ok(await srv.post(setup.views, { name: 'Requests', collection_id: setup.collection.id, transform_script: SCRIPT, transform_mode: 'manual', output_schema: OUT }), 201);
  const idle = ok(await srv.post(setup.views, { name: 'Idle', collection_id: setup.collection.id, output_schema: OUT }), 201);
  return { ...setup, view, idle, metrics: `/v1/projects/${setup.project.id}/metrics` };
}

test('metrics: create with defaults, get, list, update, and the status a new metric starts in', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { project, view, idle, views, metrics } = await metricSetup(srv);

  const m = ok(await srv.post(metrics, { name: 'Requests per path', view_id: view.id, group_by: ['path'] }), 201);
  assert.deepEqual(Object.keys(m).sort(), [...METRIC_FIELDS].sort());
  assert.match(m.id, /^met_[0-9a-z]{20}$/);
  assert.equal(m.object, 'metric');
  assert.equal(m.project_id, project.id);
  assert.equal(m.team_id, project.team_id);
  assert.equal(m.status, 'initializing', 'its view produces records');
  assert.deepEqual(m.group_by, ['path']);
  assert.equal(m.filters, '');
  assert.equal(m.timestamp_field, '__ts', 'the record event time by default');
  assert.equal(m.value_field, null);
  assert.equal(m.ui_chart_value, 'count');
  assert.equal(m.ui_chart_type, 'line');
  assert.equal(m.ui_chart_family, 'cartesian');
  assert.equal(m.ui_chart_max_series, 10);
  assert.equal(m.null_handling, 'skip');
  assert.equal(m.empty_bucket_handling, 'zero');
  assert.equal(m.backfill_strategy, 'newest_first');
  assert.deepEqual(
    [m.backfill_percent, m.backfill_total_count, m.backfill_completed_count, m.compact_percent, m.compact_total_count, m.compact_completed_count],
    [0, 1, 0, 0, 0, 0],
    'progress seeds: backfill total 1 before the run is planned, compact total 0',
  );
  assert.equal(m.backfill_started_at, null);
  assert.equal(m.has_triggered_monitors, false);
  assert.deepEqual(ok(await srv.get(`${metrics}/${m.id}`)), m);

  const full = ok(await srv.post(metrics, {
    name: 'Latency',
    view_id: view.id,
    group_by: ['path', 'user_id'],
    group_by_display_fields: { user_id: 'user_name' },
    filters: "status >= 500 and path not in ('/healthz')",
    timestamp_field: 'at',
    value_field: 'duration',
    unique_field: 'user_id',
    null_handling: 'count_as_zero',
    empty_bucket_handling: 'gaps',
    backfill_strategy: 'oldest_first',
    ui_chart_type: 'gauge',
    ui_chart_color_mode: 'by_value',
    ui_chart_color_base: 'teal',
    ui_chart_color_rules: [{ operator: 'gt', value: 500, color: 'red' }, { operator: 'lte', value: 500, color: '#00ff00' }],
    ui_chart_curve: 'smooth',
    ui_chart_show_alerts: false,
    ui_chart_show_monitors: false,
    ui_chart_show_trends: true,
    ui_chart_compact_values: false,
    ui_chart_y_min: 0,
    ui_chart_y_max: 1000,
    ui_chart_show_forecast: true,
    ui_chart_forecast_horizon: 'end_of_quarter',
    ui_chart_forecast_model: 'logistic',
    ui_value_unit: 'ms',
    ui_chart_value: 'p95',
    ui_chart_time_range: 'custom',
    ui_chart_interval: 'hour',
    ui_chart_custom_range_start_at: '2026-01-01T00:00:00Z',
    ui_chart_custom_range_end_at: '2026-02-01T00:00:00Z',
    ui_chart_max_series: 50,
  }), 201);
  assert.equal(full.ui_chart_family, 'radial');
  assert.equal(full.ui_chart_value, 'p95');
  assert.deepEqual(full.group_by_display_fields, { user_id: 'user_name' });
  assert.deepEqual(full.ui_chart_color_rules[1], { operator: 'lte', value: 500, color: '#00ff00' });

  // A view that produces nothing yet: the metric waits for its transforms, and starts once one runs.
  const waiting = ok(await srv.post(metrics, { name: 'Waiting', view_id: idle.id }), 201);
  assert.equal(waiting.status, 'waiting_for_transforms');
  const [tr] = ok(await srv.get(`${views}/${idle.id}/transforms`));
  ok(await srv.post(`${views}/${idle.id}/transforms/${tr.id}`, { transform_script: SCRIPT }));
  await waitFor(async () => ok(await srv.get(`${metrics}/${waiting.id}`)).status === 'initializing');

  // List: by name ascending, view_id filter, pagination.
  const names = (rows: any[]) => rows.map((r) => r.name);
  assert.deepEqual(names(ok(await srv.get(metrics))), ['Latency', 'Requests per path', 'Waiting']);
  assert.deepEqual(names(ok(await srv.get(`${metrics}?sort=desc`))), ['Waiting', 'Requests per path', 'Latency']);
  assert.deepEqual(names(ok(await srv.get(`${metrics}?view_id=${idle.id}`))), ['Waiting']);
  const page = await srv.get(`${metrics}?limit=2`);
  assert.equal(page.body.data.length, 2);
  assert.deepEqual(names(ok(await srv.get(`${metrics}?limit=2&after=${page.body.pagination!.next_cursor}`))), ['Waiting']);
  fails(await srv.get(`${metrics}?order_by=created_at`), 400, 'request_validation_failed', 'query.order_by');

  // Update: display settings keep the history; a new filter rebuilds it.
  const renamed = ok(await srv.post(`${metrics}/${m.id}`, { name: 'Hits', ui_chart_type: 'calendar', ui_chart_max_series: 3 }));
  assert.equal(renamed.name, 'Hits');
  assert.equal(renamed.ui_chart_family, 'temporal');
  assert.equal(renamed.ui_chart_max_series, 3);
  assert.ok(renamed.updated_at > m.updated_at);
  await srv.sluice.services.metrics.patchMetric(m.id, () => ({ status: 'active', backfill_percent: 100, backfill_total_count: 4, backfill_completed_count: 4 }));
  assert.equal(ok(await srv.post(`${metrics}/${m.id}`, { ui_value_unit: 'hits' })).status, 'active', 'a display change keeps the history');
  const refiltered = ok(await srv.post(`${metrics}/${m.id}`, { filters: 'ok = true' }));
  assert.equal(refiltered.status, 'initializing');
  assert.deepEqual([refiltered.backfill_percent, refiltered.backfill_total_count, refiltered.backfill_completed_count], [0, 1, 0]);
  fails(await srv.post(`${metrics}/${m.id}`, {}), 400, 'request_validation_failed', 'body');

  // Scopes and teams.
  const reader = await scopedToken(srv, { metrics: ['read'], projects: ['read'], views: ['read'] });
  ok(await srv.get(metrics, { token: reader }));
  fails(await srv.post(metrics, { name: 'X', view_id: view.id }, { token: reader }), 403, 'forbidden');
  fails(await srv.delete(`${metrics}/${m.id}`, { token: reader }), 403, 'forbidden');
  const writer = await scopedToken(srv, { metrics: ['read', 'write'], projects: ['read'] });
  fails(await srv.delete(`${metrics}/${m.id}`, { token: writer }), 403, 'forbidden', undefined);
  fails(await srv.get(`${metrics}/${m.id}`, { token: await otherTeamToken(srv) }), 404, 'not_found');
  fails(await srv.get(`${metrics}/met_${'z'.repeat(20)}`), 404, 'not_found');
  fails(await srv.get(`${metrics}/nope`), 404, 'not_found');
});

test('metrics: series list is empty until rollups register series; changing one answers 404', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { view, metrics } = await metricSetup(srv);
  const m = ok(await srv.post(metrics, { name: 'M', view_id: view.id, group_by: ['path'] }), 201);
  const res = await srv.get(`${metrics}/${m.id}/series`);
  assert.deepEqual(ok(res), []);
  assert.deepEqual(res.body.pagination, { next_cursor: null, prev_cursor: null, limit: 25 });
  fails(await srv.post(`${metrics}/${m.id}/series/mse_${'a'.repeat(20)}`, { pinned: true }), 404, 'not_found');
  fails(await srv.post(`${metrics}/${m.id}/series/mse_${'a'.repeat(20)}`, { color: 'beige' }), 400, 'request_validation_failed', 'body.color');

  // A series the rollups registered can be pinned and colored.
  const s = srv.sluice.services.metrics;
  const series = { id: `mse_${'b'.repeat(20)}`, metric_id: m.id, hash: 'h1', dimensions: { path: '/a' }, display_values: null, display_label: null, first_seen_at: m.created_at, last_seen_at: m.created_at, last_value: 3, last_value_at: null, color: null, pinned_at: null };
  await s.store.store.transaction(() => s.store.stageSeries(series));
  const pinned = ok(await srv.post(`${metrics}/${m.id}/series/${series.id}`, { pinned: true, color: '#123456' }));
  assert.equal(pinned.object, 'metric_series');
  assert.equal(pinned.color, '#123456');
  assert.ok(pinned.pinned_at);
  assert.deepEqual(ok(await srv.get(`${metrics}/${m.id}/series`)).map((x: any) => x.id), [series.id]);
  assert.equal(ok(await srv.post(`${metrics}/${m.id}/series/${series.id}`, { pinned: false })).pinned_at, null);
  ok(await srv.delete(`${metrics}/${m.id}/force`));
  assert.deepEqual(s.store.seriesOf(m.id), [], 'series destroyed with the metric');
});

async function waitFor(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
