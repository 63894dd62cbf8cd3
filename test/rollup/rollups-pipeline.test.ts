import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';
import { ok } from '../catalog/helpers.js';
import { bucketStart, TOTAL_SERIES, type Tier } from '../../src/rollup/rollup-types.js';
import { seriesHash } from '../../src/rollup/series-hash.js';
import { loadHasher } from '../../src/rollup/hll.js';
import { countsAndSums, rollupsOf, settle } from './rollup-helpers.js';

/** Issue 12, Deliver 2 and 6: ingest → view → metric partials → DuckDB, exact per minute; backfill of what came before. */

const SCRIPT = 'function transform(r) { return { region: r.region, amount: r.amount, user: r.user, when: r.when }; }';
const OUT = [
  { name: 'region', type: 'string' },
  { name: 'amount', type: 'number' },
  { name: 'user', type: 'string' },
  { name: 'when', type: 'date' },
];
const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);

interface Rec {
  id: number;
  region?: string;
  amount: number | null;
  user: string;
  timestamp: string;
  when: string;
}

function records(from: number, n: number): Rec[] {
  return Array.from({ length: n }, (_, k) => {
    const i = from + k;
    return {
      id: i,
      ...(i % 7 === 0 ? {} : { region: i % 2 ? 'eu' : 'us' }),
      amount: i % 11 === 0 ? null : i,
      user: `u${i % 13}`,
      timestamp: new Date(T0 + i * 17_000).toISOString(),
      when: new Date(T0 + 3_600_000 + i * 1_000).toISOString(),
    };
  });
}

/** Exact [count, sum] per (series, bucket) of `recs` (series by region; sum of non-null amounts). */
function expected(
  recs: Rec[],
  tier: Tier,
  opts: { time?: (r: Rec) => number; keep?: (r: Rec) => boolean } = {},
): Map<string, Map<number, [number, number | null]>> {
  const out = new Map<string, Map<number, [number, number | null]>>();
  const add = (series: string, start: number, amount: number | null) => {
    if (!out.has(series)) out.set(series, new Map());
    const m = out.get(series)!;
    const [c, s] = m.get(start) ?? [0, null];
    m.set(start, [c + 1, amount === null ? s : (s ?? 0) + amount]);
  };
  for (const r of recs) {
    if (opts.keep && !opts.keep(r)) continue;
    const start = bucketStart(tier, opts.time ? opts.time(r) : Date.parse(r.timestamp));
    add(TOTAL_SERIES, start, r.amount);
    add(seriesHash([r.region ?? null]), start, r.amount);
  }
  return out;
}

async function setup(srv: TestServer) {
  const fx = await createIngestKey(srv, 'rollups e2e');
  const q = `key=${fx.secret}&collection=orders`;
  return { fx, q, views: `/v1/projects/${fx.projectId}/views`, metrics: `/v1/projects/${fx.projectId}/metrics` };
}

async function send(srv: TestServer, q: string, recs: Rec[]): Promise<void> {
  for (let i = 0; i < recs.length; i += 25)
    assert.equal(
      (await ingest(srv.url, q, ndjson(recs.slice(i, i + 25)), { 'content-type': 'application/x-ndjson' })).status,
      202,
    );
}

test('live batches and the backfill of earlier data give exact counts and sums per minute, hour, day and month; series are registered', async (t) => {
  await loadHasher();
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '2', SLUICE_LEASE_MAX_RECORDS: '20' } });
  t.after(() => srv.stop());
  const { q, views, metrics } = await setup(srv);
  // Records before the view (the view's own backfill) and before the metric (the metric's backfill).
  const early = records(0, 30);
  await send(srv, q, early);
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  const [collection] = ok(await srv.get(`${views.replace('/views', '')}/collections`));
  const view = ok(
    await srv.post(views, {
      name: 'Orders',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: SCRIPT,
      output_schema: OUT,
    }),
    201,
  );
  const middle = records(30, 40);
  await send(srv, q, middle);
  const byRegion = ok(
    await srv.post(metrics, {
      name: 'Amount by region',
      view_id: view.id,
      group_by: ['region'],
      value_field: 'amount',
      unique_field: 'user',
    }),
    201,
  );
  const big = ok(
    await srv.post(metrics, {
      name: 'Big by when',
      view_id: view.id,
      filters: 'amount >= 50',
      timestamp_field: 'when',
      value_field: 'amount',
      group_by: ['region'],
    }),
    201,
  );
  const late = records(70, 60);
  await send(srv, q, late);
  await settle(srv, metrics, [byRegion.id, big.id]);

  const all = [...early, ...middle, ...late];
  for (const tier of ['minute', 'hour', 'day', 'month'] as const) {
    const want = expected(all, tier);
    const got = await countsAndSums(srv, byRegion.id, 1, tier, [...want.keys()]);
    assert.deepEqual(got, want, `${tier}: counts and sums of every series`);
  }
  const wantBig = expected(all, 'minute', {
    time: (r) => Date.parse(r.when),
    keep: (r) => r.amount !== null && r.amount >= 50,
  });
  assert.deepEqual(
    await countsAndSums(srv, big.id, 1, 'minute', [...wantBig.keys()]),
    wantBig,
    'filter and a date timestamp field',
  );

  // Every real series is registered once, with its dimensions; read(series: null) is every real series.
  const series = ok(await srv.get(`${metrics}/${byRegion.id}/series?limit=100`));
  assert.deepEqual(series.map((s: any) => s.dimensions.region).sort(), [null, 'eu', 'us'].sort());
  for (const s of series) assert.equal(s.hash, seriesHash([s.dimensions.region]));
  const real = await countsAndSums(srv, byRegion.id, 1, 'hour', null);
  assert.deepEqual(new Set(real.keys()), new Set(series.map((s: any) => s.hash)));
  const m = ok(await srv.get(`${metrics}/${byRegion.id}`));
  assert.equal(m.backfill_percent, 100);
  assert.ok(m.backfill_started_at && m.backfill_completed_at);
  assert.ok(m.compact_completed_count > 0 && m.compact_completed_count === m.compact_total_count);
  assert.ok(rollupsOf(srv).completeThrough(byRegion.id)! <= Date.now());

  // Percentiles and distinct counts from the stored states (one hour: exact answer known).
  const [hour] = await rollupsOf(srv).read({
    metricId: byRegion.id,
    revision: 1,
    tier: 'month',
    from: 0,
    to: Date.UTC(2100, 0, 1),
    series: [TOTAL_SERIES],
    sketches: true,
  });
  assert.equal(Math.round(hour!.distinct!), 13);
  assert.ok(hour!.state && hour!.state.count === all.length);

  // A restart replays nothing twice; a rebuild (new filter) starts over under revision 2.
  await srv.restart();
  await settle(srv, metrics, [byRegion.id]);
  assert.deepEqual(
    await countsAndSums(srv, byRegion.id, 1, 'minute', [...expected(all, 'minute').keys()]),
    expected(all, 'minute'),
  );
  const rebuilt = ok(await srv.post(`${metrics}/${byRegion.id}`, { filters: "region = 'eu'" }));
  assert.equal(rebuilt.status, 'initializing');
  await settle(srv, metrics, [byRegion.id]);
  const eu = expected(all, 'hour', { keep: (r) => r.region === 'eu' });
  assert.deepEqual(
    await countsAndSums(srv, byRegion.id, 2, 'hour', [...eu.keys()]),
    eu,
    'revision 2 holds exactly the new definition',
  );
  assert.equal((await countsAndSums(srv, byRegion.id, 1, 'hour', null)).size, 0, 'revision 1 rows are dropped');

  // POST backfill: rebuild with another strategy.
  const again = ok(await srv.post(`${metrics}/${byRegion.id}/backfill`, { strategy: 'oldest_first' }));
  assert.equal(again.backfill_strategy, 'oldest_first');
  await settle(srv, metrics, [byRegion.id]);
  assert.deepEqual(await countsAndSums(srv, byRegion.id, 3, 'hour', [...eu.keys()]), eu);
});
