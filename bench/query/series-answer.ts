/**
 * Ad hoc (not part of bench:query): the `max_series=10` answer of a metric with many series, in
 * process (issue 22, "Many series"). A test server, `--records` records over the last hour posted
 * as NDJSON with user ids drawn from a pool of `--users`, a plain metric (by region) and one by
 * user_id (`series_limit` 100,000); once counted and compacted, the last-hour-by-minute `count`
 * answer with `max_series=10` (and `count_unique`, which merges the tail) through
 * `AggregationService.answerJson` — no HTTP, no client — `REPS` times each. `DIST=<a build's dist>`
 * runs that build's server code instead (e.g. the baseline's, for a side-by-side figure); `PROF=<file>`
 * writes a CPU profile of the timed answers.
 *
 *   node dist/bench/query/series-answer.js --records 50000 --users 20000
 *   DIST=/work/wt/base/dist node dist/bench/query/series-answer.js --records 50000 --users 20000
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { eventsView, quantileOf } from './events-view.js';

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : def;
};
const N = Number(arg('--records', '50000'));
const USERS = Number(arg('--users', '20000'));
const REPS = Number(process.env.REPS ?? 30);
const HOUR = 3_600_000;
const root = process.env.DIST ? pathToFileURL(`${process.env.DIST}/`).href : new URL('../../', import.meta.url).href;
const { TestServer } = (await import(`${root}test/helpers/server.js`)) as typeof import('../../test/helpers/server.js');
const { ok } = (await import(`${root}test/catalog/helpers.js`)) as typeof import('../../test/catalog/helpers.js');
const { ingestProject } = (await import(
  `${root}test/rollup/rollup-helpers.js`
)) as typeof import('../../test/rollup/rollup-helpers.js');
void fileURLToPath;

const quantile = quantileOf;

const srv = await TestServer.start();
try {
  const { metrics, viewId, send } = await eventsView(srv, { ok, ingestProject }, 'many', 1_440);
  const plain = ok(
    await srv.post(metrics, {
      name: 'plain',
      view_id: viewId,
      group_by: ['region'],
      value_field: 'latency',
      unique_field: 'user_id',
    }),
    201,
  );
  const many = ok(
    await srv.post(metrics, {
      name: 'by user',
      view_id: viewId,
      group_by: ['user_id'],
      value_field: 'latency',
      unique_field: 'user_id',
      series_limit: 100_000,
    }),
    201,
  );
  for (const m of [plain, many])
    for (let i = 0; i < 400 && ok(await srv.get(`${metrics}/${m.id}`)).status !== 'active'; i++)
      await new Promise((r) => setTimeout(r, 50));
  const now = Date.now();
  // mulberry32: a float LCG with a 31-bit multiplier loses bits past 2^53 and repeats early.
  let seed = 1;
  const rnd = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const t0 = performance.now();
  for (let at = 0; at < N; at += 2000) {
    await send(
      Array.from({ length: Math.min(2000, N - at) }, () => ({
        region: `r${Math.floor(rnd() * 10)}`,
        latency: Math.round(rnd() * 1000) / 10,
        user_id: `u${Math.floor(rnd() * USERS)}`,
        timestamp: new Date(now - rnd() * HOUR).toISOString(),
      })),
    );
  }
  const rollups = srv.sluice.services.rollups as unknown as {
    idle(): Promise<void>;
    db: { partialsByMetric(): Promise<Map<string, number>> };
  };
  // Every record counted (the plain metric's total over the last 6 hours), then every partial compacted.
  const counted = async () => {
    const a = ok(
      await srv.get(
        `${metrics}/${plain.id}/aggregation?time_range=last_6_hours&interval=hour&values=count&coverage_mode=observed&max_series=1`,
      ),
    );
    let n = 0;
    for (const s of a.series) for (const v of Object.values(s.records) as number[][]) n += v[0] ?? 0;
    return n;
  };
  for (let i = 0; i < 3000 && (await counted()) < N + 1; i++) await new Promise((r) => setTimeout(r, 100));
  for (let i = 0; i < 3000; i++) {
    await rollups.idle();
    if (srv.sluice.services.spool.pendingRecords() === 0 && (await rollups.db.partialsByMetric()).size === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const id of [plain.id, many.id]) {
    const a = ok(
      await srv.get(
        `${metrics}/${id}/aggregation?time_range=last_6_hours&interval=hour&values=count&coverage_mode=observed&timezone=UTC`,
      ),
    );
    let n = 0;
    for (const s of a.series) for (const v of Object.values(s.records) as number[][]) n += v[0] ?? 0;
    if (n !== N + 1) console.log(`metric ${id}: ${n} records counted by the 6 h answer, not ${N + 1}`);
    if (n !== N + 1) console.log(JSON.stringify(a).slice(0, 3000));
  }
  const m = ok(await srv.get(`${metrics}/${many.id}`));
  console.log(
    `${N} records, ${m.series_count} series registered; counted and compacted ${((performance.now() - t0) / 1000).toFixed(1)} s after the first POST`,
  );
  const service = srv.sluice.services.aggregation;
  const session = new Session();
  if (process.env.PROF) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const cases = [
    ['many, count, max_series=10', many.id, 'values=count&max_series=10'],
    ['many, count_unique, max_series=10', many.id, 'values=count_unique&max_series=10'],
    ['plain, count', plain.id, 'values=count'],
  ] as const;
  // ONLY=<index>: one case alone (a profile of it).
  for (const [name, id, s] of process.env.ONLY ? [cases[Number(process.env.ONLY)]!] : cases) {
    const record = srv.sluice.services.metrics!.byId(id)!;
    const query = Object.fromEntries(
      new URLSearchParams(`time_range=last_hour&interval=minute&${s}&coverage_mode=observed&timezone=UTC`),
    ) as never;
    const ms: number[] = [];
    const c0 = process.cpuUsage();
    let bytes = 0;
    for (let i = 0; i < REPS + 2; i++) {
      const t = performance.now();
      const out = (await service.answerJson(record, query)) as unknown as string | Buffer;
      bytes = out.length;
      if (i >= 2) ms.push(performance.now() - t);
    }
    const c = process.cpuUsage(c0);
    console.log(
      `${name}: p50 ${quantile(ms, 0.5).toFixed(2)} ms p99 ${quantile(ms, 0.99).toFixed(2)} cpu/answer ${((c.user + c.system) / 1000 / (REPS + 2)).toFixed(2)} ms (${bytes} bytes)`,
    );
  }
  if (process.env.PROF) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(process.env.PROF, JSON.stringify(profile));
  }
} finally {
  await srv.stop();
}
