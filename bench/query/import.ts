/**
 * The month's import (`BENCH_PARTS=import`, issue #22 item 1): `importRecords` traffic records whose
 * `timestamp`s spread uniformly over the last 30 days, posted as NDJSON (bodies of
 * `importBody` records, each body's times drawn at random over the month, as an export replayed
 * in arrival order is) into a project whose late window is open (129,600 minutes), twice, each on a
 * fresh server in the same run:
 *
 * - **no metric**: the view alone; the time from the first POST until the queue is drained (the
 *   time the import's files take);
 * - **one metric** (10 series by region, value latency, unique user_id, created before the import so
 *   every batch is counted live): the time until the queue is drained, until every record is
 *   counted (the metric's `complete_through_at` passes the drain's minute: nothing waits in LMDB;
 *   then the month's count by day, coverage observed, holds the whole import) and until its
 *   partials are compacted (`compact_percent` 100, as backfill.ts `compacted()` waits). The month's
 *   count must then equal the import exactly.
 *
 * Target: counted and compacted within 2× the no-metric drain. Peak RSS of each server is sampled
 * every 250 ms.
 */
import { sendAndDrain } from '../e2e/drain.js';
import type { BenchServer } from '../e2e/sluice-server.js';
import { mulberry32 } from '../../test/helpers/seeded-random.js';
import { countFrom, type AggregationAnswer } from './aggregation.js';
import { MemorySampler, memoryColumns, type MemoryPeaks } from './memory-peaks.js';
import { compacted } from './backfill.js';
import { scenarioServer } from './scenario-server.js';
import { TrafficSource } from './traffic.js';

const DAY = 86_400_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ImportOptions {
  records: number;
  body: number;
  users: number;
  seed: number;
  workers: number;
  serverMain: string | undefined;
  timeoutS: number;
  /** The server's Node options (default: `npm start`'s), e.g. to profile it. */
  nodeFlags?: readonly string[];
}

export interface ImportRun {
  label: string;
  records: number;
  /** Seconds from the first POST to the queue drained. */
  drainedS: number;
  /** Seconds from the first POST to every record counted (null: no metric). */
  countedS: number | null;
  /** Seconds from the first POST to the metric's partials all compacted (null: no metric). */
  compactedS: number | null;
  /** Partial rows the metric's compaction folded in all. */
  partialRows: number | null;
  rssPeakMb: number;
  rssIdleMb: number;
  cpuS: number;
  /** CPU seconds of the server's main thread alone (the event loop). */
  mainCpuS: number;
  /** Where the memory was at its peaks (memory-peaks.ts). */
  memory: MemoryPeaks | null;
}

/** The import's bodies: `records` traffic records over [end − 30 days, end), random order. */
export function importBodies(
  o: Pick<ImportOptions, 'records' | 'body' | 'users' | 'seed'>,
  end: number,
): { bodies: Buffer[]; counts: number[] } {
  const source = new TrafficSource(o.seed, o.users);
  const rand = mulberry32(o.seed + 101);
  const from = end - 30 * DAY;
  const bodies: Buffer[] = [];
  const counts: number[] = [];
  for (let at = 0; at < o.records; at += o.body) {
    const n = Math.min(o.body, o.records - at);
    const lines: string[] = new Array(n);
    for (let k = 0; k < n; k++)
      lines[k] = JSON.stringify({ timestamp: from + Math.floor(rand() * (end - from - 1)), ...source.record() });
    bodies.push(Buffer.from(lines.join('\n')));
    counts.push(n);
  }
  return { bodies, counts };
}

/** Samples the server's RSS every 250 ms until `stop()`; answers the peak. */
function rssSampler(server: BenchServer): { stop: () => Promise<number> } {
  let peak = server.rssMb();
  let on = true;
  const loop = (async () => {
    while (on) {
      try {
        peak = Math.max(peak, server.rssMb());
      } catch {
        // the server is gone: its death shows elsewhere
      }
      await sleep(250);
    }
  })();
  return {
    stop: async () => {
      on = false;
      await loop;
      return peak;
    },
  };
}

/** A server with the traffic view active and the late window open over the month. */
function prepare(o: ImportOptions): Promise<{ server: BenchServer; viewId: string }> {
  return scenarioServer(o.workers, o.serverMain, { lateWindowMinutes: 129_600, nodeFlags: o.nodeFlags });
}

/** Sum of the metric's count over the whole month (by day, observed). */
async function countedSoFar(server: BenchServer, metricId: string, end: number): Promise<number> {
  const to = Math.ceil(end / DAY) * DAY + DAY;
  const path = server.aggregationPath(metricId, {
    start_at: new Date(to - 32 * DAY).toISOString(),
    end_at: new Date(to).toISOString(),
    interval: 'day',
    values: 'count',
    coverage_mode: 'observed',
    timezone: 'UTC',
    max_series: '50',
  });
  const answer = (await server.api('GET', path)) as AggregationAnswer;
  return [...countFrom(answer, 0).values()].reduce((a, b) => a + b, 0);
}

/** The metric's `complete_through_at` (epoch ms), from a last-hour answer; null when it has none. */
async function completeThrough(server: BenchServer, metricId: string): Promise<number | null> {
  const path = server.aggregationPath(metricId, {
    time_range: 'last_hour',
    interval: 'minute',
    values: 'count',
    coverage_mode: 'observed',
    timezone: 'UTC',
  });
  const at = ((await server.api('GET', path)) as AggregationAnswer).complete_through_at;
  return at === null ? null : Date.parse(at);
}

/**
 * Stops the run when the view went `error` (its batch transform timed out on an overloaded machine,
 * say): its later records never reach the metric, and the count would wait for them until the timeout.
 */
async function viewWorks(server: BenchServer, viewId: string): Promise<void> {
  const v = await server.view(viewId);
  if (v.status === 'error') throw new Error(`the view went error, the import cannot be counted: ${v.error_message}`);
}

/** One run: a fresh server, the view, optionally the metric, then the import. */
export async function importRun(o: ImportOptions, withMetric: boolean, log: (s: string) => void): Promise<ImportRun> {
  const end = Date.now();
  const { bodies, counts } = importBodies(o, end);
  const { server, viewId } = await prepare(o);
  const label = withMetric ? 'one metric' : 'no metric';
  try {
    let metricId: string | null = null;
    if (withMetric) {
      metricId = await server.createMetric({
        name: 'by region',
        view_id: viewId,
        group_by: ['region'],
        value_field: 'latency',
        unique_field: 'user_id',
      });
      for (let i = 0; (await server.metric(metricId)).status !== 'active'; i++) {
        if (i > 240) throw new Error('the metric did not become active in 60 s');
        await sleep(250);
      }
    }
    const rssIdleMb = server.rssMb();
    const cpu0 = server.cpuSeconds();
    const main0 = server.mainThreadCpuSeconds();
    const rss = rssSampler(server);
    const parts = new MemorySampler(server);
    parts.start();
    let memory: MemoryPeaks | null = null;
    let countedAt: number | null = null;
    let compactedAt: number | null = null;
    let partialRows: number | null = null;
    let drainedAt = 0;
    let rssPeak = rssIdleMb;
    let firstSentAt = 0;
    try {
      const d = await sendAndDrain(server, bodies, counts, 4);
      drainedAt = d.drainedAt;
      firstSentAt = d.sent.firstSentAt;
      if (metricId !== null) {
        // Counted: nothing of the metric waits in LMDB any more, which the answer's
        // `complete_through_at` says (the oldest minute still pending holds it back, RollupReader).
        // Asked of a cheap last-hour answer: a 30-day read over the backlog is not free, and polling
        // it would slow what is measured. The exact count over the month is checked at the end.
        const drainMinute = Math.floor(Date.now() / 60_000) * 60_000;
        const deadline = performance.now() + o.timeoutS * 1000;
        for (;;) {
          await viewWorks(server, viewId);
          const through = await completeThrough(server, metricId);
          if (through !== null && through >= drainMinute) break;
          if (performance.now() > deadline) throw new Error(`not counted ${o.timeoutS} s after the drain`);
          await sleep(50);
        }
        // Then the month's count itself, until it holds every record (it did at once in the runs so far,
        // but a drain seen early under load would otherwise end the clock too soon).
        for (let n = await countedSoFar(server, metricId, end); n < o.records; ) {
          if (performance.now() > deadline)
            throw new Error(`counted ${n} of ${o.records} records after ${o.timeoutS} s`);
          await sleep(500);
          await viewWorks(server, viewId);
          n = await countedSoFar(server, metricId, end);
          if (n >= o.records) log(`    the count reached the import only after complete_through_at (${n})`);
        }
        countedAt = performance.now();
      }
      if (metricId !== null) {
        const waited = await compacted(server, [metricId], o.timeoutS);
        if (waited === null) throw new Error(`not compacted ${o.timeoutS} s after counted`);
        compactedAt = performance.now();
        partialRows = (await server.metric(metricId)).compact_completed_count;
        const n = await countedSoFar(server, metricId, end);
        if (n !== o.records) {
          const late = (await server.api('GET', `/v1/projects/${server.projectId}/late_data?limit=100`)) as Array<{
            excluded_count: number;
          }>;
          const m = await server.metric(metricId);
          throw new Error(
            `the metric counted ${n} records of the ${o.records} imported (late data files: ${JSON.stringify(late).slice(0, 500)}; metric ${JSON.stringify(m).slice(0, 1500)})`,
          );
        }
      }
    } finally {
      await rss.stop().then((peak) => (rssPeak = peak));
      memory = await parts.stop();
    }
    const since = (t: number | null) => (t === null ? null : (t - firstSentAt) / 1000);
    const run: ImportRun = {
      label,
      records: o.records,
      drainedS: (drainedAt - firstSentAt) / 1000,
      countedS: since(countedAt),
      compactedS: since(compactedAt),
      partialRows,
      rssPeakMb: rssPeak,
      rssIdleMb,
      cpuS: server.cpuSeconds() - cpu0,
      mainCpuS: server.mainThreadCpuSeconds() - main0,
      memory,
    };
    log(
      `  ${label}: drained ${run.drainedS.toFixed(1)} s` +
        (run.countedS === null
          ? ''
          : `, counted ${run.countedS.toFixed(1)} s, compacted ${run.compactedS!.toFixed(1)} s (${run.partialRows} partial rows)`) +
        `; RSS ${rssIdleMb} → peak ${rssPeak} MB; server CPU ${run.cpuS.toFixed(1)} s (main thread ${run.mainCpuS.toFixed(1)} s)`,
    );
    return run;
  } catch (err) {
    await sleep(200);
    const note = server.deathNote();
    if (note !== null) process.stderr.write(`${note}\n`);
    throw err;
  } finally {
    await server.stop();
  }
}
/** Both runs and the table; the target line compares counted and compacted with the no-metric drain. */
export async function importPart(o: ImportOptions, say: (s: string) => void): Promise<ImportRun[]> {
  say(
    `import: ${o.records.toLocaleString('en-US')} records over the last 30 days in NDJSON bodies of ${o.body}, late window open; first without a metric, then with one (fresh server each)`,
  );
  const bare = await importRun(o, false, say);
  const metric = await importRun(o, true, say);
  const row = (r: ImportRun) => ({
    run: r.label,
    records: r.records.toLocaleString('en-US'),
    'drained s': r.drainedS.toFixed(1),
    'counted s': r.countedS?.toFixed(1) ?? '—',
    'compacted s': r.compactedS?.toFixed(1) ?? '—',
    'records/s counted': r.countedS ? Math.round(r.records / r.countedS).toLocaleString('en-US') : '—',
    'partial rows': r.partialRows?.toLocaleString('en-US') ?? '—',
    'RSS idle MB': r.rssIdleMb,
    'RSS peak MB': r.rssPeakMb,
    ...memoryColumns(r.memory),
    'server CPU s': r.cpuS.toFixed(1),
    'main thread CPU s': r.mainCpuS.toFixed(1),
  });
  console.table([row(bare), row(metric)]);
  const ratio = Math.max(metric.countedS!, metric.compactedS!) / bare.drainedS;
  say(
    `target — import counted and compacted in ${Math.max(metric.countedS!, metric.compactedS!).toFixed(1)} s = ${ratio.toFixed(2)}× the no-metric drain of ${bare.drainedS.toFixed(1)} s (target ≤ 2×)`,
  );
  return [bare, metric];
}
