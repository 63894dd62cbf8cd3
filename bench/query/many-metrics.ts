/**
 * bench:query part `many-metrics` (issue 22, item 4): one view with one metric, then (a fresh
 * server) the same view with `metrics` metrics of varied group_by (none, region, host, status,
 * region+status), values (count only, latency, status), unique field or not, and filters (none,
 * `status >= 500`, one region, `latency > 100`). `records` records stamped now are posted
 * closed-loop; counted records/s is the records over the time from the first request to the first
 * metric (no filter) having counted them all — every metric of a batch commits and merges together,
 * so the others have too. Then the peak RSS, the aggregation p50 over every metric (last hour by
 * minute, its own value), and the ingest → counted lag at half the counted rate (lag.ts). Targets:
 * 100 metrics counted at ≥ 0.5× the one-metric rate, peak RSS ≤ 1 GB, aggregation p50 ≤ 20 ms,
 * lag p99 < 2 s.
 */
import { quantile } from '../ingest/load.js';
import { measureLag } from './lag.js';
import { memoryColumns, type MemoryPeaks } from './memory-peaks.js';
import { compactedAt, countedAt, post, RssPeak, scenarioServer, spreadBodies, timeAnswers } from './scenario-server.js';
import { TrafficSource } from './traffic.js';

export interface ManyMetricsPlan {
  records: number;
  metrics: number;
  workers: number;
  serverMain: string | undefined;
  seed: number;
  users: number;
  repeats: number;
  lagSeconds: number;
  lagBatch: number;
  timeoutS: number;
}

export interface ManyMetricsRow {
  metrics: number;
  countedRate: number;
  idleRssMb: number;
  peakRssMb: number;
  /** Where the memory was at its peaks (memory-peaks.ts). */
  memory: MemoryPeaks | null;
  compactedS: number;
  aggregationP50: number;
  aggregationP99: number;
  lagRate: number;
  lagP50: number;
  lagP99: number;
  uncounted: number;
}

const GROUPS = [[], ['region'], ['host'], ['status'], ['region', 'status']];
const FILTERS = ['', 'status >= 500', "region = 'region-1'", 'latency > 100'];
const VALUES: Array<[string | null, string]> = [
  [null, 'count'],
  ['latency', 'p95'],
  ['status', 'sum'],
];

/** The i-th metric's body: the first has no filter and no group_by (the one the counting is read from). */
export function manyMetricBody(i: number, viewId: string): Record<string, unknown> {
  const [value, chart] = VALUES[i % VALUES.length]!;
  return {
    name: `metric ${i}`,
    view_id: viewId,
    group_by: GROUPS[i % GROUPS.length],
    filters: FILTERS[Math.floor(i / GROUPS.length) % FILTERS.length],
    value_field: value,
    unique_field: i % 2 === 1 ? 'user_id' : null,
    ui_chart_value: chart,
  };
}

async function scenario(plan: ManyMetricsPlan, count: number): Promise<ManyMetricsRow> {
  const { server, viewId } = await scenarioServer(plan.workers, plan.serverMain);
  try {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push(await server.createMetric(manyMetricBody(i, viewId)));
    for (;;) {
      const states = await Promise.all(ids.map((id) => server.metric(id)));
      if (states.every((m) => m.status === 'active')) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const source = new TrafficSource(plan.seed, plan.users);
    const now = Date.now();
    // Times within the current minute's last minute: the poll of the last hour sees every one.
    const bodies = spreadBodies(source, plan.records, now - 60_000, now);
    const idle = server.rssMb();
    const rss = new RssPeak(server);
    rss.start();
    const t0 = performance.now();
    await post(server, bodies);
    const counted = await countedAt(server, ids[0]!, plan.records, plan.timeoutS);
    if (counted === null) throw new Error(`${count} metrics: not counted in ${plan.timeoutS} s`);
    const countedRate = plan.records / ((counted - t0) / 1000);
    const compacted = await compactedAt(server, ids, plan.timeoutS);
    const paths = ids.map((id, i) =>
      server.aggregationPath(id, {
        time_range: 'last_hour',
        interval: 'minute',
        values: (manyMetricBody(i, viewId).ui_chart_value as string) ?? 'count',
        coverage_mode: 'observed',
        timezone: 'UTC',
      }),
    );
    const answers = await timeAnswers(server, paths, Math.max(plan.repeats, ids.length));
    const rate = countedRate / 2;
    const lag = await measureLag({
      server,
      metricId: ids[0]!,
      rate,
      batch: plan.lagBatch,
      seconds: plan.lagSeconds,
      pollMs: 50,
      pollRange: 'last_hour',
      source,
      settleMs: 30_000,
    });
    const peak = await rss.stop();
    return {
      metrics: count,
      countedRate,
      idleRssMb: idle,
      peakRssMb: peak,
      memory: rss.breakdown,
      compactedS: compacted === null ? Infinity : (compacted - t0) / 1000,
      aggregationP50: answers.p50,
      aggregationP99: answers.p99,
      lagRate: rate,
      lagP50: quantile(lag.lags, 0.5),
      lagP99: quantile(lag.lags, 0.99),
      uncounted: lag.lags.filter((x) => !Number.isFinite(x)).length,
    };
  } finally {
    await server.stop();
  }
}

/** One metric, then `plan.metrics`, each on a fresh server. */
export async function runManyMetrics(plan: ManyMetricsPlan, say: (s: string) => void): Promise<ManyMetricsRow[]> {
  const rows: ManyMetricsRow[] = [];
  for (const count of [1, plan.metrics]) {
    const r = await scenario(plan, count);
    rows.push(r);
    say(
      `many-metrics — ${count}: counted ${Math.round(r.countedRate).toLocaleString('en-US')} records/s, peak RSS ${r.peakRssMb} MB, aggregation p50 ${r.aggregationP50.toFixed(1)} ms, lag p99 ${r.lagP99.toFixed(0)} ms`,
    );
  }
  return rows;
}

export function manyMetricsReport(rows: readonly ManyMetricsRow[], records: number, say: (s: string) => void): void {
  const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : 'never');
  console.table(
    rows.map((r) => ({
      metrics: r.metrics,
      records: records.toLocaleString('en-US'),
      'counted rec/s': Math.round(r.countedRate).toLocaleString('en-US'),
      'idle RSS MB': r.idleRssMb,
      'peak RSS MB': r.peakRssMb,
      ...memoryColumns(r.memory),
      'compacted s': Number.isFinite(r.compactedS) ? r.compactedS.toFixed(1) : 'timeout',
      'aggregation p50 ms': r.aggregationP50.toFixed(1),
      'aggregation p99 ms': r.aggregationP99.toFixed(1),
      'lag rec/s': Math.round(r.lagRate).toLocaleString('en-US'),
      'lag p50 ms': ms(r.lagP50),
      'lag p99 ms': ms(r.lagP99),
      uncounted: r.uncounted,
    })),
  );
  if (rows.length < 2) return;
  const [one, many] = [rows[0]!, rows[rows.length - 1]!];
  say(
    `target — ${many.metrics} metrics counted at ${(many.countedRate / one.countedRate).toFixed(2)}× the one-metric rate (≥ 0.5×), peak RSS ${many.peakRssMb} MB (≤ 1,024), aggregation p50 ${many.aggregationP50.toFixed(1)} ms (≤ 20), lag p99 ${ms(many.lagP99)} ms (< 2,000)`,
  );
}
