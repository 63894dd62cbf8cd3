/**
 * Ingest benchmark (`npm run bench:ingest`): a real Sluice (child process, durable acks) against a
 * reference server (bare uWS + JSON.parse per line + one LMDB value per body, also durable) in the
 * same run, over 127.0.0.1. Scenarios: NDJSON batches of 1000 × ~200 B records, single-record
 * POSTs, and WebSocket frames (batched and single). Prints records/s, MB/s, p50/p99 and
 * Sluice ÷ reference. BENCH_SECONDS (default 5) sets each measured run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChild } from '../../test/helpers/child.js';
import { httpLoad, quantile, wsLoad, type LoadResult } from './load.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP_MS = 1000;
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
  const child = await startChild({ SLUICE_DATA_DIR: dir, SLUICE_BOOTSTRAP_KEY: KEY, SLUICE_MAX_PENDING_RECORDS: '1000000000', SLUICE_LOG_LEVEL: 'warn', SLUICE_PIPELINE: '0' });
  const call = async (path: string, body: unknown) => {
    const res = await fetch(child.url + path, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
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

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
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
    run: (t, ms) => httpLoad({ port: t.port, path: t.path, body: batch, contentType: 'application/x-ndjson', connections: 4, durationMs: ms }),
  },
  {
    name: 'HTTP single record',
    recordsPer: 1,
    bytesPer: single.length,
    run: (t, ms) => httpLoad({ port: t.port, path: t.path, body: single, contentType: 'application/json', connections: 32, durationMs: ms }),
  },
  {
    name: 'WS frames 1000 rec',
    recordsPer: 1000,
    bytesPer: batch.length,
    run: (t, ms) => wsLoad({ url: `http://127.0.0.1:${t.port}${t.path}`, frame: batch, connections: 4, window: 2, durationMs: ms }),
  },
  {
    name: 'WS frames 1 rec',
    recordsPer: 1,
    bytesPer: single.length,
    run: (t, ms) => wsLoad({ url: `http://127.0.0.1:${t.port}${t.path}`, frame: single, connections: 8, window: 32, durationMs: ms }),
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
  failed: number;
  'rss MB': string;
}

async function main(): Promise<void> {
  process.stdout.write(`ingest benchmark: ${SECONDS} s per run after ${WARMUP_MS} ms warm-up; record ${single.length} B, batch ${batch.length} B\n`);
  const rows: Row[] = [];
  const ratios: string[] = [];
  for (const scenario of scenarios) {
    const perServer: Record<string, number> = {};
    for (const start of [startReference, startSluice]) {
      const target = await start();
      try {
        await scenario.run(target, WARMUP_MS);
        const rssBefore = rssMb(target.pid);
        const r = await scenario.run(target, SECONDS * 1000);
        const rssAfter = rssMb(target.pid);
        const reqs = r.ok / r.seconds;
        perServer[target.name] = reqs * scenario.recordsPer;
        rows.push({
          scenario: scenario.name,
          server: target.name,
          'records/s': Math.round(reqs * scenario.recordsPer),
          'MB/s': Math.round((reqs * scenario.bytesPer) / 1e5) / 10,
          'req/s': Math.round(reqs),
          'p50 ms': Math.round(quantile(r.latencies, 0.5) * 100) / 100,
          'p99 ms': Math.round(quantile(r.latencies, 0.99) * 100) / 100,
          failed: r.failed,
          'rss MB': `${rssBefore} → ${rssAfter}`,
        });
      } finally {
        await target.stop();
      }
    }
    ratios.push(`${scenario.name}: Sluice ÷ reference = ${(perServer.sluice! / perServer.reference!).toFixed(2)}`);
  }
  console.table(rows);
  for (const line of ratios) process.stdout.write(`${line}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
