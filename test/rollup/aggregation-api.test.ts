/**
 * GET /v1/projects/:project_id/metrics/:metric_id/aggregation on a real server: every bad query is a
 * 400 naming `query.<param>` (checked before the rollups are asked, so also while they are not
 * available: 503); answers over real rollup states served through the RollupReader contract; and,
 * once the write path is merged, counts, p95 and count_unique after ingesting known records.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { loadHasher } from '../../src/rollup/hll.js';
import { figuresOf } from '../../src/rollup/bucket-state.js';
import { TestServer } from '../helpers/server.js';
import { fails, ok, otherTeamToken, scopedToken } from '../catalog/helpers.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';
import { SCRIPT, viewSetup } from '../transform/view-helpers.js';
import { MemoryRollups, stateOf, type Rec } from './aggregation-fixtures.js';

const OUT = [
  { name: 'path', type: 'string' },
  { name: 'duration', type: 'number' },
  { name: 'user_id', type: 'string' },
];

const NOW = Date.parse('2026-04-02T12:00:00Z');

describe('aggregation: the query is checked in full', () => {
  let srv: TestServer;
  let base: string;
  let bare: string;
  let projectId: string;
  before(async () => {
    srv = await TestServer.start({ clock: new ManualClock(NOW) });
    const setup = await viewSetup(srv);
    projectId = setup.project.id;
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
    const metrics = `/v1/projects/${projectId}/metrics`;
    const m = ok(
      await srv.post(metrics, {
        name: 'Latency',
        view_id: view.id,
        group_by: ['path'],
        value_field: 'duration',
        unique_field: 'user_id',
      }),
      201,
    );
    const plain = ok(await srv.post(metrics, { name: 'Requests', view_id: view.id }), 201);
    base = `${metrics}/${m.id}/aggregation`;
    bare = `${metrics}/${plain.id}/aggregation`;
  });
  after(() => srv.stop());

  const cases: Array<[string, string, RegExp]> = [
    ['values=count,p42', 'query.values', /unknown "p42"; use one or more of count/],
    ['values=', 'query.values', /comma-separated list of chart values/],
    ['values=count,count', 'query.values', /more than once/],
    ['values=count;DROP TABLE rollups;--', 'query.values', /unknown "count;DROP TABLE rollups;--"/],
    ['timezone=Mars/Olympus', 'query.timezone', /not an IANA time zone name/],
    ["timezone=UTC' OR '1'='1", 'query.timezone', /not an IANA time zone name/],
    ['start_at=2026-04-01T00:00:00Z', 'query.end_at', /is required with start_at/],
    ['end_at=2026-04-01T00:00:00Z', 'query.start_at', /is required with end_at/],
    ['start_at=2026-04-02T00:00:00Z&end_at=2026-04-01T00:00:00Z', 'query.end_at', /must be after start_at/],
    ['start_at=yesterday&end_at=2026-04-01T00:00:00Z', 'query.start_at', /ISO 8601/],
    ['time_range=last_30_days&interval=minute', 'query.interval', /at most 10080 are answered/],
    ['start_at=1970-01-01T00:00:00Z&end_at=2026-04-01T00:00:00Z&interval=hour', 'query.interval', /coarser interval/],
    ['time_range=custom', 'query.time_range', /no custom range is saved/],
    ['time_range=next_week', 'query.time_range', /must be one of/],
    ['interval=week', 'query.interval', /must be one of/],
    ['max_series=0', 'query.max_series', /integer from 1 to 50/],
    ['max_series=51', 'query.max_series', /integer from 1 to 50/],
    ['series=abc,def', 'query.series', /unknown series "abc", "def"/],
    ["series=' OR 1=1 --", 'query.series', /unknown series/],
    ['coverage_mode=loose', 'query.coverage_mode', /must be one of/],
    ['normalize=maybe', 'query.normalize', /true or false/],
    ['regression=cubic', 'query.regression', /must be one of/],
    ['forecast_at=2020-01-01T00:00:00Z', 'query.forecast_at', /must be in the future/],
    ['null_handling=drop', 'query.null_handling', /must be one of/],
    ['colour=red', 'query.colour', /not a known field/],
  ];
  for (const [query, field, message] of cases) {
    test(`${query} → 400 naming ${field}`, async () => {
      const res = await srv.get(`${base}?${query}`);
      fails(res, 400, 'request_validation_failed', field);
      const detail = res.body.error!.details.find((d: { field: string }) => d.field === field);
      assert.match(detail.message, message);
    });
  }

  test('values the metric cannot compute name the missing field', async () => {
    const res = await srv.get(`${bare}?values=count,p95,count_unique`);
    fails(res, 400, 'request_validation_failed', 'query.values');
    const messages = res.body.error!.details.map((d: { message: string }) => d.message).join(' | ');
    assert.match(messages, /p95, which need a value_field, and this metric has none/);
    assert.match(messages, /count_unique, which needs a unique_field/);
  });

  test('several problems are listed at once', async () => {
    const res = await srv.get(`${base}?values=nope&timezone=Nowhere&max_series=99`);
    fails(res, 400, 'request_validation_failed');
    assert.deepEqual(res.body.error!.details.map((d: { field: string }) => d.field).sort(), ['query.max_series']);
    // ajv's shape checks come first; the rest once the shapes are right.
    const next = await srv.get(`${base}?values=nope&timezone=Nowhere`);
    assert.deepEqual(next.body.error!.details.map((d: { field: string }) => d.field).sort(), [
      'query.timezone',
      'query.values',
    ]);
  });

  test('a page_id that names no page is 404 naming query.page_id (test/pages/page-range.test.ts has the pages that do)', async () => {
    const res = await srv.get(`${base}?time_range=custom&page_id=pg_00000000000000000000`);
    fails(res, 404, 'not_found', 'query.page_id');
  });

  test('a valid query while the rollups are not available: 503 service_unavailable', async (t) => {
    const services = srv.sluice.services;
    const rollups = services.rollups;
    services.rollups = null;
    t.after(() => (services.rollups = rollups));
    const res = await srv.get(
      `${base}?values=count,p95,count_unique&timezone=Europe/Berlin&interval=day&time_range=last_30_days`,
    );
    fails(res, 503, 'service_unavailable');
    assert.match(res.body.error!.message, /rollups are not available/);
  });

  test('another metric id is 404; the scope is metrics:read', async () => {
    fails(await srv.get(`/v1/projects/${projectId}/metrics/met_00000000000000000000/aggregation`), 404, 'not_found');
    fails(await srv.get(base, { token: await scopedToken(srv, { projects: ['read'] }) }), 403, 'forbidden');
    fails(await srv.get(base, { token: await otherTeamToken(srv) }), 404, 'not_found');
  });
});

describe('aggregation: answers over real rollup states', () => {
  let srv: TestServer;
  let url: string;
  const from = Date.parse('2026-04-02T00:00:00Z');
  // Three records a minute for two hours: durations 1..360, users u0..u59.
  const recs: Rec[] = Array.from({ length: 360 }, (_, i) => ({
    series: 'x',
    t: from + Math.floor(i / 3) * 60_000,
    value: i + 1,
    unique: `u${i % 60}`,
  }));
  before(async () => {
    await loadHasher();
    srv = await TestServer.start({ clock: new ManualClock(NOW) });
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
    const m = ok(
      await srv.post(`/v1/projects/${setup.project.id}/metrics`, {
        name: 'Latency',
        view_id: view.id,
        value_field: 'duration',
        unique_field: 'user_id',
      }),
      201,
    );
    url = `/v1/projects/${setup.project.id}/metrics/${m.id}/aggregation`;
    srv.sluice.services.rollups = new MemoryRollups(recs, from + 2 * 3_600_000);
  });
  after(() => srv.stop());

  test('hours in UTC: the envelope, the answer fields and exact figures', async () => {
    const res = await srv.get(
      `${url}?start_at=2026-04-02T00:00:00Z&end_at=2026-04-02T02:00:00Z&interval=hour&values=count,p95,count_unique,cumulative_count`,
    );
    const a = ok(res);
    assert.deepEqual(
      Object.keys(a).sort(),
      [
        'coverage_mode',
        'coverage_reasons',
        'complete_through_at',
        'end_at',
        'interval',
        'object',
        'series',
        'series_total',
        'start_at',
        'values',
      ].sort(),
    );
    assert.equal(a.object, 'aggregation');
    assert.equal(a.coverage_mode, 'strict');
    assert.equal(a.interval, 'hour');
    assert.deepEqual(a.values, ['count', 'p95', 'count_unique', 'cumulative_count']);
    assert.equal(a.complete_through_at, '2026-04-02T02:00:00.000Z');
    assert.equal(a.series_total, 1);
    assert.equal(a.series.length, 1);
    const s = a.series[0];
    assert.deepEqual(s.details, { label: 'Latency', hash: '__total__', dimensions: {}, color: null });
    const hour = (k: number) =>
      figuresOf(stateOf(recs.filter((r) => r.t >= from + k * 3_600_000 && r.t < from + (k + 1) * 3_600_000)));
    assert.deepEqual(s.records, {
      '2026-04-02T00:00:00.000Z': [180, hour(0).p95, 60, 180],
      '2026-04-02T01:00:00.000Z': [180, hour(1).p95, 60, 360],
    });
    assert.equal(s.regression, null);
    assert.equal(s.forecast, null);
    assert.deepEqual(
      a.coverage_reasons,
      [{ view_id: a.coverage_reasons[0].view_id, view_name: 'Requests', reason: 'initializing', count: null }],
      'a metric not yet active says why',
    );
  });

  test("defaults: the metric's range (last 24 hours), auto interval (minutes), its chart value (count)", async () => {
    const a = ok(await srv.get(url));
    assert.equal(a.interval, 'minute');
    assert.deepEqual(a.values, ['count']);
    assert.equal(a.start_at, '2026-04-01T12:00:00.000Z');
    const records = a.series[0].records;
    assert.equal(Object.keys(records).length, 14 * 60, 'strict: final minutes only, up to the watermark (02:00)');
    assert.deepEqual(records['2026-04-02T01:59:00.000Z'], [3]);
    assert.deepEqual(records['2026-04-01T12:00:00.000Z'], [0], 'normalize: empty final minutes read 0');
  });
});

// The rollup write path (worker partials → commit → DuckDB store) sets services.rollups, so these
// answers come from records ingested through the pipeline.
describe('aggregation: after ingesting known records', () => {
  test('counts per minute, p95 and count_unique of ingested records', async (t) => {
    const srv = await TestServer.start();
    t.after(() => srv.stop());
    const fx = await createIngestKey(srv, 'aggregation e2e');
    const q = `key=${fx.secret}&collection=requests`;
    const start = Date.UTC(2026, 0, 5, 10, 0);
    const records = Array.from({ length: 600 }, (_, i) => ({
      path: i % 3 ? '/a' : '/b',
      duration: (i % 100) + 1,
      user_id: `u${i % 40}`,
      timestamp: new Date(start + Math.floor(i / 100) * 60_000 + (i % 100) * 100).toISOString(),
    }));
    assert.equal(
      (await ingest(srv.url, q, ndjson(records.slice(0, 1)), { 'content-type': 'application/x-ndjson' })).status,
      202,
    );
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    const [collection] = ok(await srv.get(`/v1/projects/${fx.projectId}/collections`));
    const view = ok(
      await srv.post(`/v1/projects/${fx.projectId}/views`, {
        name: 'Requests',
        collection_id: collection.id,
        transform_mode: 'manual',
        transform_script:
          'function transform(r) { return { path: r.path, duration: r.duration, user_id: r.user_id }; }',
        output_schema: OUT,
      }),
      201,
    );
    const m = ok(
      await srv.post(`/v1/projects/${fx.projectId}/metrics`, {
        name: 'Latency',
        view_id: view.id,
        group_by: ['path'],
        value_field: 'duration',
        unique_field: 'user_id',
      }),
      201,
    );
    for (let i = 1; i < records.length; i += 100) {
      assert.equal(
        (await ingest(srv.url, q, ndjson(records.slice(i, i + 100)), { 'content-type': 'application/x-ndjson' }))
          .status,
        202,
      );
    }
    assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
    const url = `/v1/projects/${fx.projectId}/metrics/${m.id}/aggregation?coverage_mode=observed&start_at=${new Date(start).toISOString()}&end_at=${new Date(start + 6 * 60_000).toISOString()}&interval=minute`;
    let answer: any = null;
    for (let attempt = 0; attempt < 100; attempt++) {
      answer = ok(await srv.get(`${url}&values=count,p95,count_unique&series=__total__`));
      const total = Object.values(answer.series[0].records as Record<string, number[]>).reduce(
        (n, row) => n + row[0]!,
        0,
      );
      if (total === records.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const rows = answer.series[0].records as Record<string, number[]>;
    assert.deepEqual(
      Object.values(rows).map((r) => r[0]),
      [100, 100, 100, 100, 100, 100],
      '100 records in each minute',
    );
    for (const row of Object.values(rows)) {
      assert.ok(Math.abs(row[1]! - 95) <= 0.01 * 95, `p95 of 1..100 is 95 within 1%: ${row[1]}`); // x[⌊0.95·99⌋] = 95
      assert.ok(Math.abs(row[2]! - 40) <= 1, `40 users a minute: ${row[2]}`);
    }
    const grouped = ok(await srv.get(`${url}&values=count`));
    assert.equal(grouped.series_total, 2);
    assert.deepEqual(grouped.series.map((s: any) => s.details.dimensions.path).sort(), ['/a', '/b']);
  });
});
