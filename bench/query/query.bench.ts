/**
 * Queries (`npm run bench:query`, docs/benchmarks.md "Queries"): a view holding `--scale` × 100
 * million traffic records over 30 days, generated straight into its Parquet files, and two metrics
 * on it (10 series by region, 1,000 by host; value latency, unique user_id) built by their
 * backfill. Then, per metric: four dashboard queries over HTTP beside DuckDB scanning the view's
 * files for the same answer (latency ratio, errors of the sketches against the exact answer); the
 * lag from a 202 to the record counted in its minute at half the maximum ingest rate. Knobs:
 * options.ts. The server is a child process on 127.0.0.1 with a temporary data dir, removed at the end.
 */
import { availableParallelism, loadavg } from 'node:os';
import { sendAndDrain } from '../e2e/drain.js';
import { BenchServer } from '../e2e/sluice-server.js';
import { quantile } from '../ingest/load.js';
import { countFrom, type AggregationAnswer } from './aggregation.js';
import { compacted, createAndBackfill } from './backfill.js';
import { backlogQueries, type BacklogRun } from './backlog-queries.js';
import { importPart } from './import.js';
import { ExactScanner } from './exact.js';
import { measureLag, type LagResult } from './lag.js';
import { manyMetricsReport, runManyMetrics } from './many-metrics.js';
import { KNOBS, readOptions } from './options.js';
import { QUERIES } from './queries.js';
import { queryRow, runQuery, type BenchMetric, type QueryRun } from './query-runs.js';
import { runSeriesScenarios, seriesReport } from './series-scenario.js';
import { HOSTS, REGIONS, TRAFFIC_VIEW, TrafficSource, trafficNdjson } from './traffic.js';
import { generateViewFiles, type GeneratedFile } from './view-files.js';

const opts = readOptions();
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const BURST_BODY = 500;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const say = (s: string) => process.stdout.write(`${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const msOrNever = (ms: number) => (Number.isFinite(ms) ? ms.toFixed(0) : 'never');

async function waitViewActive(server: BenchServer, viewId: string): Promise<void> {
  for (let i = 0; i < 120; i++) {
    const v = await server.view(viewId);
    if (v.status === 'active') return;
    if (v.status === 'error') throw new Error(`the view went error: ${v.error_message}`);
    await sleep(250);
  }
  throw new Error('the view did not become active in 30 s');
}

interface BackfillRow {
  metric: BenchMetric;
  seconds: number;
  statuses: string[];
}

async function buildMetrics(server: BenchServer, viewId: string): Promise<BackfillRow[]> {
  const rows: BackfillRow[] = [];
  for (const [name, field, series] of [
    ['by region', 'region', REGIONS],
    ['by host', 'host', HOSTS],
  ] as const) {
    let shown = -1;
    const b = await createAndBackfill(
      server,
      { name, view_id: viewId, group_by: [field], value_field: 'latency', unique_field: 'user_id' },
      opts.backfillTimeoutS,
      (m) => {
        // Progress every 10 % so a long backfill shows it is moving.
        const step = Math.floor(m.backfill_percent / 10);
        if (step !== shown) process.stdout.write(`  ${name}: ${m.status} ${m.backfill_percent} %\n`);
        shown = step;
      },
    );
    const metric = { name, id: b.id, field, series };
    rows.push({ metric, seconds: b.seconds, statuses: b.statuses });
    say(
      `metric ${name} (${series} series): active after ${b.seconds.toFixed(1)} s — ${fmt(opts.records / b.seconds)} records/s (statuses ${b.statuses.join(' → ')})`,
    );
  }
  return rows;
}

/**
 * Queries are timed on compacted rollups (steady state): wait until the compactor, which follows the
 * backfills' merges by itself, reports both metrics at 100 %.
 */
async function awaitCompaction(server: BenchServer, metrics: readonly BenchMetric[]): Promise<void> {
  const waited = await compacted(
    server,
    metrics.map((m) => m.id),
    opts.backfillTimeoutS,
  );
  if (waited === null)
    throw new Error(
      `the metrics were not compacted ${opts.backfillTimeoutS} s after their backfills (BENCH_BACKFILL_TIMEOUT_S)`,
    );
  say(`compaction: both metrics compacted ${waited.toFixed(1)} s after the backfills`);
}

/** Sum of the metric's counts in minutes from `from` on, read until it reaches `want` (or 120 s). */
async function countedBy(server: BenchServer, metricId: string, from: number, want: number): Promise<number> {
  const path = server.aggregationPath(metricId, {
    time_range: 'last_hour',
    interval: 'minute',
    values: 'count',
    coverage_mode: 'observed',
    timezone: 'UTC',
  });
  const deadline = performance.now() + 120_000;
  for (;;) {
    const n = [...countFrom((await server.api('GET', path)) as AggregationAnswer, from).values()].reduce(
      (a, b) => a + b,
      0,
    );
    if (n >= want || performance.now() > deadline) return n;
    await sleep(50);
  }
}

interface LagRun {
  burstRate: number;
  burstCountedS: number;
  burstCounted: number;
  rate: number;
  result: LagResult;
}

async function lagRun(server: BenchServer, metric: BenchMetric): Promise<LagRun> {
  const source = new TrafficSource(opts.seed + 7, opts.users);
  const from = Math.floor(Date.now() / 60_000) * 60_000;
  const bodies: Buffer[] = [];
  const records: number[] = [];
  for (let at = 0; at < opts.burstRecords; at += BURST_BODY) {
    const n = Math.min(BURST_BODY, opts.burstRecords - at);
    bodies.push(trafficNdjson(source, n, Date.now()));
    records.push(n);
  }
  const d = await sendAndDrain(server, bodies, records, 4);
  const burstRate = d.sent.records / ((d.drainedAt - d.sent.firstSentAt) / 1000);
  const burstCounted = await countedBy(server, metric.id, from, d.sent.records);
  const burstCountedS = (performance.now() - d.sent.firstSentAt) / 1000;
  // The maximum is the rate at which records are counted, not only filed: above it the metric
  // falls further behind every second and the lag has no steady state to measure.
  const countedRate = burstCounted / burstCountedS;
  say(
    `burst: ${fmt(d.sent.records)} records closed-loop, ${fmt(burstRate)} records/s to files; counted ${fmt(burstCounted)} of them ${burstCountedS.toFixed(2)} s after the first request (${fmt(countedRate)} records/s)`,
  );
  const rate = opts.lagRate > 0 ? opts.lagRate : Math.min(burstRate, countedRate) / 2;
  const result = await measureLag({
    server,
    metricId: metric.id,
    rate,
    batch: opts.lagBatch,
    seconds: opts.lagSeconds,
    pollMs: 50,
    pollRange: opts.lagPollRange,
    source,
    settleMs: 30_000,
  });
  return { burstRate, burstCountedS, burstCounted, rate, result };
}

async function main(): Promise<void> {
  const knobs = Object.keys(KNOBS)
    .filter((k) => process.env[k] !== undefined && process.env[k] !== '')
    .map((k) => `${k}=${process.env[k]}`);
  const command = [...knobs, `npm run bench:query -- --scale ${opts.scale}`].join(' ');
  say(
    `query benchmark: ${availableParallelism()} CPUs, load average ${load()}; scale ${opts.scale} = ${fmt(opts.records)} records over 30 days in files of ${fmt(opts.fileRows)}, ${fmt(opts.users)} user ids; SLUICE_WORKERS ${opts.workers}; parts ${opts.parts.join(', ')}`,
  );
  if (opts.parts.includes('import')) {
    // Its own servers (with and without a metric), before the view files of the other parts.
    await importPart(
      {
        records: opts.importRecords,
        body: opts.importBody,
        users: Math.max(1_000, Math.round(opts.importRecords / 5)),
        seed: opts.seed,
        workers: opts.workers,
        serverMain: opts.serverMain,
        timeoutS: opts.backfillTimeoutS,
      },
      say,
    );
  }
  // The parts that run on servers of their own (one per scenario, so RSS is the scenario's).
  if (opts.parts.includes('series')) {
    const plan = { ...opts, records: opts.seriesRecords, repeats: opts.queryRepeats, timeoutS: opts.backfillTimeoutS };
    seriesReport(await runSeriesScenarios(plan, say), opts.seriesRecords, say);
  }
  if (opts.parts.includes('many-metrics')) {
    const plan = {
      ...opts,
      records: opts.manyRecords,
      metrics: opts.manyMetrics,
      repeats: opts.queryRepeats,
      timeoutS: opts.backfillTimeoutS,
    };
    manyMetricsReport(await runManyMetrics(plan, say), opts.manyRecords, say);
  }
  if (!opts.parts.includes('backlog') && !opts.parts.includes('queries') && !opts.parts.includes('lag')) return;
  const server = await BenchServer.start(opts.workers, opts.serverMain);
  // Interrupted: stop the server and remove its data dir before leaving.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void server.stop().finally(() => process.exit(130)));
  let scanner: ExactScanner | null = null;
  try {
    const view = await server.createView(TRAFFIC_VIEW);
    if (!view.ok) throw new Error(`the view was refused: ${view.reason}`);
    await waitViewActive(server, view.id);
    const dataEnd = Math.floor(Date.now() / HOUR) * HOUR;
    let files: GeneratedFile[] = [];
    const t0 = performance.now();
    await server.restart(async (dataDir) => {
      files = await generateViewFiles({
        dataDir,
        viewId: view.id,
        dir: server.viewDir(view.id),
        records: opts.records,
        from: dataEnd - 30 * DAY,
        to: dataEnd,
        fileRows: opts.fileRows,
        users: opts.users,
        seed: opts.seed,
        threads: availableParallelism(),
      });
    });
    // The restarted server must have kept them (its start-up sweep removes files no manifest names).
    if (!(await server.viewHasRecords(view.id)))
      throw new Error('the view shows no records after the restart: the generated files were not taken');
    const mb = files.reduce((a, f) => a + f.bytes, 0) / 1e6;
    say(
      `generated ${fmt(opts.records)} records into ${files.length} view files (${mb.toFixed(0)} MB) and restarted in ${((performance.now() - t0) / 1000).toFixed(1)} s (untimed); data ends ${new Date(dataEnd).toISOString()}`,
    );
    const backfills = await buildMetrics(server, view.id);
    const metrics = backfills.map((b) => b.metric);
    // While the backfills' partials wait to be folded: the four queries of the first metric, timed.
    let backlog: { runs: BacklogRun[]; rounds: number } | null = null;
    if (opts.parts.includes('backlog')) {
      backlog = await backlogQueries(server, metrics[0]!, metrics, dataEnd, opts.backlogRounds);
      say(
        `backlog: ${backlog.rounds} rounds of the four queries (observed and strict) while the compaction backlog waited`,
      );
    }
    await awaitCompaction(server, metrics);
    const runs: QueryRun[] = [];
    const compared: QueryRun[] = [];
    if (opts.parts.includes('queries')) {
      scanner = await ExactScanner.open();
      const ctx = {
        server,
        scanner,
        files,
        dataEnd,
        coverage: opts.coverage,
        queryRepeats: opts.queryRepeats,
        rawRepeats: opts.rawRepeats,
      };
      const queries = async (into: QueryRun[]) => {
        for (const metric of metrics) {
          for (const q of QUERIES) {
            const r = await runQuery(ctx, metric, q);
            into.push(r);
            say(
              `  ${metric.name}, ${q.name}: rollup p50 ${quantile(r.rollupMs, 0.5).toFixed(2)} ms, raw p50 ${quantile(r.rawMs, 0.5).toFixed(1)} ms (complete_through_at ${r.completeThroughAt})`,
            );
          }
        }
      };
      await queries(runs);
      if (opts.compareMain !== undefined) {
        // The same data, the same client, the other build as the server (from a cold start, as this one's first answers were).
        await server.restart(async () => {}, opts.compareMain);
        await awaitCompaction(server, metrics);
        // Until the restarted server knows each metric's watermark again (its first answers have none).
        for (const m of metrics)
          while (
            (
              await server.api(
                'GET',
                server.aggregationPath(m.id, {
                  time_range: 'last_hour',
                  interval: 'minute',
                  values: 'count',
                  coverage_mode: 'observed',
                  timezone: 'UTC',
                }),
              )
            ).complete_through_at === null
          )
            await sleep(250);
        say(`restarted as ${opts.compareMain}`);
        await queries(compared);
      }
    }
    const lag = opts.parts.includes('lag') ? await lagRun(server, metrics[0]!) : null;
    report(backfills, runs, lag, command);
    if (backlog !== null) backlogReport(backlog.runs, metrics[0]!.name);
    if (compared.length > 0) compareReport(runs, compared);
  } catch (err) {
    // A request that failed because the server died says only "fetch failed": say why it died.
    await sleep(200);
    const note = server.deathNote();
    if (note !== null) process.stderr.write(`${note}\n`);
    throw err;
  } finally {
    scanner?.close();
    await server.stop();
  }
}

function report(backfills: BackfillRow[], runs: QueryRun[], lag: LagRun | null, command: string): void {
  say(`\n${command}`);
  console.table(
    backfills.map((b) => ({
      metric: b.metric.name,
      series: b.metric.series,
      records: fmt(opts.records),
      'backfill s': b.seconds.toFixed(1),
      'records/s': fmt(opts.records / b.seconds),
    })),
  );
  if (runs.length > 0) {
    console.table(runs.map(queryRow));
    say(
      `rollup: ${opts.queryRepeats} timed GETs per query over HTTP (fetch, keep-alive), 2 untimed first; raw: DuckDB in the bench process, ${opts.rawRepeats} timed scans, 1 untimed first; coverage_mode=${opts.coverage}`,
    );
    const q24 = runs.find((r) => r.metric.series === REGIONS && r.query.interval === 'minute');
    if (q24)
      say(`target — 24 h by minute, 10 series: p50 ${quantile(q24.rollupMs, 0.5).toFixed(2)} ms (target < 20 ms)`);
    const long = runs
      .filter((r) => r.query.spanMs >= 30 * DAY)
      .map((r) => quantile(r.rawMs, 0.5) / quantile(r.rollupMs, 0.5));
    if (long.length)
      say(
        `target — 30-day ranges, raw ÷ rollup: ${long.map((x) => x.toFixed(1)).join(', ')} (lowest ${Math.min(...long).toFixed(1)}×; target ≥ 20×)`,
      );
    const worst = (values: string[]) =>
      Math.max(0, ...runs.flatMap((r) => r.errors.filter((e) => values.includes(e.value)).map((e) => e.max)));
    say(
      `target — percentile max relative error ${(100 * worst(['p50', 'p95', 'p99'])).toFixed(3)} % (≤ 1 %), distinct count ${(100 * worst(['count_unique'])).toFixed(3)} % (≤ 2 %), counts max Δ ${worst(['count'])} (0), sums ${(100 * worst(['sum'])).toExponential(1)} %`,
    );
    const bound = (value: string) =>
      value === 'count' ? 0 : value === 'sum' ? 1e-9 : value === 'count_unique' ? 0.02 : 0.01;
    for (const r of runs) {
      for (const e of r.errors) {
        if (e.worst && e.max > bound(e.value))
          say(
            `  over its bound — ${r.metric.name}, ${r.query.name}, ${e.value}: ${JSON.stringify({ ...e.worst, bucket: new Date(e.worst.bucket).toISOString() })}`,
          );
      }
      // Whether a distinct count's error is the sketch's own: the same sketch made here over the cell's exact values.
      const u = r.errors.find((e) => e.value === 'count_unique');
      if (u?.worst && r.directSketch !== null) {
        const direct = r.directSketch;
        say(
          `  count_unique worst cell — ${r.metric.name}, ${u.worst.group} ${new Date(u.worst.bucket).toISOString()}: answer ${u.worst.got}, exact ${u.worst.want}, DistinctSketch over the exact values ${direct.toFixed(1)} (${Math.round(direct) === u.worst.got ? "the same: the error is the sketch's own" : 'differs: the rollups changed it'})`,
        );
      }
    }
  }
  if (lag) {
    const l = lag.result;
    const counted = l.lags.filter(Number.isFinite);
    console.table([
      {
        'burst to files rec/s': fmt(lag.burstRate),
        'burst counted rec/s': fmt(lag.burstCounted / lag.burstCountedS),
        'offered rec/s': fmt(lag.rate),
        'achieved rec/s': fmt(l.load.achievedRate * opts.lagBatch),
        requests: fmt(l.lags.length),
        // Uncounted requests are infinitely late: they weigh in the p99 and the max.
        'lag p50 ms': msOrNever(quantile(l.lags, 0.5)),
        'lag p99 ms': msOrNever(quantile(l.lags, 0.99)),
        'lag max ms': msOrNever(quantile(l.lags, 1)),
        uncounted: l.lags.length - counted.length,
        '202 p99 ms': quantile(l.load.latencies, 0.99).toFixed(1),
        polls: l.polls,
        poll: opts.lagPollRange,
        'poll p50 ms': quantile(l.pollMs, 0.5).toFixed(1),
        'poll p99 ms': quantile(l.pollMs, 0.99).toFixed(1),
      },
    ]);
    say(
      `target — ingest → counted p99 ${msOrNever(quantile(l.lags, 0.99))} ms at ${fmt(lag.rate)} records/s (target < 2,000 ms); ${opts.lagBatch} records per request, ${opts.lagSeconds} s`,
    );
  }
  say(`load average after: ${load()}`);
}

/** The queries timed while the compaction backlog waited (p99 target ≤ 250 ms). */
function backlogReport(runs: readonly BacklogRun[], metric: string): void {
  const timed = runs.filter((r) => r.ms.length > 0);
  if (timed.length === 0) {
    say('\nbacklog: none left to time (compaction had finished when the backfills did)');
    return;
  }
  const ms = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
  say(`\nwhile the compaction backlog waited (${metric}, one request at a time):`);
  console.table(
    timed.map((r) => ({
      query: r.query.name,
      coverage: r.coverage,
      answers: r.ms.length,
      'p50 ms': ms(quantile(Float64Array.from(r.ms), 0.5)),
      'p99 ms': ms(quantile(Float64Array.from(r.ms), 0.99)),
      'max ms': ms(quantile(Float64Array.from(r.ms), 1)),
      'marked partial': r.marked,
    })),
  );
  const worst = Math.max(...timed.map((r) => quantile(Float64Array.from(r.ms), 0.99)));
  say(`target — while a backlog waits: p99 ≤ 250 ms (worst query and mode here: ${ms(worst)} ms)`);
}

/** This build's runs beside the other build's (BENCH_COMPARE_MAIN) on the same data. */
function compareReport(runs: readonly QueryRun[], other: readonly QueryRun[]): void {
  const ms = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
  say(`\nthis build beside ${opts.compareMain} (after it, same data dir and client):`);
  console.table(
    runs.map((r, i) => {
      const o = other[i]!;
      const [p, q] = [quantile(r.rollupMs, 0.5), quantile(o.rollupMs, 0.5)];
      return {
        metric: r.metric.name,
        query: r.query.name,
        'other first ms': ms(o.firstMs),
        'other p50 ms': ms(q),
        'other p99 ms': ms(quantile(o.rollupMs, 0.99)),
        'other raw ÷ rollup': (quantile(o.rawMs, 0.5) / q).toFixed(1),
        'this first ms': ms(r.firstMs),
        'this p50 ms': ms(p),
        'this p99 ms': ms(quantile(r.rollupMs, 0.99)),
        'this raw ÷ rollup': (quantile(r.rawMs, 0.5) / p).toFixed(1),
        'p50 other ÷ this': (q / p).toFixed(1),
      };
    }),
  );
  const long = (rs: readonly QueryRun[]) =>
    rs
      .filter((r) => r.query.spanMs >= 30 * DAY)
      .map((r) => (quantile(r.rawMs, 0.5) / quantile(r.rollupMs, 0.5)).toFixed(1))
      .join(', ');
  say(`30-day ranges, raw ÷ rollup: this build ${long(runs)}; other ${long(other)}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
