/**
 * End to end (`npm run bench:e2e`): NDJSON over HTTP into a real Sluice (a child process on a fresh
 * data dir) until every record is in collection files. The clock runs from the first request to
 * the moment the project's queue (GET …/pipeline/live: pending and processing records) is empty
 * after the last 202 — the spool drained and the files committed in the same LMDB transaction.
 *
 * Inputs, each into one collection of its own server: `flat` (~200-byte records, 10 shapes, as in
 * bench/pipeline), `nested` (2–5 KB statuses with nested objects, arrays of objects, optional keys,
 * nulls, 24 shapes, several key orders: bench/transform/nested-records.ts) and `mixed` (half of each,
 * bodies interleaved, into the same collection). Each runs with SLUICE_WORKERS=1 and with one worker
 * per CPU; the same run measures the bound — JSON.parse of the same lines on every core — and shows
 * each scenario as a share of it. BENCH_VIEW=1 (or --view) adds a run of each scenario with one
 * manual 5-field view on the collection; BENCH_METRIC=1 (or --metric) also one with the view and one
 * metric on it (bench-metric.ts), whose clock runs until the metric counts every record. Knobs:
 * options.ts (BENCH_*); docs/benchmarks.md.
 */
import { availableParallelism, loadavg } from 'node:os';
import { sluiceNodeFlags } from '../sluice-node-flags.js';
import { makeNdjsonBodies } from '../pipeline/records.js';
import { makeNestedRecords, NESTED_SHAPES } from '../transform/nested-records.js';
import { FLAT_VIEW, MIXED_VIEW, NESTED_VIEW, type ViewScript } from '../transform/view-scripts.js';
import { readOptions, type InputName } from './options.js';
import { measureParseBound, type ParseBound } from './parse-bound.js';
import { BenchServer, type ViewSetup } from './sluice-server.js';
import { benchMetricBody, metricCounted } from './bench-metric.js';
import { sendAndDrain } from './drain.js';
import type { PipelineCounters } from '../../src/pipeline/runner.js';

const opts = readOptions();
const CORES = availableParallelism();
/** Once the spool is drained, how long a view with no records yet is waited for. */
const VIEW_GRACE_MS = 5_000;

interface Input {
  name: InputName;
  bodies: Buffer[];
  records: number[];
  view: ViewScript;
  shapes: string;
}

function flatBodies(n: number): { bodies: Buffer[]; records: number[] } {
  const bodies: Buffer[] = [];
  const records: number[] = [];
  // Every record distinct (offsets differ): nothing repeated for the compressor to find.
  for (let at = 0; at < n; at += opts.batch) {
    const size = Math.min(opts.batch, n - at);
    bodies.push(Buffer.from(makeNdjsonBodies(1, size, at, 'flat')[0]!));
    records.push(size);
  }
  return { bodies, records };
}

function nestedBodies(n: number): { bodies: Buffer[]; records: number[] } {
  const bodies: Buffer[] = [];
  const records: number[] = [];
  const chunk = opts.batch * 20;
  for (let at = 0; at < n; at += chunk) {
    // A seed per chunk keeps memory bounded while generating; every record is still distinct.
    const all = makeNestedRecords(Math.min(chunk, n - at), 1000 + at, { keyOrders: opts.keyOrders });
    for (let i = 0; i < all.length; i += opts.batch) {
      const part = all.slice(i, i + opts.batch);
      bodies.push(Buffer.from(part.map((r) => JSON.stringify(r)).join('\n')));
      records.push(part.length);
    }
  }
  return { bodies, records };
}

const cache = new Map<'flat' | 'nested', { bodies: Buffer[]; records: number[] }>();
function data(kind: 'flat' | 'nested') {
  let d = cache.get(kind);
  if (!d) {
    const t0 = performance.now();
    d = kind === 'flat' ? flatBodies(opts.flatRecords) : nestedBodies(opts.nestedRecords);
    cache.set(kind, d);
    process.stdout.write(
      `generated ${kind}: ${sum(d.records).toLocaleString('en-US')} records in ${d.bodies.length} bodies, ${mb(sum(d.bodies.map((b) => b.length)))} MB (${((performance.now() - t0) / 1000).toFixed(1)} s, untimed)\n`,
    );
  }
  return d;
}

function input(name: InputName): Input {
  if (name === 'flat') return { name, ...data('flat'), view: FLAT_VIEW, shapes: '10' };
  if (name === 'nested') return { name, ...data('nested'), view: NESTED_VIEW, shapes: String(NESTED_SHAPES) };
  // Half of each kind, spread evenly through the run: one collection, both kinds of producer.
  const half = (d: { bodies: Buffer[]; records: number[] }) => {
    const n = Math.ceil(d.bodies.length / 2);
    return d.bodies.slice(0, n).map((body, i) => ({ at: (i + 0.5) / n, body, records: d.records[i]! }));
  };
  const merged = [...half(data('flat')), ...half(data('nested'))].sort((x, y) => x.at - y.at);
  const bodies = merged.map((m) => m.body);
  const records = merged.map((m) => m.records);
  return { name, bodies, records, view: MIXED_VIEW, shapes: `10 + ${NESTED_SHAPES}` };
}

/** What sits on the collection: nothing, one view, or one view with one metric on it. */
type Extra = 'none' | 'view' | 'metric';
/** Which build a scenario ran on: this one, or BENCH_BASELINE's. */
type Build = 'this' | 'base';
const BUILDS: Build[] = opts.baseline ? ['base', 'this'] : ['this'];

interface Measured {
  build: Build;
  /** Which of the BENCH_REPEATS rounds (0-based). */
  round: number;
  input: InputName;
  workers: number;
  extra: Extra;
  records: number;
  bytes: number;
  seconds: number;
  /** First request → queue empty (for `metric` runs `seconds` runs on until the metric counts everything). */
  drainSeconds: number;
  ackSeconds: number;
  maxPending: number;
  refusals: number;
  cpuSeconds: number;
  /** CPU of the server's sandbox processes over the run (children that ended during it are missed). */
  sandboxCpuSeconds: number;
  mainCpuSeconds: number;
  /** CPU of the `workers` busiest threads other than the main one (the pipeline's worker threads). */
  workerCpuSeconds: number;
  /** The rest of the server's threads: V8's GC helpers, libuv's pool (LMDB, files). */
  helperCpuSeconds: number;
  clientCpuSeconds: number;
  versions: number;
  fileRows: number;
  rssMb: number;
  /** The runner's counters over the timed part (null: the build does not report them). */
  pipeline: PipelineCounters | null;
  /** The counters at the start of the timed part (what the warm-up did: how warm each worker is). */
  warm: PipelineCounters | null;
  note: string;
}

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

let viewRefused: string | null = null;
/** The runs of each scenario, in order: bare, then with a view, then with a view and a metric. */
const extras: Extra[] = [
  'none',
  ...(opts.view ? (['view'] as const) : []),
  ...(opts.metric ? (['metric'] as const) : []),
];
const EXTRA_LABEL: Record<Extra, string> = { none: '', view: ', view', metric: ', view + metric' };

/** How long a metric still counting after the drain is waited for. */
const METRIC_GRACE_MS = 120_000;

async function scenario(inp: Input, workers: number, extra: Extra, build: Build): Promise<Measured | null> {
  const withView = extra !== 'none';
  const server =
    build === 'base'
      ? await BenchServer.start(workers, opts.baseline!, opts.baselineNodeFlags ?? sluiceNodeFlags())
      : await BenchServer.start(workers);
  try {
    let setup: ViewSetup | null = null;
    let metricId: string | null = null;
    if (withView) {
      setup = await server.createView(inp.view);
      if (!setup.ok) {
        viewRefused = setup.reason;
        process.stdout.write(
          `\n!! VIEW REFUSED by the API — the "with view" runs are skipped:\n   ${setup.reason}\n\n`,
        );
        return null;
      }
      if (extra === 'metric') metricId = await server.createMetric(benchMetricBody(inp.name, setup.id));
    }
    const warmBodies =
      opts.warmupPercent === 0 ? 0 : Math.max(1, Math.floor((inp.bodies.length * opts.warmupPercent) / 100));
    // Every worker warm, not only the first: each round is a few batches, and a worker thread's
    // first batches cost up to 1.6× the CPU per record (JIT, parquet-wasm's tier-up), so one round
    // left the second worker cold for the timed part (docs/benchmarks.md, "2w ÷ 1w").
    const rounds = warmBodies === 0 ? 0 : Math.max(1, opts.warmupRounds * workers);
    const warmRecords = rounds * sum(inp.records.slice(0, warmBodies));
    for (let round = 0; round < rounds; round++)
      await sendAndDrain(server, inp.bodies.slice(0, warmBodies), inp.records.slice(0, warmBodies), opts.connections);
    const cpu0 = server.cpuSeconds();
    const children0 = server.childCpuSeconds();
    const main0 = server.mainThreadCpuSeconds();
    const threads0 = server.threadCpuSeconds();
    const counters0 = await server.pipelineCounters();
    const client0 = process.cpuUsage();
    const { sent, drainedAt, maxPending } = await sendAndDrain(server, inp.bodies, inp.records, opts.connections);
    const cpuSeconds = server.cpuSeconds() - cpu0;
    let sandboxCpuSeconds = 0;
    for (const [pid, s] of server.childCpuSeconds()) sandboxCpuSeconds += s - (children0.get(pid) ?? 0);
    const mainCpuSeconds = server.mainThreadCpuSeconds() - main0;
    const { workerCpuSeconds, helperCpuSeconds } = splitThreads(
      server.pid,
      threads0,
      server.threadCpuSeconds(),
      workers,
    );
    const client = process.cpuUsage(client0);
    const counters1 = await server.pipelineCounters();
    const pipeline = counters0 && counters1 ? counterDelta(counters0, counters1) : null;
    const expected = sum(inp.records);
    if (sent.records !== expected) throw new Error(`sent ${sent.records} records, expected ${expected}`);
    const notes: string[] = [];
    let endAt = drainedAt;
    if (metricId !== null) {
      const want = expected + warmRecords;
      const c = await metricCounted(server, metricId, want, METRIC_GRACE_MS);
      endAt = Math.max(drainedAt, c.at);
      if (c.counted !== want)
        notes.push(`METRIC COUNTED ${c.counted} of ${want} records ${METRIC_GRACE_MS / 1000} s after the drain`);
    }
    const { rows, versions } = await server.versions();
    const unclassified = await server.unclassifiedRows();
    const fileRows = await server.fileRows();
    const stored = expected + warmRecords;
    if (fileRows !== stored) notes.push(`ROWS IN FILES ${fileRows} ≠ ${stored} sent (warm-up included)`);
    // The API's own account of the rows (what a user sees), checked against the files.
    if (rows + unclassified !== fileRows)
      notes.push(
        `schema versions' row_count sums to ${rows}${unclassified ? ` (+ ${unclassified} unclassified)` : ''}, the files hold ${fileRows}`,
      );
    const aside = await server.setAside();
    if (aside > 0) notes.push(`${aside} spool entries set aside`);
    if (setup?.ok) {
      let has = await server.viewHasRecords(setup.id);
      const until = performance.now() + VIEW_GRACE_MS;
      while (!has && performance.now() < until) {
        await sleep(250);
        has = await server.viewHasRecords(setup.id);
      }
      const v = await server.view(setup.id);
      if (!has)
        notes.push(
          `VIEW NOT PROCESSED: view ${v.status}${v.error_message ? ` (${v.error_message})` : ''}, no records after the drain`,
        );
      else if (v.status !== 'active') notes.push(`view ${v.status}${v.error_message ? `: ${v.error_message}` : ''}`);
    }
    return {
      build,
      round: 0,
      input: inp.name,
      workers,
      extra,
      records: expected,
      bytes: sent.bytes,
      seconds: (endAt - sent.firstSentAt) / 1000,
      drainSeconds: (drainedAt - sent.firstSentAt) / 1000,
      ackSeconds: (sent.lastAckAt - sent.firstSentAt) / 1000,
      maxPending,
      refusals: sent.refusals,
      cpuSeconds,
      sandboxCpuSeconds,
      mainCpuSeconds,
      workerCpuSeconds,
      helperCpuSeconds,
      clientCpuSeconds: (client.user + client.system) / 1e6,
      versions,
      fileRows,
      rssMb: server.rssMb(),
      pipeline,
      warm: counters0,
      note: notes.join('; '),
    };
  } finally {
    await server.stop();
  }
}

function counterDelta(a: PipelineCounters, b: PipelineCounters): PipelineCounters {
  const out = { ...b, threads: {} as PipelineCounters['threads'] };
  for (const k of Object.keys(b) as (keyof PipelineCounters)[]) if (k !== 'threads') out[k] = b[k] - a[k];
  for (const [id, t] of Object.entries(b.threads)) {
    const t0 = a.threads[Number(id)] ?? { tasks: 0, records: 0, cpuMs: 0 };
    if (t.tasks > t0.tasks)
      out.threads[Number(id)] = {
        tasks: t.tasks - t0.tasks,
        records: t.records - t0.records,
        cpuMs: t.cpuMs - t0.cpuMs,
      };
  }
  return out;
}

/** One line on what the pipeline did in a run: leases, re-runs and their wasted CPU, where the time went. */
function pipelineLine(r: Measured): string {
  const c = r.pipeline;
  if (!c) return 'no pipeline counters (the build does not report them)';
  const perRec = (ms: number) => ((ms * 1000) / r.records).toFixed(1);
  return (
    `leases ${c.leases} (${fmt(c.leasedRecords / Math.max(1, c.leases))} records avg), committed ${c.committed}, ` +
    `re-runs ${c.reruns} (${fmt(c.rerunRecords)} records), failed ${c.failed}; ` +
    `worker CPU ${perRec(c.workerCpuMs)} µs/rec of which wasted ${perRec(c.wastedWorkerCpuMs)}; ` +
    `workers waited for plans ${(c.planWaitMs / 1000).toFixed(2)} s; ` +
    `main thread: lease + pack ${perRec(c.packMs)}, plan ${perRec(c.planMs)}, commit staging ${perRec(c.commitStageMs)} µs/rec; ` +
    `warm-up tasks per worker thread ${
      r.warm
        ? Object.values(r.warm.threads)
            .map((t) => t.tasks)
            .join('/')
        : '?'
    }; ` +
    `per worker thread (tasks, records, CPU µs/rec): ${Object.values(c.threads)
      .map((t) => `${t.tasks}, ${fmt(t.records)}, ${((t.cpuMs * 1000) / Math.max(1, t.records)).toFixed(0)}`)
      .join(' | ')}`
  );
}

/**
 * The server's CPU over a run by kind of thread: the `workers` busiest threads other than the main
 * one are taken to be the pipeline's workers (they do the batches' CPU work), the rest are helpers.
 */
function splitThreads(
  pid: number,
  before: Map<number, number>,
  after: Map<number, number>,
  workers: number,
): { workerCpuSeconds: number; helperCpuSeconds: number } {
  const used: number[] = [];
  for (const [tid, s] of after) if (tid !== pid) used.push(s - (before.get(tid) ?? 0));
  used.sort((a, b) => b - a);
  return { workerCpuSeconds: sum(used.slice(0, workers)), helperCpuSeconds: sum(used.slice(workers)) };
}

async function main(): Promise<void> {
  process.stdout.write(
    `e2e benchmark: ${CORES} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; inputs ${opts.inputs.join(', ')}; ` +
      `${opts.batch} records per body over ${opts.connections} connections; SLUICE_WORKERS ${opts.workers.join(', ')}; runs ${extras.map((e) => (e === 'none' ? 'bare' : EXTRA_LABEL[e].slice(2))).join(', ')} (BENCH_VIEW=1 adds a view, BENCH_METRIC=1 a view + metric); ` +
      `server node flags: ${sluiceNodeFlags().join(' ') || 'none'}${opts.baselineNodeFlags ? ` (baseline build: ${opts.baselineNodeFlags.join(' ') || 'none'})` : ''}; warm-up ${opts.warmupPercent}% of the bodies ${opts.warmupRounds > 0 ? `× ${opts.warmupRounds} per worker` : 'once'}, untimed${opts.baseline ? `; each scenario on the baseline build first (${opts.baseline}), then on this one` : ''}\n`,
  );
  const results: Measured[] = [];
  const bounds = new Map<InputName, ParseBound>();
  for (const name of opts.inputs) {
    const inp = input(name);
    const bound = await measureParseBound(inp.bodies, CORES);
    bounds.set(name, bound);
    process.stdout.write(
      `${name} (${inp.shapes} shapes): JSON.parse bound on ${bound.threads} threads: ${fmt(bound.records / bound.seconds)} records/s, ${mb(bound.bytes / bound.seconds)} MB/s\n`,
    );
    // Rounds of every scenario (not one scenario N times): a slow spell of a shared machine then
    // lands in every scenario of one round, and ratios within a round stay fair.
    for (let round = 0; round < opts.repeats; round++) {
      for (const workers of opts.workers) {
        for (const extra of extras) {
          for (const build of BUILDS) {
            if (extra !== 'none' && viewRefused !== null) continue;
            const r = await scenario(inp, workers, extra, build);
            if (r === null) continue;
            r.round = round;
            results.push(r);
            process.stdout.write(
              `  ${name}, ${workers} worker(s)${EXTRA_LABEL[extra]}${opts.baseline ? `, ${build} build` : ''}${opts.repeats > 1 ? `, round ${round + 1}` : ''}: ${fmt(r.records / r.seconds)} records/s, ${mb(r.bytes / r.seconds)} MB/s${r.note ? ` — ${r.note}` : ''}\n`,
            );
          }
        }
      }
    }
  }
  console.table(
    results.map((r) => {
      const bound = bounds.get(r.input)!;
      return {
        ...(opts.baseline ? { build: r.build } : {}),
        input: r.input,
        workers: r.workers,
        on: r.extra === 'none' ? '—' : r.extra === 'view' ? 'view' : 'view + metric',
        records: fmt(r.records),
        MB: mb(r.bytes),
        's to files': r.drainSeconds.toFixed(2),
        // With a metric the clock runs until it counts every record; otherwise the same as `s to files`.
        's to end': r.seconds.toFixed(2),
        'records/s': fmt(r.records / r.seconds),
        'MB/s': mb(r.bytes / r.seconds),
        '÷ parse bound': (r.records / r.seconds / (bound.records / bound.seconds)).toFixed(3),
        's to last 202': r.ackSeconds.toFixed(2),
        'max pending': fmt(r.maxPending),
        '503s': r.refusals,
        // Server CPU (all threads) per record: what the work costs, less sensitive to a shared machine.
        'CPU µs/rec': ((r.cpuSeconds * 1e6) / r.records).toFixed(1),
        // Server CPU over the run, all threads and the main thread alone (100 % = one core busy).
        'server CPU %': ((100 * r.cpuSeconds) / r.seconds).toFixed(0),
        'main thread %': ((100 * r.mainCpuSeconds) / r.seconds).toFixed(0),
        // Per worker thread, on average: near 100 % the workers are busy the whole run.
        'per worker %': ((100 * r.workerCpuSeconds) / r.workers / r.seconds).toFixed(0),
        'helpers %': ((100 * r.helperCpuSeconds) / r.seconds).toFixed(0),
        // Where a record's CPU goes: main thread (ingest, leases, plans, commits), workers, helpers.
        'main/worker/helper µs/rec': [r.mainCpuSeconds, r.workerCpuSeconds, r.helperCpuSeconds]
          .map((c) => ((c * 1e6) / r.records).toFixed(0))
          .join('/'),
        // The view sandboxes' processes (not in the server's CPU): per record and over the run.
        'sandbox µs/rec': ((r.sandboxCpuSeconds * 1e6) / r.records).toFixed(1),
        'sandbox CPU %': ((100 * r.sandboxCpuSeconds) / r.seconds).toFixed(0),
        // The bench client shares the cores: what it took from the server, as a share of the run.
        'client CPU %': ((100 * r.clientCpuSeconds) / r.seconds).toFixed(0),
        versions: r.versions,
        'rows in files': fmt(r.fileRows),
        'rss MB': r.rssMb,
      };
    }),
  );
  for (const [name, b] of bounds) {
    process.stdout.write(
      `${name}: bound = JSON.parse on ${b.threads} threads, ${fmt(b.records / b.seconds)} records/s, ${mb(b.bytes / b.seconds)} MB/s (best of 3 passes over the same ${fmt(b.records)} lines)\n`,
    );
  }
  const rate = (r: Measured) => r.records / r.seconds;
  const runsOf = (input: InputName, workers: number, extra: Extra, build: Build) =>
    results.filter((r) => r.build === build && r.input === input && r.workers === workers && r.extra === extra);
  // The run of median records/s (the lower of the two middle ones for an even count).
  const find = (input: InputName, workers: number, extra: Extra, build: Build = 'this') => {
    const runs = runsOf(input, workers, extra, build).sort((a, b) => rate(a) - rate(b));
    return runs[(runs.length - 1) >> 1];
  };
  const [w1, wN] = [Math.min(...opts.workers), Math.max(...opts.workers)];
  const cpu = (r: Measured) => r.cpuSeconds / r.records;
  const allCpu = (r: Measured) => (r.cpuSeconds + r.sandboxCpuSeconds) / r.records;
  // With rounds: the view ratio of each round (its view run over its bare run), and their median.
  const perRound = (name: InputName, workers: number, build: Build): string => {
    if (opts.repeats === 1) return '';
    const ratios: number[] = [];
    for (let round = 0; round < opts.repeats; round++) {
      const of = (extra: Extra) => runsOf(name, workers, extra, build).find((r) => r.round === round);
      const [none, view] = [of('none'), of('view')];
      if (none && view) ratios.push(rate(view) / rate(none));
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    return ` (medians of ${opts.repeats} rounds; per round ${ratios.map((x) => x.toFixed(2)).join(', ')}, their median ${sorted[(sorted.length - 1) >> 1]!.toFixed(2)})`;
  };
  for (const name of opts.inputs) {
    for (const extra of extras) {
      for (const build of BUILDS) {
        const a = find(name, w1, extra, build);
        const b = find(name, wN, extra, build);
        if (a && b && w1 !== wN) {
          // What this machine allows: the 1-worker run already used more than one core (main
          // thread, helpers, the client), so N workers can at best use the CPUs the 1-worker run
          // left free, at the same CPU per record.
          const used = (a.cpuSeconds + a.sandboxCpuSeconds + a.clientCpuSeconds) / a.seconds;
          const ceiling = Math.min(wN / w1, CORES / used);
          process.stdout.write(
            `${name}${EXTRA_LABEL[extra]}${opts.baseline ? `, ${build} build` : ''}: ${wN}w ÷ ${w1}w = ${(rate(b) / rate(a)).toFixed(2)} ` +
              `(ceiling on ${CORES} cores ${ceiling.toFixed(2)}: the ${w1}w run used ${used.toFixed(2)} cores with the client; CPU µs/rec ${wN}w ÷ ${w1}w ${(cpu(b) / cpu(a)).toFixed(2)})\n`,
          );
        }
      }
      // This build against the baseline, same input and workers: throughput, and CPU per record.
      for (const workers of opts.baseline ? opts.workers : []) {
        const base = find(name, workers, extra, 'base');
        const mine = find(name, workers, extra, 'this');
        if (base && mine)
          process.stdout.write(
            `${name}${EXTRA_LABEL[extra]}, ${workers}w: this ÷ base = ${(rate(mine) / rate(base)).toFixed(2)} records/s, ${(cpu(mine) / cpu(base)).toFixed(2)} CPU µs/rec (server), ${(allCpu(mine) / allCpu(base)).toFixed(2)} (server + sandbox)\n`,
          );
      }
    }
    for (const workers of opts.workers)
      for (const build of BUILDS) {
        const none = find(name, workers, 'none', build);
        const view = find(name, workers, 'view', build);
        const metric = find(name, workers, 'metric', build);
        const label = opts.baseline ? `, ${build} build` : '';
        if (none && view)
          process.stdout.write(
            `${name}, ${workers}w${label}: with view ÷ without = ${(rate(view) / rate(none)).toFixed(2)}${perRound(name, workers, build)}; CPU µs/rec (server + sandbox) ${(allCpu(view) * 1e6).toFixed(1)} vs ${(allCpu(none) * 1e6).toFixed(1)}${view.note.includes('VIEW NOT PROCESSED') ? ' (the view made no records: not the cost of views)' : ''}\n`,
          );
        // The cost of one metric: the same view with and without it, in the same run.
        if (view && metric)
          process.stdout.write(
            `${name}, ${workers}w: view + metric ÷ view alone = ${(rate(metric) / rate(view)).toFixed(2)} (cost ${(100 * (1 - rate(metric) / rate(view))).toFixed(0)} %; CPU µs/rec ${((metric.cpuSeconds * 1e6) / metric.records).toFixed(1)} vs ${((view.cpuSeconds * 1e6) / view.records).toFixed(1)})\n`,
          );
      }
  }
  for (const r of results)
    process.stdout.write(
      `pipeline — ${r.input}, ${r.workers}w${EXTRA_LABEL[r.extra]}${opts.baseline ? `, ${r.build} build` : ''}: ${pipelineLine(r)}\n`,
    );
  for (const r of results)
    if (r.note)
      process.stdout.write(
        `note — ${r.input}, ${r.workers}w${EXTRA_LABEL[r.extra]}${opts.baseline ? `, ${r.build} build` : ''}: ${r.note}\n`,
      );
  if (viewRefused !== null) process.stdout.write(`VIEW REFUSED by the API, "with view" runs skipped: ${viewRefused}\n`);
  process.stdout.write(
    `load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
