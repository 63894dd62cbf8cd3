/**
 * bench:query part `series` (issue 22, item 3): memory and answers with many series. Each scenario
 * is a fresh server holding the traffic view: a plain metric (10 series by region; value latency,
 * unique user_id), alone, then beside a metric grouped by user_id over a pool of 20,000 and of
 * 100,000 user ids (`series_limit` 100,000). `records` records with times spread over the last hour
 * are posted closed-loop; the server's RSS is sampled from before the first request until every
 * record is counted and compacted. Then the many-series metric's `max_series=10` answer (last hour
 * by minute, count) and the plain metric's are timed. Targets: peak RSS within +300 MB of the plain
 * metric alone with 20,000 series, no more than linear growth to 100,000; max_series=10 p50 ≤ 20 ms.
 */
import type { BenchServer } from '../e2e/sluice-server.js';
import { memoryColumns, type MemoryPeaks } from './memory-peaks.js';
import { compactedAt, countedAt, post, RssPeak, scenarioServer, spreadBodies, timeAnswers } from './scenario-server.js';
import { TrafficSource } from './traffic.js';

export interface SeriesPlan {
  records: number;
  /** User-id pools of the many-series scenarios (each its own server, after the plain one). */
  seriesCounts: number[];
  workers: number;
  serverMain: string | undefined;
  /** Another build's entry point whose scenarios run first, in the same run (ratios this ÷ base), or undefined. */
  baselineMain?: string | undefined;
  seed: number;
  repeats: number;
  timeoutS: number;
}

export interface SeriesRow {
  /** `this`, or `base` (the `baselineMain` build). */
  build: string;
  scenario: string;
  /** Series the many-series metric registered (null: plain alone). */
  registered: number | null;
  idleRssMb: number;
  peakRssMb: number;
  countedS: number;
  compactedS: number;
  /** The many-series metric's max_series=10 answer (the plain one's when alone), ms. */
  topP50: number;
  topP99: number;
  plainP50: number;
  /** Distinct (user id, minute) pairs of the records posted: the many-series metric's series-minutes (null: plain alone). */
  seriesMinutes: number | null;
  /** Where the memory was at its peaks (memory-peaks.ts); null parts from a build that does not tell. */
  memory: MemoryPeaks | null;
}

const HOUR = 3_600_000;

const PLAIN = { name: 'plain', group_by: ['region'], value_field: 'latency', unique_field: 'user_id' };

async function scenario(
  plan: SeriesPlan,
  users: number | null,
  build: string,
  main: string | undefined,
): Promise<SeriesRow> {
  const { server, viewId } = await scenarioServer(plan.workers, main);
  try {
    const plain = await server.createMetric({ ...PLAIN, view_id: viewId });
    const many =
      users === null
        ? null
        : await server.createMetric({
            name: `by user (${users})`,
            view_id: viewId,
            group_by: ['user_id'],
            value_field: 'latency',
            series_limit: 100_000,
          });
    const ids = many === null ? [plain] : [plain, many];
    await activeAll(server, ids, plan.timeoutS);
    const now = Date.now();
    const bodies = spreadBodies(new TrafficSource(plan.seed, users ?? 20_000), plan.records, now - HOUR, now);
    const seriesMinutes = users === null ? null : userMinutes(bodies.bodies);
    const idle = server.rssMb();
    const rss = new RssPeak(server);
    rss.start();
    const t0 = performance.now();
    await post(server, bodies);
    let counted = t0;
    for (const id of ids) {
      const at = await countedAt(server, id, plan.records, plan.timeoutS);
      if (at === null) throw new Error(`metric ${id} did not count ${plan.records} records in ${plan.timeoutS} s`);
      counted = Math.max(counted, at);
    }
    const compacted = await compactedAt(server, ids, plan.timeoutS);
    if (compacted === null) throw new Error(`the metrics were not compacted in ${plan.timeoutS} s`);
    const peak = await rss.stop();
    const path = (id: string) =>
      server.aggregationPath(id, {
        time_range: 'last_hour',
        interval: 'minute',
        values: 'count',
        max_series: '10',
        coverage_mode: 'observed',
        timezone: 'UTC',
      });
    const top = await timeAnswers(server, [path(many ?? plain)], plan.repeats);
    const plainTimes = await timeAnswers(server, [path(plain)], plan.repeats);
    const registered =
      many === null ? null : ((await server.metric(many)) as unknown as { series_count: number }).series_count;
    return {
      build,
      scenario: users === null ? 'plain alone' : `plain + ${users.toLocaleString('en-US')} user ids`,
      registered,
      idleRssMb: idle,
      peakRssMb: peak,
      countedS: (counted - t0) / 1000,
      compactedS: (compacted - t0) / 1000,
      topP50: top.p50,
      topP99: top.p99,
      plainP50: plainTimes.p50,
      seriesMinutes,
      memory: rss.breakdown,
    };
  } finally {
    await server.stop();
  }
}

async function activeAll(server: BenchServer, ids: readonly string[], timeoutS: number): Promise<void> {
  const deadline = performance.now() + timeoutS * 1000;
  for (;;) {
    const states = await Promise.all(ids.map((id) => server.metric(id)));
    if (states.every((m) => m.status === 'active')) return;
    const bad = states.find((m) => m.status === 'error' || m.status === 'cancelled');
    if (bad) throw new Error(`metric ${bad.id} went ${bad.status}`);
    if (performance.now() > deadline) throw new Error(`the metrics were not active in ${timeoutS} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Distinct (user_id, minute) pairs in NDJSON bodies of traffic records (untimed, before a run). */
function userMinutes(bodies: readonly Buffer[]): number {
  const cells = new Set<string>();
  for (const b of bodies)
    for (const line of b.toString('utf8').split('\n')) {
      const r = JSON.parse(line) as { timestamp: number; user_id: string };
      cells.add(`${r.user_id}@${Math.floor(r.timestamp / 60_000)}`);
    }
  return cells.size;
}

/**
 * Every scenario in turn (the plain one first: the others are measured against it); with
 * `baselineMain`, every scenario on that build first, then on this one.
 */
export async function runSeriesScenarios(plan: SeriesPlan, say: (s: string) => void): Promise<SeriesRow[]> {
  const rows: SeriesRow[] = [];
  const builds: Array<[string, string | undefined]> = plan.baselineMain
    ? [
        ['base', plan.baselineMain],
        ['this', plan.serverMain],
      ]
    : [['this', plan.serverMain]];
  for (const [build, main] of builds) {
    for (const users of [null, ...plan.seriesCounts]) {
      const row = await scenario(plan, users, build, main);
      rows.push(row);
      say(
        `series — ${build}, ${row.scenario}: peak RSS ${row.peakRssMb} MB (idle ${row.idleRssMb}), counted ${row.countedS.toFixed(1)} s, compacted ${row.compactedS.toFixed(1)} s, max_series=10 p50 ${row.topP50.toFixed(1)} ms`,
      );
    }
  }
  return rows;
}

/** The table and the targets (per build; with a baseline, this ÷ base per scenario). */
export function seriesReport(rows: readonly SeriesRow[], records: number, say: (s: string) => void): void {
  const plainOf = (build: string) => rows.find((r) => r.build === build && r.registered === null);
  console.table(
    rows.map((r) => {
      const plain = plainOf(r.build);
      const extra = plain && r.registered !== null ? r.peakRssMb - plain.peakRssMb : null;
      return {
        build: r.build,
        scenario: r.scenario,
        records: records.toLocaleString('en-US'),
        'series registered': r.registered ?? '',
        'idle RSS MB': r.idleRssMb,
        'peak RSS MB': r.peakRssMb,
        'over plain MB': extra ?? '',
        'series-minutes': r.seriesMinutes?.toLocaleString('en-US') ?? '',
        'B / series-minute': extra !== null && r.seriesMinutes ? Math.round((extra * MB) / r.seriesMinutes) : '',
        ...memoryColumns(r.memory),
        'counted s': r.countedS.toFixed(1),
        'compacted s': r.compactedS.toFixed(1),
        'max_series=10 p50 ms': r.topP50.toFixed(1),
        'max_series=10 p99 ms': r.topP99.toFixed(1),
        'plain p50 ms': r.plainP50.toFixed(1),
      };
    }),
  );
  say(
    "B / series-minute: peak RSS over the plain metric alone (same build) ÷ the many-series metric's series-minutes; memory columns are peaks over the run (main heap: committed V8 heap of the main thread; unaccounted: anonymous RSS that neither V8, the workers nor DuckDB account for — malloc arenas, parquet-wasm)",
  );
  for (const build of new Set(rows.map((r) => r.build))) {
    const own = rows.filter((r) => r.build === build);
    const plain = own[0];
    if (!plain) continue;
    for (const r of own.slice(1))
      say(
        `target — ${build}, ${r.scenario}: peak RSS +${r.peakRssMb - plain.peakRssMb} MB over the plain metric alone (target ≤ +300 MB at 20,000), max_series=10 p50 ${r.topP50.toFixed(1)} ms (target ≤ 20 ms)`,
      );
    if (own.length >= 3) {
      const [a, b] = [own[1]!, own[own.length - 1]!];
      const growth = (b.peakRssMb - plain.peakRssMb) / Math.max(1, a.peakRssMb - plain.peakRssMb);
      const ratio = (b.registered ?? 0) / Math.max(1, a.registered ?? 0);
      say(
        `target — ${build}, growth from ${a.scenario} to ${b.scenario}: ${growth.toFixed(1)}× the extra RSS for ${ratio.toFixed(1)}× the series (target: at most linear)`,
      );
    }
  }
  const base = rows.filter((r) => r.build === 'base');
  if (base.length === 0) return;
  for (const t of rows.filter((r) => r.build === 'this')) {
    const b = base.find((r) => r.scenario === t.scenario);
    if (!b) continue;
    say(
      `this ÷ base — ${t.scenario}: peak RSS ${(t.peakRssMb / b.peakRssMb).toFixed(2)} (${b.peakRssMb} → ${t.peakRssMb} MB), counted s ${(t.countedS / b.countedS).toFixed(2)}, compacted s ${(t.compactedS / b.compactedS).toFixed(2)}, max_series=10 p50 ${(t.topP50 / b.topP50).toFixed(2)}, plain p50 ${(t.plainP50 / b.plainP50).toFixed(2)}`,
    );
  }
}

const MB = 1024 * 1024;
