/**
 * Ingest benchmark (`npm run bench:ingest`): a real Sluice (child process, durable acks) against a
 * reference server (bare uWS + JSON.parse per line + one LMDB value per body, also durable) in the
 * same run, over 127.0.0.1. Scenarios: NDJSON batches of 1000 × ~200 B records, single-record
 * POSTs, and WebSocket frames (batched and single). Prints records/s, MB/s, p50/p99, server CPU per
 * request and Sluice ÷ reference.
 *
 * HTTP load comes from wrk when it is on PATH (`apt-get install wrk`; BENCH_LOADGEN=node forces the
 * Node generator), WebSocket load from the Node generator in load.ts. Environment:
 * BENCH_SECONDS (default 5) per measured run; BENCH_ROUNDS (default 1) interleaved reference/Sluice
 * rounds, median ratio reported; BENCH_ONLY=single,ws… runs only matching scenarios;
 * BENCH_SOAK_SECONDS=60 adds a sustained-load memory soak of Sluice alone.
 *
 * Open loop (scenario `HTTP single record open-loop`, BENCH_ONLY=open): single-record POSTs at a
 * fixed offered rate — half the reference's closed-loop maximum measured in the same run, or
 * BENCH_OPEN_RATE req/s — against both servers; p50/p99/max counted from each request's scheduled
 * send time (open-loop.ts), so queueing shows instead of being hidden by a client that waits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { sluiceNodeFlags } from '../sluice-node-flags.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChild } from '../../test/helpers/child.js';
import { httpLoad, quantile, wsLoad, type HttpLoad, type LoadResult } from './load.js';
import { openLoopLoad } from './open-loop.js';
import { hasWrk, wrkLoad } from './wrk.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** Only scenarios whose name contains one of these (comma-separated, case-insensitive). */
const ONLY = (process.env.BENCH_ONLY ?? '')
  .toLowerCase()
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
/** After the scenarios, a sustained mixed load on Sluice alone for this many seconds, sampling its memory. */
const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 0);
/** Each scenario runs reference then Sluice this many times (interleaved); the median ratio is reported. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
/** wrk when installed (`apt-get install wrk`) unless BENCH_LOADGEN=node. */
const USE_WRK = process.env.BENCH_LOADGEN !== 'node' && hasWrk();
const WARMUP_MS = 1000;
/** Offered rate of the open-loop scenario, req/s (default: half the reference's closed-loop single-record maximum). */
const OPEN_RATE = Number(process.env.BENCH_OPEN_RATE ?? 0);
/** Keep-alive connections of the open-loop generator (a request waits in the generator when all are busy). */
const OPEN_CONNECTIONS = Number(process.env.BENCH_OPEN_CONNECTIONS ?? 512);
const OPEN_LOOP = 'HTTP single record open-loop';
const SLUICE_NODE_FLAGS = sluiceNodeFlags();
const KEY = 'slk_bench_bootstrap_key_000000000000000000';

/** A ~200-byte event record. */
function record(i: number): string {
  return JSON.stringify({
    timestamp: 1767225600000 + i,
    event: 'page_view',
    user_id: `user_${i % 10_000}`,
    session_id: `s_${(i * 7919) % 1_000_003}`,
    path: `/products/${i % 500}/reviews`,
    referrer: 'https://search.example/q',
    duration_ms: i % 5000,
    ok: i % 7 !== 0,
  });
}

const batch = Buffer.from(Array.from({ length: 1000 }, (_, i) => record(i)).join('\n'));
const single = Buffer.from(record(42));

interface Target {
  name: 'reference' | 'sluice';
  port: number;
  path: string;
  pid: number;
  stop(): Promise<void>;
}

async function startReference(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-ref-'));
  const script = fileURLToPath(new URL('./reference-server.js', import.meta.url));
  const proc: ChildProcess = spawn(process.execPath, [script, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`reference server exited ${code}`)));
  });
  return {
    name: 'reference',
    port,
    path: '/ingest',
    pid: proc.pid!,
    async stop() {
      proc.kill('SIGKILL');
      await new Promise((r) => proc.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startSluice(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  // Ingest only (the pipeline has its own benchmark): nothing drains the spool, so lift the queue limit.
  const child = await startChild(
    {
      SLUICE_DATA_DIR: dir,
      SLUICE_BOOTSTRAP_KEY: KEY,
      SLUICE_MAX_PENDING_RECORDS: '1000000000',
      SLUICE_LOG_LEVEL: 'warn',
      SLUICE_PIPELINE: '0',
    },
    20_000,
    SLUICE_NODE_FLAGS,
  );
  const call = async (path: string, body: unknown) => {
    const res = await fetch(child.url + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return ((await res.json()) as { data: { id: string; key: string } }).data;
  };
  const project = await call('/v1/projects', { name: 'bench' });
  const source = await call(`/v1/projects/${project.id}/sources`, { name: 'bench' });
  const key = await call(`/v1/projects/${project.id}/sources/${source.id}/ingest_keys`, {});
  return {
    name: 'sluice',
    port: Number(new URL(child.url).port),
    path: `/ingest?key=${key.key}`,
    pid: child.proc.pid!,
    async stop() {
      child.proc.kill('SIGTERM');
      await child.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A field of /proc/<pid>/status in MB (VmRSS: all resident; RssAnon: heap and other private memory, not the LMDB map). */
function statusMb(pid: number, field: 'VmRSS' | 'RssAnon' = 'VmRSS'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

/** CPU seconds (user + system, all threads) the process has used so far. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

/** HTTP load with wrk when available, else the Node raw-socket generator (with fewer connections: it shares the CPU). */
function http(
  opts: Omit<HttpLoad, 'connections'> & { connections: number; nodeConnections: number },
): Promise<LoadResult> {
  if (USE_WRK) return wrkLoad(opts);
  return httpLoad({ ...opts, connections: opts.nodeConnections });
}

interface Scenario {
  name: string;
  recordsPer: number;
  bytesPer: number;
  run(t: Target, ms: number): Promise<LoadResult>;
}

const scenarios: Scenario[] = [
  {
    name: 'HTTP NDJSON 1000 rec',
    recordsPer: 1000,
    bytesPer: batch.length,
    run: (t, ms) =>
      http({
        port: t.port,
        path: t.path,
        body: batch,
        contentType: 'application/x-ndjson',
        connections: 4,
        nodeConnections: 4,
        durationMs: ms,
      }),
  },
  {
    name: 'HTTP single record',
    recordsPer: 1,
    bytesPer: single.length,
    // Enough connections that group commit batches many requests per fdatasync.
    run: (t, ms) =>
      http({
        port: t.port,
        path: t.path,
        body: single,
        contentType: 'application/json',
        connections: 256,
        nodeConnections: 32,
        durationMs: ms,
      }),
  },
  {
    name: 'WS frames 1000 rec',
    recordsPer: 1000,
    bytesPer: batch.length,
    run: (t, ms) =>
      wsLoad({ url: `http://127.0.0.1:${t.port}${t.path}`, frame: batch, connections: 4, window: 2, durationMs: ms }),
  },
  {
    name: 'WS frames 1 rec',
    recordsPer: 1,
    bytesPer: single.length,
    run: (t, ms) =>
      wsLoad({ url: `http://127.0.0.1:${t.port}${t.path}`, frame: single, connections: 8, window: 32, durationMs: ms }),
  },
];

interface Row {
  scenario: string;
  server: string;
  'records/s': number;
  'MB/s': number;
  'req/s': number;
  'p50 ms': number;
  'p99 ms': number;
  /** Server CPU (all threads, user + system) per request or frame, from /proc: independent of machine load. */
  'cpu µs/req': number;
  failed: number;
  'rss MB': string;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

async function main(): Promise<void> {
  const loadgen = USE_WRK
    ? 'wrk (HTTP) + Node (WebSocket)'
    : 'Node raw sockets (install wrk for HTTP: apt-get install wrk)';
  process.stdout.write(
    `ingest benchmark: ${SECONDS} s per run after ${WARMUP_MS} ms warm-up; record ${single.length} B, batch ${batch.length} B; load: ${loadgen}; Sluice node flags: ${SLUICE_NODE_FLAGS.join(' ') || 'none'}\n`,
  );
  const rows: Row[] = [];
  const ratios: string[] = [];
  /** The reference's closed-loop single-record req/s of each round (the open loop offers half their median). */
  const referenceSingle: number[] = [];
  for (const scenario of scenarios) {
    if (!selected(scenario.name)) continue;
    const roundRatios: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const perServer: Record<string, number> = {};
      for (const start of [startReference, startSluice]) {
        const target = await start();
        try {
          await scenario.run(target, WARMUP_MS);
          const rssBefore = statusMb(target.pid);
          const cpuBefore = cpuSeconds(target.pid);
          const r = await scenario.run(target, SECONDS * 1000);
          const cpu = cpuSeconds(target.pid) - cpuBefore;
          const rssAfter = statusMb(target.pid);
          const reqs = r.ok / r.seconds;
          perServer[target.name] = reqs * scenario.recordsPer;
          rows.push({
            scenario: ROUNDS > 1 ? `${scenario.name} #${round}` : scenario.name,
            server: target.name,
            'records/s': Math.round(reqs * scenario.recordsPer),
            'MB/s': Math.round((reqs * scenario.bytesPer) / 1e5) / 10,
            'req/s': Math.round(reqs),
            'p50 ms': round2(r.p50Ms ?? quantile(r.latencies, 0.5)),
            'p99 ms': round2(r.p99Ms ?? quantile(r.latencies, 0.99)),
            'cpu µs/req': r.ok > 0 ? Math.round((cpu * 1e6) / (r.ok + r.failed)) : NaN,
            failed: r.failed,
            'rss MB': `${rssBefore} → ${rssAfter}`,
          });
        } finally {
          await target.stop();
        }
      }
      roundRatios.push(perServer.sluice! / perServer.reference!);
      if (scenario.recordsPer === 1 && scenario.name.startsWith('HTTP')) referenceSingle.push(perServer.reference!);
    }
    const sorted = [...roundRatios].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
    ratios.push(
      `${scenario.name}: Sluice ÷ reference = ${median.toFixed(2)}${ROUNDS > 1 ? ` (median of ${roundRatios.map((x) => x.toFixed(2)).join(', ')})` : ''}`,
    );
  }
  if (rows.length > 0) console.table(rows);
  for (const line of ratios) process.stdout.write(`${line}\n`);
  if (selected(OPEN_LOOP)) await openLoop(referenceSingle);
  if (SOAK_SECONDS > 0) await soak(SOAK_SECONDS);
}

function selected(name: string): boolean {
  return ONLY.length === 0 || ONLY.some((o) => name.toLowerCase().includes(o));
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Single-record POSTs at a fixed offered rate against the reference and Sluice, interleaved per
 * round: latency from each request's scheduled send time (p50/p99/max), achieved answer rate. The
 * rate is BENCH_OPEN_RATE, else half the median of the reference's closed-loop maxima measured
 * above (measured here first when that scenario was not run).
 */
async function openLoop(referenceSingle: number[]): Promise<void> {
  let rate = OPEN_RATE;
  if (!(rate > 0)) {
    if (referenceSingle.length === 0) {
      const ref = await startReference();
      try {
        const single1 = scenarios.find((s) => s.name === 'HTTP single record')!;
        await single1.run(ref, WARMUP_MS);
        const r = await single1.run(ref, SECONDS * 1000);
        referenceSingle.push(r.ok / r.seconds);
      } finally {
        await ref.stop();
      }
    }
    rate = Math.round(median(referenceSingle) / 2);
  }
  process.stdout.write(
    `\n${OPEN_LOOP}: ${rate} req/s offered (${OPEN_RATE > 0 ? 'BENCH_OPEN_RATE' : "half the reference's closed-loop maximum"}), ${OPEN_CONNECTIONS} connections, ${SECONDS} s per run\n`,
  );
  const rows: Record<string, string | number>[] = [];
  const p99s: Record<string, number[]> = { reference: [], sluice: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const start of [startReference, startSluice]) {
      const target = await start();
      try {
        const load = (ms: number) =>
          openLoopLoad({
            port: target.port,
            path: target.path,
            body: single,
            contentType: 'application/json',
            rate,
            connections: OPEN_CONNECTIONS,
            durationMs: ms,
          });
        await load(WARMUP_MS);
        const cpuBefore = cpuSeconds(target.pid);
        const r = await load(SECONDS * 1000);
        const cpu = cpuSeconds(target.pid) - cpuBefore;
        const p99 = quantile(r.latencies, 0.99);
        p99s[target.name]!.push(p99);
        rows.push({
          scenario: ROUNDS > 1 ? `${OPEN_LOOP} #${round}` : OPEN_LOOP,
          server: target.name,
          'offered/s': rate,
          'answered/s': Math.round(r.achievedRate),
          'p50 ms': round2(quantile(r.latencies, 0.5)),
          'p99 ms': round2(p99),
          'max ms': round2(r.latencies.length > 0 ? r.latencies.reduce((a, b) => Math.max(a, b), 0) : NaN),
          'cpu µs/req': r.ok > 0 ? Math.round((cpu * 1e6) / (r.ok + r.failed)) : NaN,
          failed: r.failed,
          unanswered: r.unanswered,
          'max backlog': r.maxBacklog,
        });
      } finally {
        await target.stop();
      }
    }
  }
  console.table(rows);
  process.stdout.write(
    `${OPEN_LOOP}: p99 at ${rate} req/s: reference ${round2(median(p99s.reference!))} ms, Sluice ${round2(median(p99s.sluice!))} ms (median of ${ROUNDS})\n`,
  );
}

/**
 * Memory under sustained load: single-record POSTs (256 connections) and NDJSON batches
 * (2 connections) against Sluice for `seconds`, sampling the child's /proc status every few
 * seconds. RssAnon is the server's own memory (heap, buffers); VmRSS also counts the LMDB map's
 * resident pages, which grow with the spool since nothing drains it here.
 */
async function soak(seconds: number): Promise<void> {
  const target = await startSluice();
  try {
    const ms = seconds * 1000;
    const samples: { t: number; rss: number; anon: number }[] = [];
    const t0 = performance.now();
    const sample = () =>
      samples.push({
        t: Math.round((performance.now() - t0) / 1000),
        rss: statusMb(target.pid),
        anon: statusMb(target.pid, 'RssAnon'),
      });
    sample();
    const timer = setInterval(sample, Math.max(1000, Math.min(5000, ms / 12)));
    const [singles, batches] = await Promise.all([
      http({
        port: target.port,
        path: target.path,
        body: single,
        contentType: 'application/json',
        connections: 256,
        nodeConnections: 32,
        durationMs: ms,
      }),
      http({
        port: target.port,
        path: target.path,
        body: batch,
        contentType: 'application/x-ndjson',
        connections: 2,
        nodeConnections: 2,
        durationMs: ms,
      }),
    ]);
    clearInterval(timer);
    sample();
    const first = samples[0]!;
    // The first seconds are warm-up (JIT, lmdb buffers): compare against the sample after them.
    const warm = samples.find((s) => s.t >= Math.min(10, seconds / 4)) ?? first;
    const last = samples[samples.length - 1]!;
    const maxAnon = Math.max(...samples.map((s) => s.anon));
    const maxRss = Math.max(...samples.map((s) => s.rss));
    process.stdout.write(
      `\nsoak ${seconds} s (Sluice only): ${Math.round(singles.ok / singles.seconds)} single req/s + ${Math.round(batches.ok / batches.seconds)} NDJSON req/s, ` +
        `failed ${singles.failed + batches.failed}\n` +
        `  samples (s: VmRSS/RssAnon MB): ${samples.map((s) => `${s.t}: ${s.rss}/${s.anon}`).join(', ')}\n` +
        `  RssAnon first ${first.anon} → after warm-up (${warm.t} s) ${warm.anon} → last ${last.anon}, max ${maxAnon} MB; ` +
        `VmRSS first ${first.rss} → last ${last.rss}, max ${maxRss} MB\n`,
    );
  } finally {
    await target.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
