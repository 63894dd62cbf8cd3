/**
 * `npm run bench:cli` — issue #26's two targets, on one real server build in one run:
 *
 * 1. `sluice ingest` of a BENCH_CLI_MB NDJSON file (default 1,024 MB; nested records as in
 *    bench/e2e) reaches ≥ 0.8× the throughput of the e2e bench's own client (send-ndjson.ts: raw
 *    keep-alive sockets, bodies prepared in memory before the clock starts) on the same records,
 *    with the CLI's peak RSS (VmHWM of /proc/<pid>/status) < 200 MB. The real binary (bin/sluice.js)
 *    runs as its own process with its defaults, `--ingest-key` and `--json`.
 * 2. `GET /metrics` answers in < 5 ms and costs < 1 % of ingest throughput when scraped every
 *    BENCH_SCRAPE_MS (default 5,000 ms, Prometheus' usual interval): the e2e client's run again
 *    with a scraper beside it, and the scrape latency p50/p99 during that run and over
 *    BENCH_SCRAPES back-to-back scrapes after it (under no ingest).
 *
 * Each run starts a fresh server (BenchServer: `npm start`'s Node flags, BENCH_WORKERS workers,
 * default one per CPU, SLUICE_METRICS_PUBLIC=1 so the scraper needs no key) and is timed twice:
 * first request → last acknowledgement ("ack", the client's throughput, what the CLI target is
 * about) and first request → spool drained into collection files ("drain"). The runs alternate
 * e2e → CLI → e2e+scraper, BENCH_ROUNDS times (default 1); ratios use the medians.
 *
 * BENCH_CLI_BASELINE=<another build's dist/src/cli/main.js> runs that CLI too, on the same file,
 * right before this build's in every round (e2e → baseline CLI → CLI → e2e+scraper), and prints
 * this CLI's throughput, peak RSS and CPU against it; the back-to-back scrapes then also run on
 * that build's server (dist/src/main.js next to its cli/), before this build's.
 *
 * On a shared 2-core machine the client shares the CPU with the server, so a client's own CPU
 * cost shows up as lower throughput: that is the point of the comparison. Run small to check it
 * works (BENCH_CLI_MB=64); the targets are judged at the default size on a quiet machine.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { integerKnob, OptionError } from '../knobs.js';
import { drained } from '../e2e/drain.js';
import { sendNdjson } from '../e2e/send-ndjson.js';
import { BenchServer } from '../e2e/sluice-server.js';
import { makeNestedRecords } from '../transform/nested-records.js';

const KNOBS = {
  BENCH_CLI_MB: 'size of the NDJSON file in MB, 1 to 16,384 (default 1,024)',
  BENCH_WORKERS: 'SLUICE_WORKERS of the server (default: one per CPU)',
  BENCH_BATCH: "records per body of the e2e client, as bench/e2e's BENCH_BATCH (default 500)",
  BENCH_CONNECTIONS: "the e2e client's connections, as bench/e2e (default 4)",
  BENCH_SCRAPE_MS: 'interval of the /metrics scraper during the scraped run, ms (default 5,000)',
  BENCH_SCRAPES: 'back-to-back scrapes timed after the scraped run (default 200)',
  BENCH_ROUNDS: 'rounds of e2e → CLI → e2e+scraper (default 1)',
  BENCH_CLI_BASELINE:
    "another build's CLI entry point (its dist/src/cli/main.js, e.g. /work/wt/base/dist/src/cli/main.js): it runs too, before this build's CLI in every round, and its server (dist/src/main.js) takes the back-to-back scrapes too (default: none)",
};

let opts: {
  mb: number;
  workers: number;
  batch: number;
  connections: number;
  scrapeMs: number;
  scrapes: number;
  rounds: number;
  baselineCli: string | null;
  baselineServer: string | null;
};
try {
  const raw = process.env.BENCH_CLI_BASELINE;
  const baselineCli = raw ? resolve(raw) : null;
  if (baselineCli && !existsSync(baselineCli))
    throw new OptionError(`BENCH_CLI_BASELINE="${raw}": ${baselineCli} does not exist — ${KNOBS.BENCH_CLI_BASELINE}`);
  const server = baselineCli ? join(dirname(dirname(baselineCli)), 'main.js') : null;
  opts = {
    mb: integerKnob(KNOBS, 'BENCH_CLI_MB', 1024, 1, 16_384),
    workers: integerKnob(KNOBS, 'BENCH_WORKERS', availableParallelism(), 1, 64),
    batch: integerKnob(KNOBS, 'BENCH_BATCH', 500, 1, 100_000),
    connections: integerKnob(KNOBS, 'BENCH_CONNECTIONS', 4, 1, 256),
    scrapeMs: integerKnob(KNOBS, 'BENCH_SCRAPE_MS', 5000, 100, 600_000),
    scrapes: integerKnob(KNOBS, 'BENCH_SCRAPES', 200, 1, 100_000),
    rounds: integerKnob(KNOBS, 'BENCH_ROUNDS', 1, 1, 10),
    baselineCli,
    baselineServer: server && existsSync(server) ? server : null,
  };
} catch (err) {
  if (err instanceof OptionError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
  throw err;
}

// Inherited by every server child (startChild passes process.env on): the scraper needs no key.
process.env.SLUICE_METRICS_PUBLIC = '1';

const CLI = fileURLToPath(new URL('../../../bin/sluice.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-cli-'));
const file = join(dir, 'records.ndjson');

/** Writes nested records (bench/e2e's generator, 3 key orders) until the file holds `bytes`. */
async function writeFile(bytes: number): Promise<number> {
  const out = createWriteStream(file);
  let size = 0;
  let records = 0;
  for (let seed = 1000; size < bytes; seed += 5000) {
    const lines: string[] = [];
    for (const r of makeNestedRecords(5000, seed, { keyOrders: 3 })) {
      const line = `${JSON.stringify(r)}\n`;
      lines.push(line);
      size += Buffer.byteLength(line);
      records++;
      if (size >= bytes) break;
    }
    if (!out.write(lines.join(''))) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  return records;
}

/** The file as the e2e client's bodies of `opts.batch` lines each (views into one buffer). */
function bodiesOf(buf: Buffer): { bodies: Buffer[]; records: number[] } {
  const bodies: Buffer[] = [];
  const records: number[] = [];
  let start = 0;
  let lines = 0;
  for (let at = buf.indexOf(0x0a); at !== -1; at = buf.indexOf(0x0a, at + 1)) {
    if (++lines === opts.batch) {
      bodies.push(buf.subarray(start, at + 1));
      records.push(lines);
      start = at + 1;
      lines = 0;
    }
  }
  if (start < buf.length) {
    bodies.push(buf.subarray(start));
    records.push(lines + (buf[buf.length - 1] === 0x0a ? 0 : 1));
  }
  return { bodies, records };
}

interface Run {
  kind: 'e2e' | 'cli' | 'cli (baseline)' | 'e2e+scraper';
  round: number;
  records: number;
  ackSeconds: number;
  drainSeconds: number;
  /** Peak RSS of the client process, MB (the CLI only: the e2e client is this process). */
  peakRssMb: number | null;
  /** CPU seconds (user + system) of the client process (the CLI only). */
  cpuSeconds: number | null;
  scrapeMs: number[];
}

async function withServer<T>(f: (server: BenchServer) => Promise<T>, mainJs?: string): Promise<T> {
  const server = await BenchServer.start(opts.workers, mainJs);
  try {
    return await f(server);
  } finally {
    await server.stop();
  }
}

/** Times one GET /metrics (the whole body read), ms; fails the bench on anything but 200. */
async function scrapeOnce(url: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/metrics`);
  const text = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text.slice(0, 300)}`);
  return ms;
}

async function e2eRun(round: number, data: ReturnType<typeof bodiesOf>, scrape: boolean): Promise<Run> {
  return withServer(async (server) => {
    const scrapeMs: number[] = [];
    let sending = true;
    let wake: () => void = () => {};
    const scraper = (async () => {
      if (!scrape) return;
      while (sending) {
        scrapeMs.push(await scrapeOnce(server.url));
        await new Promise<void>((r) => {
          const t = setTimeout(r, opts.scrapeMs);
          wake = () => {
            clearTimeout(t);
            r();
          };
        });
      }
    })();
    let sent;
    try {
      sent = await sendNdjson({
        port: server.port,
        path: server.ingestPath,
        bodies: data.bodies,
        records: data.records,
        connections: opts.connections,
      });
      await drained(server);
    } finally {
      sending = false;
      wake();
      await scraper;
    }
    const drainedAt = performance.now();
    return {
      kind: scrape ? 'e2e+scraper' : 'e2e',
      round,
      records: sent.records,
      ackSeconds: (sent.lastAckAt - sent.firstSentAt) / 1000,
      drainSeconds: (drainedAt - sent.firstSentAt) / 1000,
      peakRssMb: null,
      cpuSeconds: null,
      scrapeMs,
    };
  });
}

/** VmHWM of a process, MB (NaN once it is gone). */
function peakRssMb(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** utime + stime of a process, seconds (NaN once it is gone). */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat(5), counted from the state (field 3) here; clock ticks of 1/100 s.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** One `sluice ingest` run: this build's binary, or `main` (BENCH_CLI_BASELINE). */
async function cliRun(round: number, main: string | null = null): Promise<Run> {
  return withServer(async (server) => {
    const q = new URLSearchParams(server.ingestPath.split('?')[1]);
    const args = [
      main ?? CLI,
      'ingest',
      file,
      '--ingest-key',
      q.get('key')!,
      '--collection',
      q.get('collection')!,
      '--json',
      '--no-progress',
    ];
    const started = performance.now();
    const child = spawn(process.execPath, args, {
      env: { ...process.env, SLUICE_URL: server.url, XDG_CONFIG_HOME: join(dir, 'config') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    // VmHWM only grows: the last reading before the process ends is its peak (sampled every 50 ms).
    let peak = 0;
    let cpu = 0;
    const sampler = setInterval(() => {
      const v = peakRssMb(child.pid!);
      if (Number.isFinite(v)) peak = Math.max(peak, v);
      const c = cpuSeconds(child.pid!);
      if (Number.isFinite(c)) cpu = Math.max(cpu, c);
    }, 50);
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    clearInterval(sampler);
    const exitedAt = performance.now();
    if (code !== 0) throw new Error(`sluice ingest exited ${code}: ${err.slice(-2000)}${out.slice(-2000)}`);
    const summary = JSON.parse(out) as { accepted: number; refused: number; seconds: number };
    if (summary.refused !== 0) throw new Error(`sluice ingest refused ${summary.refused} records`);
    await drained(server);
    const drainedAt = performance.now();
    return {
      kind: main ? 'cli (baseline)' : 'cli',
      round,
      records: summary.accepted,
      // The process's whole life (Node start, reading, sending): what a user waits for.
      ackSeconds: (exitedAt - started) / 1000,
      drainSeconds: (drainedAt - started) / 1000,
      peakRssMb: peak,
      cpuSeconds: cpu,
      scrapeMs: [],
    };
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor((s.length - 1) / 2)]!;
}
function quantile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]!;
}
const rate = (r: Run, which: 'ackSeconds' | 'drainSeconds') => r.records / r[which];

try {
  const t0 = performance.now();
  const records = await writeFile(opts.mb * 1024 * 1024);
  const buf = readFileSync(file);
  const data = bodiesOf(buf);
  process.stdout.write(
    `generated ${records.toLocaleString('en-US')} nested records, ${(buf.length / 1048576).toFixed(0)} MB, ${data.bodies.length} bodies of ≤ ${opts.batch} (${((performance.now() - t0) / 1000).toFixed(1)} s, untimed)\n`,
  );
  const runs: Run[] = [];
  for (let round = 0; round < opts.rounds; round++) {
    const before = runs.length;
    runs.push(await e2eRun(round, data, false));
    if (opts.baselineCli) runs.push(await cliRun(round, opts.baselineCli));
    runs.push(await cliRun(round));
    runs.push(await e2eRun(round, data, true));
    for (const r of runs.slice(before)) {
      if (r.records !== records) throw new Error(`${r.kind}: ${r.records} records acknowledged of ${records}`);
    }
  }
  // Back-to-back scrapes on a fresh server that took the file (its registry holds real series).
  const backToBack = (mainJs?: string) =>
    withServer(async (server) => {
      await sendNdjson({
        port: server.port,
        path: server.ingestPath,
        bodies: data.bodies,
        records: data.records,
        connections: opts.connections,
      });
      await drained(server);
      const ms: number[] = [];
      for (let i = 0; i < opts.scrapes; i++) ms.push(await scrapeOnce(server.url));
      return ms;
    }, mainJs);
  const baselineScrapes = opts.baselineServer ? await backToBack(opts.baselineServer) : null;
  const idleScrapes = await backToBack();

  console.table(
    runs.map((r) => ({
      run: r.kind,
      round: r.round,
      records: r.records,
      'ack s': r.ackSeconds.toFixed(2),
      'ack rec/s': Math.round(rate(r, 'ackSeconds')),
      'drain s': r.drainSeconds.toFixed(2),
      'drain rec/s': Math.round(rate(r, 'drainSeconds')),
      'client peak RSS MB': r.peakRssMb === null ? '—' : r.peakRssMb.toFixed(0),
      'client CPU s': r.cpuSeconds === null ? '—' : r.cpuSeconds.toFixed(2),
      scrapes: r.scrapeMs.length || '—',
    })),
  );
  const of = (kind: Run['kind'], which: 'ackSeconds' | 'drainSeconds') =>
    median(runs.filter((r) => r.kind === kind).map((r) => rate(r, which)));
  const cliAck = of('cli', 'ackSeconds') / of('e2e', 'ackSeconds');
  const cliDrain = of('cli', 'drainSeconds') / of('e2e', 'drainSeconds');
  const peak = Math.max(...runs.filter((r) => r.kind === 'cli').map((r) => r.peakRssMb ?? 0));
  const scrapedCost = 1 - of('e2e+scraper', 'ackSeconds') / of('e2e', 'ackSeconds');
  const scrapedDrainCost = 1 - of('e2e+scraper', 'drainSeconds') / of('e2e', 'drainSeconds');
  const during = runs.flatMap((r) => r.scrapeMs);
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const cpuOf = (kind: Run['kind']) => median(runs.filter((r) => r.kind === kind).map((r) => r.cpuSeconds ?? 0));
  const peakOf = (kind: Run['kind']) => Math.max(...runs.filter((r) => r.kind === kind).map((r) => r.peakRssMb ?? 0));
  const vsBaseline = opts.baselineCli
    ? [
        {
          target: 'this CLI ÷ baseline CLI, ack rec/s (same run)',
          value: (of('cli', 'ackSeconds') / of('cli (baseline)', 'ackSeconds')).toFixed(2),
          met: '(comparison)',
        },
        {
          target: 'this CLI ÷ baseline CLI, drain rec/s',
          value: (of('cli', 'drainSeconds') / of('cli (baseline)', 'drainSeconds')).toFixed(2),
          met: '(comparison)',
        },
        {
          target: 'baseline CLI ack rec/s ÷ e2e client',
          value: (of('cli (baseline)', 'ackSeconds') / of('e2e', 'ackSeconds')).toFixed(2),
          met: '(comparison)',
        },
        {
          target: 'CLI CPU s: this / baseline',
          value: `${cpuOf('cli').toFixed(2)} / ${cpuOf('cli (baseline)').toFixed(2)}`,
          met: '(comparison)',
        },
        {
          target: 'CLI peak RSS: this / baseline',
          value: `${peakOf('cli').toFixed(0)} / ${peakOf('cli (baseline)').toFixed(0)} MB`,
          met: '(comparison)',
        },
        ...(baselineScrapes
          ? [
              {
                target: `/metrics p50 / p99 on the baseline server, ${opts.scrapes} back to back`,
                value: `${quantile(baselineScrapes, 0.5).toFixed(2)} / ${quantile(baselineScrapes, 0.99).toFixed(2)} ms`,
                met: '(comparison)',
              },
            ]
          : []),
      ]
    : [];
  console.table([
    {
      target: 'CLI ack rec/s ÷ e2e client ack rec/s ≥ 0.8',
      value: cliAck.toFixed(2),
      met: cliAck >= 0.8,
    },
    { target: '(same, to drained) ≥ 0.8', value: cliDrain.toFixed(2), met: cliDrain >= 0.8 },
    { target: 'CLI peak RSS < 200 MB', value: `${peak.toFixed(0)} MB`, met: peak < 200 },
    {
      target: `/metrics every ${opts.scrapeMs} ms costs < 1 % (ack)`,
      value: pct(scrapedCost),
      met: scrapedCost < 0.01,
    },
    { target: '(same, to drained) < 1 %', value: pct(scrapedDrainCost), met: scrapedDrainCost < 0.01 },
    {
      target: `/metrics p50 / p99 < 5 ms, ${opts.scrapes} back to back`,
      value: `${quantile(idleScrapes, 0.5).toFixed(2)} / ${quantile(idleScrapes, 0.99).toFixed(2)} ms`,
      met: quantile(idleScrapes, 0.99) < 5,
    },
    {
      target: `/metrics p50 / max during ingest (${during.length} scrapes)`,
      value: `${quantile(during, 0.5).toFixed(2)} / ${Math.max(...during).toFixed(2)} ms`,
      met: '(under load: informative)',
    },
    ...vsBaseline,
  ]);
  if (opts.mb < 1024 || opts.rounds < 3)
    process.stdout.write(
      `note: ${opts.mb} MB × ${opts.rounds} round(s); the 1 % cost is within run-to-run noise below BENCH_CLI_MB=1024 BENCH_ROUNDS=3 on a quiet machine\n`,
    );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
