/**
 * What the `series` and `many-metrics` parts of bench:query share: a fresh server per scenario (its
 * RSS is that scenario's alone) holding the traffic view, records posted with their own times, the
 * server's RSS sampled while it works, the wait for every record counted and compacted, and timed
 * aggregation requests.
 */
import { BenchServer } from '../e2e/sluice-server.js';
import { sendAndDrain, type Drained } from '../e2e/drain.js';
import { quantile } from '../ingest/load.js';
import { MemorySampler, type MemoryPeaks } from './memory-peaks.js';
import { TRAFFIC_VIEW, type TrafficSource } from './traffic.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const BODY_RECORDS = 500;

/**
 * A started server with the traffic view active. The project's late-data window is a day by default
 * (the import's opens it to 30 days): records timed anywhere in it count live, in whatever order they
 * arrive (with the default 0 an event behind the watermark's minute is late and left out,
 * docs/metrics.md "Late data").
 */
export async function scenarioServer(
  workers: number,
  serverMain: string | undefined,
  o: { lateWindowMinutes?: number; nodeFlags?: readonly string[] } = {},
): Promise<{ server: BenchServer; viewId: string }> {
  const server = await BenchServer.start(workers, serverMain, o.nodeFlags);
  try {
    await server.api('POST', `/v1/projects/${server.projectId}`, {
      late_data_window_minutes: o.lateWindowMinutes ?? 1_440,
    });
    const view = await server.createView(TRAFFIC_VIEW);
    if (!view.ok) throw new Error(`the view was refused: ${view.reason}`);
    for (let i = 0; ; i++) {
      const v = await server.view(view.id);
      if (v.status === 'active') break;
      if (v.status === 'error' || i > 120) throw new Error(`the view did not become active: ${v.error_message}`);
      await sleep(250);
    }
    return { server, viewId: view.id };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/**
 * Peak RSS of the server between `start()` and `stop()` (sampled every 100 ms), MB; and where its
 * memory was (memory-peaks.ts, sampled every 500 ms), in `breakdown` once stopped.
 */
export class RssPeak {
  private peak = 0;
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly parts: MemorySampler;
  breakdown: MemoryPeaks | null = null;

  constructor(private readonly server: BenchServer) {
    this.parts = new MemorySampler(server);
  }

  start(): void {
    this.parts.start();
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        this.peak = Math.max(this.peak, this.server.rssMb());
        await sleep(100);
      }
    })();
  }

  async stop(): Promise<number> {
    this.running = false;
    await this.loop;
    this.breakdown = await this.parts.stop();
    return Math.max(this.peak, this.server.rssMb());
  }
}

/** `n` records as NDJSON bodies of 500, each record's `timestamp` drawn uniformly from [from, to). */
export function spreadBodies(
  source: TrafficSource,
  n: number,
  from: number,
  to: number,
): { bodies: Buffer[]; records: number[] } {
  const bodies: Buffer[] = [];
  const records: number[] = [];
  for (let at = 0; at < n; at += BODY_RECORDS) {
    const k = Math.min(BODY_RECORDS, n - at);
    const times = source.times(k, from, to);
    const lines: string[] = new Array(k);
    for (let i = 0; i < k; i++) lines[i] = JSON.stringify({ timestamp: times[i], ...source.record() });
    bodies.push(Buffer.from(lines.join('\n')));
    records.push(k);
  }
  return { bodies, records };
}

/** Post the bodies closed-loop (4 connections) and wait for the spool to drain. */
export function post(server: BenchServer, b: { bodies: Buffer[]; records: number[] }): Promise<Drained> {
  return sendAndDrain(server, b.bodies, b.records, 4);
}

/** Records a metric counted over the last 6 hours (by hour: one small answer). */
export async function countedRecords(server: BenchServer, metricId: string): Promise<number> {
  const a = await server.api(
    'GET',
    server.aggregationPath(metricId, {
      time_range: 'last_6_hours',
      interval: 'hour',
      values: 'count',
      coverage_mode: 'observed',
      timezone: 'UTC',
    }),
  );
  let n = 0;
  for (const s of a.series as Array<{ records: Record<string, (number | null)[]> }>)
    for (const v of Object.values(s.records)) n += v[0] ?? 0;
  return n;
}

/** Polls until the metric counted `want` records (or `timeoutS`); answers performance.now() then, or null. */
export async function countedAt(
  server: BenchServer,
  metricId: string,
  want: number,
  timeoutS: number,
): Promise<number | null> {
  const deadline = performance.now() + timeoutS * 1000;
  while (performance.now() < deadline) {
    if ((await countedRecords(server, metricId)) >= want) return performance.now();
    await sleep(100);
  }
  return null;
}

/** Polls until every metric's partials are compacted; answers performance.now() then, or null after `timeoutS`. */
export async function compactedAt(
  server: BenchServer,
  metricIds: readonly string[],
  timeoutS: number,
): Promise<number | null> {
  const deadline = performance.now() + timeoutS * 1000;
  while (performance.now() < deadline) {
    const states = await Promise.all(metricIds.map((id) => server.metric(id)));
    if (states.every((m) => m.compact_percent === 100)) return performance.now();
    await sleep(250);
  }
  return null;
}

/** Times `repeats` GETs of `path` (after 2 untimed); answers p50 and p99 ms. */
export async function timeAnswers(
  server: BenchServer,
  paths: readonly string[],
  repeats: number,
): Promise<{ p50: number; p99: number }> {
  for (const p of paths.slice(0, 2)) await server.api('GET', p);
  const ms: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await server.api('GET', paths[i % paths.length]!);
    ms.push(performance.now() - t0);
  }
  const f = Float64Array.from(ms);
  return { p50: quantile(f, 0.5), p99: quantile(f, 0.99) };
}
