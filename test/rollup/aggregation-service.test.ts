/**
 * The aggregation service called in-process on a real server's metric (records ingested through the
 * pipeline into the real rollups): the same answer as GET .../aggregation, every series with
 * `allSeries`, a saved range from `customRange` or a registered page resolver, and a bad query as
 * the same ApiError the route answers with.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/errors.js';
import type { MetricRecord } from '../../src/rollup/metric-records.js';
import { OTHER_SERIES, TOTAL_SERIES } from '../../src/rollup/rollup-types.js';
import { TestServer } from '../helpers/server.js';
import { fails, ok } from '../catalog/helpers.js';
import { ingestProject, settle } from './rollup-helpers.js';

const OUT = [
  { name: 'path', type: 'string' },
  { name: 'duration', type: 'number' },
];
const START = Date.UTC(2026, 0, 5, 10, 0);
const PATHS = ['/a', '/b', '/c', '/d'];
/** Records of path k: 10·(k+1) over six minutes, so every path has its own count. */
const RECORDS = PATHS.flatMap((path, k) =>
  Array.from({ length: 10 * (k + 1) }, (_, i) => ({
    path,
    duration: i + 1,
    timestamp: new Date(START + (i % 6) * 60_000 + k * 1_000).toISOString(),
  })),
);
const WINDOW = { start_at: new Date(START).toISOString(), end_at: new Date(START + 6 * 60_000).toISOString() };

/** Sum of one value column over an answer series' records. */
function total(records: Record<string, Array<number | null>>, column = 0): number {
  return Object.values(records).reduce((n, row) => n + (row[column] ?? 0), 0);
}

/** Asserts `fn` rejects with an ApiError of `code` naming `field`; returns it. */
async function rejectsWith(fn: () => Promise<unknown>, code: string, field: string): Promise<ApiError> {
  let caught: unknown;
  try {
    await fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ApiError, `an ApiError, not ${String(caught)}`);
  assert.equal(caught.code, code);
  assert.ok(
    (caught.details as Array<{ field: string }>).some((d) => d.field === field),
    JSON.stringify(caught.details),
  );
  return caught;
}

describe('aggregation service', () => {
  let srv: TestServer;
  let metric: MetricRecord;
  let url: string;
  before(async () => {
    srv = await TestServer.start();
    const { fx, project, send } = await ingestProject(srv, 'aggregation service', 'requests');
    await send(RECORDS.slice(0, 1));
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    const [collection] = ok(await srv.get(`${project}/collections`));
    const view = ok(
      await srv.post(`${project}/views`, {
        name: 'Requests',
        collection_id: collection.id,
        transform_mode: 'manual',
        transform_script: 'function transform(r) { return { path: r.path, duration: r.duration }; }',
        output_schema: OUT,
      }),
      201,
    );
    const m = ok(
      await srv.post(`${project}/metrics`, {
        name: 'Latency',
        view_id: view.id,
        group_by: ['path'],
        value_field: 'duration',
      }),
      201,
    );
    await send(RECORDS.slice(1));
    await settle(srv, `${project}/metrics`, [m.id]);
    metric = srv.sluice.services.metrics.get(fx.projectId, m.id)!;
    url = `${project}/metrics/${m.id}/aggregation`;
  });
  after(() => srv.stop());

  test('answers what GET .../aggregation answers, as objects and as the same JSON text', async () => {
    const query = {
      ...WINDOW,
      coverage_mode: 'observed' as const,
      interval: 'minute' as const,
      values: 'count,p95,sum',
      max_series: 2,
    };
    // `complete_through_at` follows the wall clock: the three answers are compared when all three were
    // read within one minute (a boundary passed between them reads them again, at most twice more).
    const read = async () => {
      const http = ok(
        await srv.get(
          `${url}?start_at=${WINDOW.start_at}&end_at=${WINDOW.end_at}&coverage_mode=observed&interval=minute&values=count,p95,sum&max_series=2`,
        ),
      );
      const text = await srv.sluice.services.aggregation.answerJson(metric, query);
      const fromText = JSON.parse(typeof text === 'string' ? text : text.toString('utf8'));
      const objects = await srv.sluice.services.aggregation.answer(metric, query);
      return { http, fromText, objects };
    };
    let r = await read();
    for (let i = 0; i < 2 && new Set([r.http, r.fromText, r.objects].map((a) => a.complete_through_at)).size > 1; i++)
      r = await read();
    const { http } = r;
    assert.deepEqual(r.fromText, http);
    assert.deepEqual(r.objects, http);
    // Two kept (the largest counts), the other two folded.
    assert.deepEqual(
      http.series.map((s: any) => (s.details.hash === OTHER_SERIES ? 'other' : s.details.dimensions.path)),
      ['/d', '/c', 'other'],
    );
    assert.equal(total(http.series[2].records), 10 + 20);
    assert.equal(http.series_total, 4);
  });

  test("query text is coerced like a query string, and the caller's object is left alone", async () => {
    const query = {
      ...WINDOW,
      coverage_mode: 'observed',
      interval: 'minute',
      normalize: 'false',
      max_series: '3',
    } as const;
    const a = await srv.sluice.services.aggregation.answer(metric, query as never);
    assert.equal(a.series.length, 4, 'three kept and __other__');
    assert.equal(query.normalize, 'false');
  });

  test('allSeries: every series as itself, however small max_series is, with nothing folded', async () => {
    const a = await srv.sluice.services.aggregation.answer(
      metric,
      { ...WINDOW, coverage_mode: 'observed', interval: 'minute', max_series: 1 },
      { allSeries: true },
    );
    assert.deepEqual(
      a.series.map((s) => s.details.dimensions.path),
      ['/d', '/c', '/b', '/a'],
      'ranked as the route ranks',
    );
    assert.deepEqual(
      a.series.map((s) => total(s.records)),
      [40, 30, 20, 10],
    );
    assert.ok(!a.series.some((s) => s.details.hash === OTHER_SERIES || s.details.hash === TOTAL_SERIES));
    assert.equal(a.series_total, 4);
    // A series filter still wins.
    const one = await srv.sluice.services.aggregation.answer(
      metric,
      { ...WINDOW, coverage_mode: 'observed', interval: 'minute', series: a.series[3]!.details.hash },
      { allSeries: true },
    );
    assert.deepEqual(
      one.series.map((s) => total(s.records)),
      [10],
    );
  });

  test("a bad query is the route's 400 as an ApiError, before the rollups are asked", async () => {
    const aggregation = srv.sluice.services.aggregation;
    const bad = await rejectsWith(
      () => aggregation.answer(metric, { values: 'count,p42', timezone: 'Mars/Olympus' }),
      'request_validation_failed',
      'query.values',
    );
    assert.equal(bad.status, 400);
    assert.ok(
      (bad.details as Array<{ field: string }>).some((d) => d.field === 'query.timezone'),
      'every problem at once',
    );
    await rejectsWith(
      () => aggregation.answerJson(metric, { max_series: 51 }),
      'request_validation_failed',
      'query.max_series',
    );
    await rejectsWith(
      () => aggregation.answer(metric, { colour: 'red' } as never),
      'request_validation_failed',
      'query.colour',
    );
    await rejectsWith(
      () => aggregation.answer(metric, { time_range: 'custom' }),
      'request_validation_failed',
      'query.time_range',
    );
    await rejectsWith(
      () =>
        aggregation.answer(
          metric,
          { time_range: 'custom' },
          { customRange: { start_at: 'soon', end_at: WINDOW.end_at } },
        ),
      'request_validation_failed',
      'custom_range.start_at',
    );
    const err = await rejectsWith(
      () => aggregation.answer(metric, { time_range: 'custom', page_id: 'pg_00000000000000000000' }),
      'not_found',
      'query.page_id',
    );
    assert.equal(err.status, 404);
  });

  test('customRange, and page_id through a registered resolver, give time_range=custom its window', async (t) => {
    const aggregation = srv.sluice.services.aggregation;
    const custom = await aggregation.answer(
      metric,
      { time_range: 'custom', coverage_mode: 'observed', interval: 'minute', values: 'count' },
      { customRange: WINDOW },
    );
    assert.equal(custom.start_at, new Date(START).toISOString());
    assert.equal(custom.end_at, WINDOW.end_at);
    assert.equal(
      custom.series.reduce((n, s) => n + total(s.records), 0),
      RECORDS.length,
    );

    const asked: string[] = [];
    aggregation.resolvePagesWith((m, pageId) => {
      asked.push(`${m.id} ${pageId}`);
      return pageId === 'pg_saved'
        ? { start_at: WINDOW.start_at, end_at: new Date(START + 3 * 60_000).toISOString() }
        : pageId === 'pg_plain'
          ? null
          : undefined;
    });
    // Later tests see the registration: put back what answers every page_id 404.
    t.after(() => aggregation.resolvePagesWith(() => undefined));
    const page = ok(await srv.get(`${url}?time_range=custom&page_id=pg_saved&coverage_mode=observed&interval=minute`));
    assert.equal(page.end_at, new Date(START + 3 * 60_000).toISOString());
    assert.deepEqual(asked, [`${metric.id} pg_saved`]);
    fails(
      await srv.get(`${url}?time_range=custom&page_id=pg_plain`),
      400,
      'request_validation_failed',
      'query.time_range',
    );
    fails(await srv.get(`${url}?time_range=custom&page_id=pg_gone`), 404, 'not_found', 'query.page_id');
  });
});
