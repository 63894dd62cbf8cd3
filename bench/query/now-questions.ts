/**
 * Ad hoc: the "month's import" questions in process. N records spread over 30 days posted as
 * NDJSON (late window open), one metric (10 regions, value, unique), then the four dashboard questions
 * with time_range ending now, timed while the compaction backlog waits and after it.
 * node dist/bench/query/now-questions.js [records]
 */
import { TestServer } from '../../test/helpers/server.js';
import { ok } from '../../test/catalog/helpers.js';
import { ingestProject } from '../../test/rollup/rollup-helpers.js';
import { eventsView, quantileOf } from './events-view.js';

const N = Number(process.argv[2] ?? 100_000);
const DAY = 86_400_000;
const Q = [
  ['24h/min count', 'time_range=last_24_hours&interval=minute&values=count'],
  ['30d/hour sum', 'time_range=last_30_days&interval=hour&values=sum'],
  ['7d/hour p95', 'time_range=last_7_days&interval=hour&values=p95'],
  ['30d/day uniq', 'time_range=last_30_days&interval=day&values=count_unique'],
] as const;
const q = quantileOf;

const srv = await TestServer.start();
try {
  const { metrics, viewId, send } = await eventsView(srv, { ok, ingestProject }, 'now', 129_600);
  const metric = ok(
    await srv.post(metrics, {
      name: 'Requests',
      view_id: viewId,
      group_by: ['region'],
      value_field: 'latency',
      unique_field: 'user_id',
    }),
    201,
  );
  for (let i = 0; i < 400 && ok(await srv.get(`${metrics}/${metric.id}`)).status !== 'active'; i++)
    await new Promise((r) => setTimeout(r, 50));
  const now = Date.now();
  const t0 = performance.now();
  let seed = 1;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const body = 2000;
  for (let at = 0; at < N; at += body) {
    const recs = Array.from({ length: Math.min(body, N - at) }, () => ({
      region: `r${Math.floor(rnd() * 10)}`,
      latency: Math.round(rnd() * 1000) / 10,
      user_id: `u${Math.floor(rnd() * N * 0.2)}`,
      timestamp: new Date(now - rnd() * 30 * DAY).toISOString(),
    }));
    await send(recs);
  }
  console.log(`posted ${N} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const path = (s: string) => `${metrics}/${metric.id}/aggregation?${s}&coverage_mode=observed&timezone=UTC`;
  const backlog = Q.map(() => [] as number[]);
  const { Session: BSession } = await import('node:inspector/promises');
  const bsession = new BSession();
  if (process.env.PROFB) {
    bsession.connect();
    await bsession.post('Profiler.enable');
    await bsession.post('Profiler.start');
  }
  let rounds = 0;
  for (;;) {
    const m = ok(await srv.get(`${metrics}/${metric.id}`));
    if (m.compact_percent === 100 && srv.sluice.services.spool.pendingRecords() === 0) break;
    for (let k = 0; k < Q.length; k++) {
      const t = performance.now();
      ok(await srv.get(path(Q[k]![1])));
      backlog[k]!.push(performance.now() - t);
    }
    rounds++;
  }
  if (process.env.PROFB) {
    const { profile } = await bsession.post('Profiler.stop');
    (await import('node:fs')).writeFileSync(process.env.PROFB, JSON.stringify(profile));
  }
  console.log(
    `counted+compacted ${((performance.now() - t0) / 1000).toFixed(1)} s after the first POST; ${rounds} rounds while waiting`,
  );
  Q.forEach(([name], k) => {
    if (backlog[k]!.length)
      console.log(
        `backlog ${name}: p50 ${q(backlog[k]!, 0.5).toFixed(1)} p99 ${q(backlog[k]!, 0.99).toFixed(1)} max ${q(backlog[k]!, 1).toFixed(1)} (${backlog[k]!.length})`,
      );
  });
  const rollups = srv.sluice.services.rollups as unknown as {
    idle(): Promise<void>;
    db: { partialsByMetric(): Promise<Map<string, number>> };
  };
  for (let i = 0; i < 600; i++) {
    await rollups.idle();
    if ((await rollups.db.partialsByMetric()).size === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  console.log(`all compacted ${((performance.now() - t0) / 1000).toFixed(1)} s after the first POST`);
  const reps = Number(process.env.REPS ?? 40);
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  if (process.env.PROF) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  for (const [name, s] of Q) {
    const c0 = process.cpuUsage();
    const ms: number[] = [];
    for (let i = 0; i < reps + 2; i++) {
      const t = performance.now();
      ok(await srv.get(path(s)));
      if (i >= 2) ms.push(performance.now() - t);
    }
    const c = process.cpuUsage(c0);
    const last = ok(await srv.get(path(s)));
    const sealed = (srv.sluice.services.rollups as any).sealed;
    console.log(
      `  complete_through_at ${last.complete_through_at} served ${sealed.servedBuckets} cache ${JSON.stringify(sealed.size)}`,
    );
    console.log(
      `after ${name}: p50 ${q(ms, 0.5).toFixed(2)} p99 ${q(ms, 0.99).toFixed(2)} cpu/req ${((c.user + c.system) / 1000 / (reps + 2)).toFixed(2)} ms`,
    );
  }
  // The server's own work per answer (no HTTP, no client): warm (sealed buckets cached) and cold
  // (the metric's cache dropped before each answer, as every answer was while nothing sealed).
  const service = srv.sluice.services.aggregation;
  const record = srv.sluice.services.metrics!.byId(metric.id)!;
  const sealedCache = (srv.sluice.services.rollups as any).sealed;
  for (const [name, s] of Q) {
    const query = Object.fromEntries(new URLSearchParams(`${s}&coverage_mode=observed&timezone=UTC`)) as never;
    for (const cold of [false, true]) {
      const ms: number[] = [];
      const c0 = process.cpuUsage();
      for (let i = 0; i < reps + 2; i++) {
        if (cold) sealedCache.changed(metric.id);
        const t = performance.now();
        await service.answerJson(record, query);
        if (i >= 2) ms.push(performance.now() - t);
      }
      const c = process.cpuUsage(c0);
      console.log(
        `in process ${cold ? 'cold' : 'warm'} ${name}: p50 ${q(ms, 0.5).toFixed(2)} ms p99 ${q(ms, 0.99).toFixed(2)} cpu/answer ${((c.user + c.system) / 1000 / (reps + 2)).toFixed(2)} ms`,
      );
    }
  }
  if (process.env.PROF) {
    const { profile } = await session.post('Profiler.stop');
    (await import('node:fs')).writeFileSync(process.env.PROF, JSON.stringify(profile));
  }
} finally {
  await srv.stop();
}
