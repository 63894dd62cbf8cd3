/**
 * Issue 22, item 3: a metric's series are bounded (docs/metrics.md, "Series limits"). Past its
 * `series_limit` (or the project's), new series fold into the stored `__other__` — counted once,
 * totals exact, through live batches and the backfill alike; the metric shows it, a restart keeps
 * it, and a bad limit is a 400 naming the field. Real server, real ingest, real LMDB and DuckDB.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { fails, ok } from '../catalog/helpers.js';
import { loadHasher } from '../../src/rollup/hll.js';
import { OTHER_SERIES, TOTAL_SERIES } from '../../src/rollup/rollup-types.js';
import { seriesHash } from '../../src/rollup/series-hash.js';
import { seriesLimitAttention } from '../../src/attention/metric-series-limit.js';
import { countsAndSums, ingestProject, settle } from './rollup-helpers.js';

const SCRIPT = 'function transform(r) { return { user: r.user, amount: r.amount }; }';
const OUT = [
  { name: 'user', type: 'string' },
  { name: 'amount', type: 'number' },
];
const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);

interface Rec {
  user: string;
  amount: number;
  timestamp: string;
}

/** `n` records from index `from`: user u<i % users>, amount i, one every 7 s. */
function records(from: number, n: number, users: number): Rec[] {
  return Array.from({ length: n }, (_, k) => {
    const i = from + k;
    return { user: `u${i % users}`, amount: i, timestamp: new Date(T0 + i * 7_000).toISOString() };
  });
}

/** [count, sum] of `recs` over every bucket. */
function totals(recs: readonly Rec[]): [number, number] {
  return [recs.length, recs.reduce((s, r) => s + r.amount, 0)];
}

/** Per series hash: [count, sum] over every stored hour of the metric. */
async function perSeries(
  srv: TestServer,
  metricId: string,
  revision: number,
  series: string[],
): Promise<Map<string, [number, number]>> {
  const rows = await countsAndSums(srv, metricId, revision, 'hour', series);
  const out = new Map<string, [number, number]>();
  for (const [h, buckets] of rows) {
    let c = 0;
    let s = 0;
    for (const [count, sum] of buckets.values()) {
      c += count;
      s += sum ?? 0;
    }
    out.set(h, [c, s]);
  }
  return out;
}

async function send(sendBatch: (recs: object[]) => Promise<void>, recs: Rec[]): Promise<void> {
  for (let i = 0; i < recs.length; i += 10) await sendBatch(recs.slice(i, i + 10));
}

test("series past a metric's series_limit fold into __other__, exactly, live and backfilled; the metric says so; a restart keeps it", async (t) => {
  await loadHasher();
  const srv = await TestServer.start({ env: { SLUICE_LEASE_MAX_RECORDS: '10' } });
  t.after(() => srv.stop());
  const { fx, project, send: post } = await ingestProject(srv, 'series limits', 'orders');
  const metrics = `${project}/metrics`;
  await post(records(0, 1, 20));
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  const [collection] = ok(await srv.get(`${project}/collections`));
  const view = ok(
    await srv.post(`${project}/views`, {
      name: 'Orders',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: SCRIPT,
      output_schema: OUT,
    }),
    201,
  );

  // Bad limits: 400 naming the field, nothing created.
  for (const bad of [0, -1, 100_001, 2.5, 'ten', null]) {
    fails(
      await srv.post(metrics, { name: 'Bad', view_id: view.id, group_by: ['user'], series_limit: bad }),
      400,
      'request_validation_failed',
      'body.series_limit',
    );
  }
  fails(
    await srv.post(metrics, { name: 'Bad', view_id: view.id, series_count: 3 }),
    400,
    'request_validation_failed',
    'body.series_count',
  );
  assert.equal(ok(await srv.get(metrics)).length, 0);

  const limited = ok(
    await srv.post(metrics, {
      name: 'By user',
      view_id: view.id,
      group_by: ['user'],
      value_field: 'amount',
      series_limit: 5,
    }),
    201,
  );
  assert.deepEqual([limited.series_limit, limited.series_count, limited.series_limit_reached_at], [5, 0, null]);
  const plain = ok(
    await srv.post(metrics, {
      name: 'By user, default limit',
      view_id: view.id,
      group_by: ['user'],
      value_field: 'amount',
    }),
    201,
  );
  assert.equal(plain.series_limit, 10_000, 'the default limit');

  // 20 distinct users, 60 records, in batches of 10: live batches register 5 series, the rest fold.
  const live = records(1, 59, 20);
  await send(post, live);
  await settle(srv, metrics, [limited.id, plain.id]);
  const all = [...records(0, 1, 20), ...live];

  const m = ok(await srv.get(`${metrics}/${limited.id}`));
  assert.equal(m.series_count, 5);
  assert.equal(m.series_limit, 5);
  assert.ok(m.series_limit_reached_at !== null && !Number.isNaN(Date.parse(m.series_limit_reached_at)));
  const registered = ok(await srv.get(`${metrics}/${limited.id}/series?limit=100`));
  assert.equal(registered.length, 5, 'five series registered');
  const hashes = registered.map((s: { hash: string }) => s.hash);
  const got = await perSeries(srv, limited.id, 1, [...hashes, OTHER_SERIES, TOTAL_SERIES]);
  assert.deepEqual(got.get(TOTAL_SERIES), totals(all), 'the total is exact');
  for (const s of registered) {
    assert.deepEqual(
      got.get(s.hash),
      totals(all.filter((r) => r.user === s.dimensions.user)),
      `series ${s.dimensions.user} is exact`,
    );
  }
  const folded = all.filter(
    (r) => !registered.some((s: { dimensions: { user: string } }) => s.dimensions.user === r.user),
  );
  assert.equal(new Set(folded.map((r) => r.user)).size, 15);
  assert.deepEqual(
    got.get(OTHER_SERIES),
    totals(folded),
    '__other__ holds exactly the records of the 15 folded series',
  );

  // The other metric, under its default limit, is untouched.
  const p = ok(await srv.get(`${metrics}/${plain.id}`));
  assert.deepEqual([p.series_count, p.series_limit_reached_at], [20, null]);

  // The aggregation folds the stored __other__ into its own, whatever max_series: sums are exact.
  const range = `start_at=${new Date(T0).toISOString()}&end_at=${new Date(T0 + 3_600_000).toISOString()}&interval=hour&values=count,sum`;
  for (const maxSeries of [10, 2]) {
    const a = ok(await srv.get(`${metrics}/${limited.id}/aggregation?${range}&max_series=${maxSeries}`));
    const shown = a.series.map((s: { details: { hash: string } }) => s.details.hash);
    assert.equal(shown.length, Math.min(maxSeries, 5) + 1);
    assert.equal(shown[shown.length - 1], OTHER_SERIES);
    const sum = (i: number) =>
      a.series.reduce(
        (n: number, s: { records: Record<string, number[]> }) =>
          n + Object.values(s.records).reduce((x, row) => x + row[i]!, 0),
        0,
      );
    assert.deepEqual([sum(0), sum(1)], totals(all), `max_series=${maxSeries}: every record once`);
  }
  const onlyOther = ok(await srv.get(`${metrics}/${limited.id}/aggregation?${range}&series=${OTHER_SERIES}`));
  assert.deepEqual(
    Object.values(onlyOther.series[0].records as Record<string, number[]>).reduce((n, row) => n + row[0]!, 0),
    folded.length,
    'series=__other__ answers the folded records',
  );

  // A metric created now backfills the same files: its limit folds there too, exactly.
  const backfilled = ok(
    await srv.post(metrics, {
      name: 'By user, backfilled',
      view_id: view.id,
      group_by: ['user'],
      value_field: 'amount',
      series_limit: 3,
    }),
    201,
  );
  await settle(srv, metrics, [backfilled.id]);
  const b = ok(await srv.get(`${metrics}/${backfilled.id}`));
  assert.equal(b.series_count, 3);
  assert.ok(b.series_limit_reached_at !== null);
  const bSeries = ok(await srv.get(`${metrics}/${backfilled.id}/series?limit=100`)).map(
    (s: { hash: string }) => s.hash,
  );
  const bGot = await perSeries(srv, backfilled.id, 1, [...bSeries, OTHER_SERIES, TOTAL_SERIES]);
  assert.deepEqual(bGot.get(TOTAL_SERIES), totals(all));
  const bSum = [...bSeries, OTHER_SERIES].reduce(
    (acc, h) => [acc[0] + bGot.get(h)![0], acc[1] + bGot.get(h)![1]],
    [0, 0],
  );
  assert.deepEqual(
    bSum,
    totals(all),
    'registered series and __other__ add up to the total: nothing lost, nothing doubled',
  );

  // The attention items: one metric_error per metric folding now.
  const attention = () => seriesLimitAttention(srv.sluice.services.metrics).items(fx.projectId, Date.now());
  const items = attention();
  assert.deepEqual(
    items.map((i) => [i.resource_id, i.type, i.tier, i.count, i.detail]).sort(),
    [
      [limited.id, 'metric_error', 'suspended', 5, 'series_limit'],
      [backfilled.id, 'metric_error', 'suspended', 3, 'series_limit'],
    ].sort(),
  );
  assert.equal(items.find((i) => i.resource_id === limited.id)!.since, m.series_limit_reached_at);

  // A restart keeps the fields and the folding: new users still fold, known ones still count as themselves.
  await srv.restart();
  const after = ok(await srv.get(`${metrics}/${limited.id}`));
  assert.deepEqual(
    [after.series_limit, after.series_count, after.series_limit_reached_at],
    [5, 5, m.series_limit_reached_at],
  );
  const more = [...records(60, 10, 20), ...records(1000, 5, 1000).map((r) => ({ ...r, user: `new${r.amount}` }))];
  await send(post, more);
  await settle(srv, metrics, [limited.id]);
  assert.equal(ok(await srv.get(`${metrics}/${limited.id}`)).series_count, 5);
  const everything = [...all, ...more];
  const got2 = await perSeries(srv, limited.id, 1, [...hashes, OTHER_SERIES, TOTAL_SERIES]);
  assert.deepEqual(got2.get(TOTAL_SERIES), totals(everything));
  const registeredUsers = new Set(registered.map((s: { dimensions: { user: string } }) => s.dimensions.user));
  assert.deepEqual(got2.get(OTHER_SERIES), totals(everything.filter((r) => !registeredUsers.has(r.user))));

  // Raising the limit lets new series register again (no rebuild).
  const raised = ok(await srv.post(`${metrics}/${limited.id}`, { series_limit: 7 }));
  assert.equal(raised.series_limit, 7);
  assert.equal(raised.status, 'active', 'a display-side change: no rebuild');
  // Timed after everything so far: an event behind the view's watermark would be late (docs/metrics.md, "Late data").
  await send(post, [{ user: 'fresh', amount: 1, timestamp: new Date(T0 + 2_000 * 7_000).toISOString() }]);
  await settle(srv, metrics, [limited.id]);
  assert.equal(ok(await srv.get(`${metrics}/${limited.id}`)).series_count, 6);
  assert.ok((await perSeries(srv, limited.id, 1, [seriesHash(['fresh'])])).has(seriesHash(['fresh'])));
  assert.deepEqual(
    attention().map((i) => i.resource_id),
    [backfilled.id],
    'a metric under its raised limit has no item',
  );
  fails(
    await srv.post(`${metrics}/${limited.id}`, { series_limit: 0 }),
    400,
    'request_validation_failed',
    'body.series_limit',
  );
});

test('the project limit bounds all metrics of a project together', async (t) => {
  await loadHasher();
  const srv = await TestServer.start({
    env: { SLUICE_LEASE_MAX_RECORDS: '10', SLUICE_MAX_SERIES_PER_METRIC: '3', SLUICE_MAX_SERIES_PER_PROJECT: '4' },
  });
  t.after(() => srv.stop());
  const { fx, project, send: post } = await ingestProject(srv, 'project limit', 'orders');
  const metrics = `${project}/metrics`;
  await post(records(0, 1, 10));
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  const [collection] = ok(await srv.get(`${project}/collections`));
  const view = ok(
    await srv.post(`${project}/views`, {
      name: 'Orders',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: SCRIPT,
      output_schema: OUT,
    }),
    201,
  );
  const a = ok(
    await srv.post(metrics, { name: 'A', view_id: view.id, group_by: ['user'], value_field: 'amount' }),
    201,
  );
  const b = ok(
    await srv.post(metrics, { name: 'B', view_id: view.id, group_by: ['user'], value_field: 'amount' }),
    201,
  );
  assert.equal(a.series_limit, 3, 'SLUICE_MAX_SERIES_PER_METRIC is the default');
  const live = records(1, 39, 10);
  await send(post, live);
  await settle(srv, metrics, [a.id, b.id]);
  const all = [...records(0, 1, 10), ...live];
  const ms = [ok(await srv.get(`${metrics}/${a.id}`)), ok(await srv.get(`${metrics}/${b.id}`))];
  assert.equal(ms[0].series_count + ms[1].series_count, 4, 'four series in the project');
  for (const m of ms) {
    assert.ok(m.series_count <= 3);
    assert.ok(m.series_limit_reached_at !== null, 'both folded (10 users each)');
    const hashes = ok(await srv.get(`${metrics}/${m.id}/series?limit=100`)).map((s: { hash: string }) => s.hash);
    assert.equal(hashes.length, m.series_count);
    const got = await perSeries(srv, m.id, 1, [...hashes, OTHER_SERIES, TOTAL_SERIES]);
    assert.deepEqual(got.get(TOTAL_SERIES), totals(all));
    const sum = [...hashes, OTHER_SERIES].reduce(
      (acc, h) => [acc[0] + got.get(h)![0], acc[1] + got.get(h)![1]],
      [0, 0],
    );
    assert.deepEqual(sum, totals(all), `${m.name}: series and __other__ add up to the total`);
  }
  const items = seriesLimitAttention(srv.sluice.services.metrics).items(fx.projectId, Date.now());
  assert.equal(items.length, 2);
  for (const i of items)
    assert.equal(
      i.detail,
      ms.find((m) => m.id === i.resource_id)!.series_count === 3 ? 'series_limit' : 'project_series_limit',
    );
});
