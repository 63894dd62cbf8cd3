import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { fails, ok, otherTeamToken, scopedToken } from '../catalog/helpers.js';
import { SCRIPT, viewSetup } from '../transform/view-helpers.js';

const METRIC_FIELDS = [
  'object',
  'id',
  'name',
  'team_id',
  'project_id',
  'deleted_at',
  'view_id',
  'status',
  'error_message',
  'group_by',
  'filters',
  'timestamp_field',
  'value_field',
  'unique_field',
  'null_handling',
  'empty_bucket_handling',
  'group_by_display_fields',
  'backfill_strategy',
  'ui_chart_family',
  'ui_chart_type',
  'ui_chart_color_mode',
  'ui_chart_color_base',
  'ui_chart_color_rules',
  'ui_chart_curve',
  'ui_chart_show_alerts',
  'ui_chart_show_monitors',
  'ui_chart_show_trends',
  'ui_chart_compact_values',
  'ui_chart_y_min',
  'ui_chart_y_max',
  'ui_chart_show_forecast',
  'ui_chart_forecast_horizon',
  'ui_chart_forecast_model',
  'ui_value_unit',
  'ui_chart_value',
  'ui_chart_time_range',
  'ui_chart_interval',
  'ui_chart_custom_range_start_at',
  'ui_chart_custom_range_end_at',
  'ui_chart_max_series',
  'created_at',
  'updated_at',
  'backfill_percent',
  'backfill_total_count',
  'backfill_completed_count',
  'backfill_completed_at',
  'backfill_started_at',
  'compact_percent',
  'compact_total_count',
  'compact_completed_count',
  'compact_started_at',
  'has_triggered_monitors',
  'series_limit',
  'series_count',
  'series_limit_reached_at',
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

/**
 * The control plane alone: without the pipeline the rollups do not run, so status and progress
 * fields stay where these tests put them (test/rollup/rollups-pipeline.test.ts covers the rollups).
 */
const CONTROL_PLANE = { env: { SLUICE_PIPELINE: '0' } };

/** A project with an active view (a script, so it produces records) and a view with no script yet. */
async function metricSetup(srv: TestServer) {
  const setup = await viewSetup(srv);
  const view = ok(
    await srv.post(setup.views, {
      name: 'Requests',
      collection_id: setup.collection.id,
      transform_script: SCRIPT,
      transform_mode: 'manual',
      output_schema: OUT,
    }),
    201,
  );
  const idle = ok(
    await srv.post(setup.views, { name: 'Idle', collection_id: setup.collection.id, output_schema: OUT }),
    201,
  );
  return { ...setup, view, idle, metrics: `/v1/projects/${setup.project.id}/metrics` };
}

test('metrics: create with defaults, get, list, update, and the status a new metric starts in', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE);
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
    [
      m.backfill_percent,
      m.backfill_total_count,
      m.backfill_completed_count,
      m.compact_percent,
      m.compact_total_count,
      m.compact_completed_count,
    ],
    [0, 1, 0, 0, 0, 0],
    'progress seeds: backfill total 1 before the run is planned, compact total 0',
  );
  assert.equal(m.backfill_started_at, null);
  assert.equal(m.has_triggered_monitors, false);
  assert.deepEqual(ok(await srv.get(`${metrics}/${m.id}`)), m);

  const full = ok(
    await srv.post(metrics, {
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
      ui_chart_color_rules: [
        { operator: 'gt', value: 500, color: 'red' },
        { operator: 'lte', value: 500, color: '#00ff00' },
      ],
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
    }),
    201,
  );
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
  assert.deepEqual(names(ok(await srv.get(`${metrics}?limit=2&after=${page.body.pagination!.next_cursor}`))), [
    'Waiting',
  ]);
  fails(await srv.get(`${metrics}?order_by=created_at`), 400, 'request_validation_failed', 'query.order_by');

  // Update: display settings keep the history; a new filter rebuilds it.
  const renamed = ok(
    await srv.post(`${metrics}/${m.id}`, { name: 'Hits', ui_chart_type: 'calendar', ui_chart_max_series: 3 }),
  );
  assert.equal(renamed.name, 'Hits');
  assert.equal(renamed.ui_chart_family, 'temporal');
  assert.equal(renamed.ui_chart_max_series, 3);
  assert.ok(renamed.updated_at > m.updated_at);
  await srv.sluice.services.metrics.patchMetric(m.id, () => ({
    status: 'active',
    backfill_percent: 100,
    backfill_total_count: 4,
    backfill_completed_count: 4,
  }));
  assert.equal(
    ok(await srv.post(`${metrics}/${m.id}`, { ui_value_unit: 'hits' })).status,
    'active',
    'a display change keeps the history',
  );
  const refiltered = ok(await srv.post(`${metrics}/${m.id}`, { filters: 'ok = true' }));
  assert.equal(refiltered.status, 'initializing');
  assert.deepEqual(
    [refiltered.backfill_percent, refiltered.backfill_total_count, refiltered.backfill_completed_count],
    [0, 1, 0],
  );
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
  // The aggregation is served (aggregation-api.test.ts).
  fails(await srv.get(`${metrics}/${m.id}/aggregation`, { token: await otherTeamToken(srv) }), 404, 'not_found');
  // POST backfill rebuilds: a new revision, progress re-seeded; the strategy is checked and kept.
  fails(
    await srv.post(`${metrics}/${m.id}/backfill`, { strategy: 'sideways' }),
    400,
    'request_validation_failed',
    'body.strategy',
  );
  const revision = srv.sluice.services.metrics.byId(m.id)!.definition_revision;
  const rebuilt = ok(await srv.post(`${metrics}/${m.id}/backfill`, { strategy: 'oldest_first' }));
  assert.deepEqual(
    [rebuilt.status, rebuilt.backfill_strategy, rebuilt.backfill_total_count],
    ['initializing', 'oldest_first', 1],
  );
  assert.equal(srv.sluice.services.metrics.byId(m.id)!.definition_revision, revision + 1);
  fails(await srv.post(`${metrics}/${m.id}/backfill`, undefined, { token: reader }), 403, 'forbidden');
});

test('metrics: series list is empty until rollups register series; changing one answers 404', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE);
  t.after(() => srv.stop());
  const { view, metrics } = await metricSetup(srv);
  const m = ok(await srv.post(metrics, { name: 'M', view_id: view.id, group_by: ['path'] }), 201);
  const res = await srv.get(`${metrics}/${m.id}/series`);
  assert.deepEqual(ok(res), []);
  assert.deepEqual(res.body.pagination, { next_cursor: null, prev_cursor: null, limit: 25 });
  fails(await srv.post(`${metrics}/${m.id}/series/mse_${'a'.repeat(20)}`, { pinned: true }), 404, 'not_found');
  fails(
    await srv.post(`${metrics}/${m.id}/series/mse_${'a'.repeat(20)}`, { color: 'beige' }),
    400,
    'request_validation_failed',
    'body.color',
  );

  // A series the rollups registered can be pinned and colored.
  const s = srv.sluice.services.metrics;
  const series = {
    id: `mse_${'b'.repeat(20)}`,
    metric_id: m.id,
    hash: 'h1',
    dimensions: { path: '/a' },
    display_values: null,
    display_label: null,
    first_seen_at: m.created_at,
    last_seen_at: m.created_at,
    last_value: 3,
    last_value_at: null,
    color: null,
    pinned_at: null,
  };
  await s.store.store.transaction(() => s.store.stageSeries(series));
  const pinned = ok(await srv.post(`${metrics}/${m.id}/series/${series.id}`, { pinned: true, color: '#123456' }));
  assert.equal(pinned.object, 'metric_series');
  assert.equal(pinned.color, '#123456');
  assert.ok(pinned.pinned_at);
  assert.deepEqual(
    ok(await srv.get(`${metrics}/${m.id}/series`)).map((x: any) => x.id),
    [series.id],
  );
  assert.equal(ok(await srv.post(`${metrics}/${m.id}/series/${series.id}`, { pinned: false })).pinned_at, null);
  ok(await srv.delete(`${metrics}/${m.id}/force`));
  assert.deepEqual(s.store.seriesOf(m.id), [], 'series destroyed with the metric');
});

test('metrics: bad input answers a clear 400 naming the field, never a 5xx', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE);
  t.after(() => srv.stop());
  const { view, metrics, collection, views } = await metricSetup(srv);
  const base = { name: 'M', view_id: view.id };
  const bad = async (over: object, field: string, message?: RegExp) => {
    const res = await srv.post(metrics, { ...base, ...over });
    fails(res, 400, 'request_validation_failed', field);
    if (message)
      assert.match(
        res.body.error!.details.map((d: { message: string }) => d.message).join('\n'),
        message,
        JSON.stringify(res.body.error),
      );
    return res;
  };

  // Unknown fields, each refusal listing the view's fields.
  await bad(
    { group_by: ['path', 'country'] },
    'body.group_by[1]',
    /not an output field of view viw_[0-9a-z]{20} \(its output fields are: path \(string\), status \(number\)/,
  );
  await bad({ group_by: ['path', 'path'] }, 'body.group_by[1]', /repeats/);
  await bad({ group_by: ['tags'] }, 'body.group_by[0]', /array field/);
  await bad({ timestamp_field: 'when' }, 'body.timestamp_field', /not an output field/);
  await bad(
    { timestamp_field: 'status' },
    'body.timestamp_field',
    /a number field; the timestamp field .* must be a date field/,
  );
  await bad({ unique_field: 'nobody' }, 'body.unique_field', /not an output field/);
  await bad(
    { group_by: ['path'], group_by_display_fields: { user_id: 'user_name' } },
    'body.group_by_display_fields.user_id',
    /not a group_by field/,
  );
  await bad(
    { group_by: ['user_id'], group_by_display_fields: { user_id: 'label' } },
    'body.group_by_display_fields.user_id',
    /not an output field/,
  );

  // A non-numeric value field, or none where the chart value aggregates numbers.
  await bad(
    { value_field: 'path', ui_chart_value: 'sum' },
    'body.value_field',
    /"path", a string field; the value field must be a number field/,
  );
  await bad({ value_field: 'at', ui_chart_value: 'average' }, 'body.value_field', /a date field/);
  await bad({ value_field: 'ok' }, 'body.value_field', /a boolean field/);
  for (const value of ['sum', 'average', 'p99', 'min', 'last', 'cumulative_sum'])
    await bad({ ui_chart_value: value }, 'body.value_field', /is required/);
  await bad({ ui_chart_value: 'count_unique' }, 'body.unique_field', /is required/);
  ok(await srv.post(metrics, { ...base, ui_chart_value: 'count_unique', unique_field: 'user_id' }), 201);
  ok(await srv.post(metrics, { ...base, ui_chart_value: 'cumulative_count' }), 201);

  // max_series outside 1..50, enums, read-only fields, types.
  await bad({ ui_chart_max_series: 0 }, 'body.ui_chart_max_series', /1 to 50/);
  await bad({ ui_chart_max_series: 51 }, 'body.ui_chart_max_series', /1 to 50/);
  await bad({ ui_chart_max_series: 2.5 }, 'body.ui_chart_max_series');
  ok(await srv.post(metrics, { ...base, ui_chart_max_series: 1 }), 201);
  const enums: Record<string, string> = {
    null_handling: 'ignore',
    empty_bucket_handling: 'none',
    backfill_strategy: 'random',
    ui_chart_type: 'donut',
    ui_chart_color_mode: 'rainbow',
    ui_chart_color_base: 'black',
    ui_chart_curve: 'wavy',
    ui_chart_forecast_horizon: 'next_week',
    ui_chart_forecast_model: 'magic',
    ui_chart_value: 'median',
    ui_chart_time_range: 'last_2_hours',
    ui_chart_interval: 'week',
  };
  for (const [field, value] of Object.entries(enums)) await bad({ [field]: value }, `body.${field}`, /must be one of/);
  await bad({ ui_chart_family: 'radial' }, 'body.ui_chart_family', /read-only/);
  await bad({ status: 'active' }, 'body.status', /read-only/);
  await bad({ backfill_percent: 50 }, 'body.backfill_percent', /not a known field/);
  await bad({ ui_chart_show_alerts: 'yes' }, 'body.ui_chart_show_alerts');
  await bad(
    { ui_chart_color_rules: [{ operator: 'gt', value: 1, color: 'mauve' }] },
    'body.ui_chart_color_rules[0].color',
  );
  await bad(
    { ui_chart_color_rules: [{ operator: 'above', value: 1, color: 'red' }] },
    'body.ui_chart_color_rules[0].operator',
  );
  await bad({ ui_chart_y_min: 10, ui_chart_y_max: 5 }, 'body.ui_chart_y_max', /greater than/);
  await bad({ name: '' }, 'body.name');
  await bad({ name: 'x'.repeat(129) }, 'body.name');
  fails(await srv.post(metrics, { view_id: view.id }), 400, 'request_validation_failed', 'body.name');
  fails(await srv.post(metrics, { name: 'M' }), 400, 'request_validation_failed', 'body.view_id');
  await bad({ view_id: 'col_00000000000000000000' }, 'body.view_id', /view id/);

  // Custom ranges: ISO, both ends, ordered; `custom` needs them.
  await bad(
    { ui_chart_custom_range_start_at: 'yesterday', ui_chart_custom_range_end_at: '2026-01-01T00:00:00Z' },
    'body.ui_chart_custom_range_start_at',
    /ISO 8601/,
  );
  await bad(
    { ui_chart_custom_range_start_at: '2026-01-01T00:00:00Z' },
    'body.ui_chart_custom_range_end_at',
    /together/,
  );
  await bad(
    { ui_chart_custom_range_start_at: '2026-02-01T00:00:00Z', ui_chart_custom_range_end_at: '2026-01-01T00:00:00Z' },
    'body.ui_chart_custom_range_end_at',
    /later than/,
  );
  await bad({ ui_chart_time_range: 'custom' }, 'body.ui_chart_time_range', /needs/);

  // Malformed filters, with the position of the error.
  const syntax = await bad({ filters: 'status >= ' }, 'body.filters', /at position 10/);
  assert.equal(
    syntax.body.error!.details[0].message,
    "expected a value after '>=', found the end of the filter at position 10",
  );
  await bad({ filters: "country = 'DE'" }, 'body.filters', /unknown field 'country'.*at position 0/);
  await bad({ filters: "status = '500'" }, 'body.filters', /at position 9/);
  await bad({ filters: 'status > 1 and (path = ' }, 'body.filters', /at position/);
  await bad({ filters: 'x'.repeat(4097) }, 'body.filters');
  await bad({ filters: 42 }, 'body.filters');
  ok(await srv.post(metrics, { ...base, filters: '   ' }), 201);

  // SQL-looking text is data: compared with the schema, refused as a field or a syntax error, stored as a name.
  await bad({ group_by: ['path; DROP TABLE metrics'] }, 'body.group_by[0]', /not an output field/);
  await bad({ value_field: 'duration) FROM x; --' }, 'body.value_field', /not an output field/);
  await bad({ timestamp_field: "at' OR '1'='1" }, 'body.timestamp_field', /not an output field/);
  await bad({ filters: "path = '1'; DROP TABLE t" }, 'body.filters', /at position 10/);
  await bad({ filters: "1 = 1 OR path = ''" }, 'body.filters', /at position 0/);
  const sqlName = "'; DROP TABLE metrics; --";
  const named = ok(await srv.post(metrics, { ...base, name: sqlName, filters: "path = '1''; DROP TABLE t'" }), 201);
  assert.equal(named.name, sqlName);
  assert.equal(ok(await srv.get(`${metrics}/${named.id}`)).filters, "path = '1''; DROP TABLE t'");

  // The view: of this project, live.
  const other = await viewSetup(srv, 'Other');
  const theirs = ok(
    await srv.post(other.views, { name: 'Theirs', collection_id: other.collection.id, output_schema: OUT }),
    201,
  );
  const foreign = await srv.post(metrics, { ...base, view_id: theirs.id });
  fails(foreign, 404, 'not_found', 'body.view_id');
  assert.match(foreign.body.error!.message, /belongs to project/);
  fails(await srv.post(metrics, { ...base, view_id: `viw_${'z'.repeat(20)}` }), 404, 'not_found', 'body.view_id');
  const empty = ok(await srv.post(views, { name: 'Empty', collection_id: collection.id }), 201);
  await bad({ view_id: empty.id, group_by: ['path'] }, 'body.group_by[0]', /output schema is still empty/);
  const gone = ok(await srv.post(views, { name: 'Gone', collection_id: collection.id, output_schema: OUT }), 201);
  ok(await srv.delete(`${views}/${gone.id}`));
  fails(await srv.post(metrics, { ...base, view_id: gone.id }), 404, 'not_found', 'body.view_id');

  // Updates are checked the same way, against the merged definition.
  const m = ok(
    await srv.post(metrics, { ...base, value_field: 'duration', ui_chart_value: 'sum', group_by: ['path'] }),
    201,
  );
  fails(
    await srv.post(`${metrics}/${m.id}`, { value_field: null }),
    400,
    'request_validation_failed',
    'body.value_field',
  );
  fails(
    await srv.post(`${metrics}/${m.id}`, { group_by: ['nope'] }),
    400,
    'request_validation_failed',
    'body.group_by[0]',
  );
  fails(await srv.post(`${metrics}/${m.id}`, { filters: 'path =' }), 400, 'request_validation_failed', 'body.filters');
  fails(
    await srv.post(`${metrics}/${m.id}`, { ui_chart_max_series: 99 }),
    400,
    'request_validation_failed',
    'body.ui_chart_max_series',
  );
  fails(
    await srv.post(`${metrics}/${m.id}`, { ui_chart_family: 'cartesian' }),
    400,
    'request_validation_failed',
    'body.ui_chart_family',
  );
  fails(
    await srv.post(`${metrics}/${m.id}`, { deleted_at: '2026-01-01T00:00:00Z' }),
    400,
    'request_validation_failed',
    'body.deleted_at',
  );
  assert.deepEqual(ok(await srv.get(`${metrics}/${m.id}`)), m, 'a refused update changes nothing');
});

test('metrics: moving to another view needs every field there with a compatible type, and rebuilds history', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE);
  t.after(() => srv.stop());
  const { view, collection, views, metrics } = await metricSetup(srv);
  const m = ok(
    await srv.post(metrics, {
      name: 'M',
      view_id: view.id,
      group_by: ['path'],
      value_field: 'duration',
      ui_chart_value: 'average',
      filters: 'status >= 500',
      timestamp_field: 'at',
    }),
    201,
  );
  await srv.sluice.services.metrics.patchMetric(m.id, () => ({
    status: 'active',
    backfill_percent: 100,
    backfill_total_count: 9,
    backfill_completed_count: 9,
    compact_total_count: 3,
  }));

  const noPath = ok(
    await srv.post(views, {
      name: 'No path',
      collection_id: collection.id,
      output_schema: OUT.filter((f) => f.name !== 'path'),
    }),
    201,
  );
  fails(
    await srv.post(`${metrics}/${m.id}`, { view_id: noPath.id }),
    400,
    'request_validation_failed',
    'body.group_by[0]',
  );
  const textDuration = ok(
    await srv.post(views, {
      name: 'Text duration',
      collection_id: collection.id,
      output_schema: OUT.map((f) => (f.name === 'duration' ? { ...f, type: 'string' } : f)),
    }),
    201,
  );
  fails(
    await srv.post(`${metrics}/${m.id}`, { view_id: textDuration.id }),
    400,
    'request_validation_failed',
    'body.value_field',
  );
  const textStatus = ok(
    await srv.post(views, {
      name: 'Text status',
      collection_id: collection.id,
      output_schema: OUT.map((f) => (f.name === 'status' ? { ...f, type: 'string' } : f)),
    }),
    201,
  );
  fails(
    await srv.post(`${metrics}/${m.id}`, { view_id: textStatus.id }),
    400,
    'request_validation_failed',
    'body.filters',
  );
  assert.equal(ok(await srv.get(`${metrics}/${m.id}`)).status, 'active', 'refused moves change nothing');

  // A compatible view (no transform yet): accepted, history rebuilt once it produces records.
  const twin = ok(await srv.post(views, { name: 'Twin', collection_id: collection.id, output_schema: OUT }), 201);
  const moved = ok(await srv.post(`${metrics}/${m.id}`, { view_id: twin.id }));
  assert.equal(moved.view_id, twin.id);
  assert.equal(moved.status, 'waiting_for_transforms');
  assert.deepEqual(
    [moved.backfill_percent, moved.backfill_total_count, moved.backfill_completed_count, moved.compact_total_count],
    [0, 1, 0, 0],
  );
  assert.equal(srv.sluice.services.metrics.byId(m.id)!.definition_revision, 2);
  const back = ok(await srv.post(`${metrics}/${m.id}`, { view_id: view.id }));
  assert.equal(back.status, 'initializing');
  assert.equal(ok(await srv.get(`${views}/${view.id}`)).metrics_count, 1);
  assert.equal(ok(await srv.get(`${views}/${twin.id}`)).metrics_count, 0);
});

test('metrics: scheduled delete, restore, force; views count their metrics, refuse deletion while they have live ones, and take them along', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE);
  t.after(() => srv.stop());
  const { project, view, collection, views, metrics } = await metricSetup(srv);
  const s = srv.sluice.services;
  const heard: string[] = [];
  s.metrics.onChange((id) => heard.push(id));

  const a = ok(await srv.post(metrics, { name: 'A', view_id: view.id }), 201);
  const b = ok(await srv.post(metrics, { name: 'B', view_id: view.id }), 201);
  assert.equal(ok(await srv.get(`${views}/${view.id}`)).metrics_count, 2);

  // A view with live metrics cannot be deleted, scheduled or forced: 409 naming them.
  const refused = await srv.delete(`${views}/${view.id}`);
  fails(refused, 409, 'conflict');
  assert.ok(
    refused.body.error!.message.includes(`metric ${a.id} ("A")`) &&
      refused.body.error!.message.includes(`metric ${b.id} ("B")`),
    refused.body.error!.message,
  );
  fails(await srv.delete(`${views}/${view.id}/force`), 409, 'conflict');

  // Scheduled deletion: hidden, readable, restorable; deleting again keeps the first time.
  const scheduled = ok(await srv.delete(`${metrics}/${a.id}`));
  assert.ok(scheduled.deleted_at);
  assert.equal(ok(await srv.delete(`${metrics}/${a.id}`)).deleted_at, scheduled.deleted_at);
  assert.deepEqual(
    ok(await srv.get(metrics)).map((m: any) => m.id),
    [b.id],
  );
  assert.deepEqual(
    ok(await srv.get(`${metrics}?deleted_at=not:null`)).map((m: any) => m.id),
    [a.id],
  );
  assert.equal(ok(await srv.get(`${metrics}/${a.id}`)).deleted_at, scheduled.deleted_at);
  assert.equal(ok(await srv.get(`${views}/${view.id}`)).metrics_count, 1);
  fails(await srv.post(`${metrics}/${a.id}`, { name: 'x' }), 409, 'conflict');
  fails(await srv.get(`${metrics}/${a.id}/series`), 404, 'not_found');
  const restored = ok(await srv.post(`${metrics}/${a.id}`, { deleted_at: null, name: 'A again' }));
  assert.equal(restored.deleted_at, null);
  assert.equal(restored.name, 'A again');

  // Force destroys at once.
  assert.equal(ok(await srv.delete(`${metrics}/${b.id}/force`)), null);
  fails(await srv.get(`${metrics}/${b.id}`), 404, 'not_found');

  // Purge after 7 days.
  const old = ok(await srv.post(metrics, { name: 'Old', view_id: view.id }), 201);
  ok(await srv.delete(`${metrics}/${old.id}`));
  assert.deepEqual(await s.metrics.purgeExpired(Date.now()), []);
  assert.deepEqual(await s.metrics.purgeExpired(Date.now() + 7 * 86_400_000 + 1000), [old.id]);
  fails(await srv.get(`${metrics}/${old.id}`), 404, 'not_found');

  // Once its metrics are scheduled, a view can be scheduled; restoring a metric of a scheduled view is refused.
  ok(await srv.delete(`${metrics}/${a.id}`));
  ok(await srv.delete(`${views}/${view.id}`));
  fails(await srv.post(`${metrics}/${a.id}`, { deleted_at: null }), 409, 'conflict');
  // Forcing the view destroys its scheduled metrics with it.
  ok(await srv.delete(`${views}/${view.id}/force`));
  fails(await srv.get(`${metrics}/${a.id}`), 404, 'not_found');
  assert.equal(s.metrics.byId(a.id), undefined);

  // Destroying a collection destroys the metrics of every view it feeds, live ones included.
  const v2 = ok(await srv.post(views, { name: 'V2', collection_id: collection.id, output_schema: OUT }), 201);
  const child = ok(await srv.post(views, { name: 'Child', parent_view_id: v2.id, output_schema: OUT }), 201);
  const live = ok(await srv.post(metrics, { name: 'Live', view_id: child.id }), 201);
  ok(await srv.delete(`/v1/projects/${project.id}/collections/${collection.id}/force`));
  fails(await srv.get(`${metrics}/${live.id}`), 404, 'not_found');
  assert.deepEqual(s.metrics.list(project.id), []);
  assert.ok(heard.includes(live.id), 'listeners hear destroyed metrics');
  assert.ok(heard.includes(a.id) && heard.includes(b.id) && heard.includes(old.id));
});

test('metrics: survive a restart', async (t) => {
  const srv = await TestServer.start(CONTROL_PLANE);
  t.after(() => srv.stop());
  const { view, metrics } = await metricSetup(srv);
  const m = ok(
    await srv.post(metrics, { name: 'Kept', view_id: view.id, group_by: ['path'], filters: 'status >= 500' }),
    201,
  );
  await srv.restart();
  assert.deepEqual(ok(await srv.get(`${metrics}/${m.id}`)), m);
  assert.equal(ok(await srv.get(`/v1/projects/${m.project_id}/views/${view.id}`)).metrics_count, 1);
});

async function waitFor(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
