/**
 * Create a metric and wait for its backfill: the status moves initializing → backfilling → active
 * (docs/metrics.md). The wall time from the create request to `active` seen is the backfill time
 * (polled every 250 ms); `error` or `cancelled` stops the run.
 */
import type { BenchServer, MetricState } from '../e2e/sluice-server.js';

export interface Backfilled {
  id: string;
  seconds: number;
  /** Statuses seen, in order (each once). */
  statuses: string[];
  final: MetricState;
}

const POLL_MS = 250;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function createAndBackfill(
  server: BenchServer,
  body: Record<string, unknown>,
  timeoutS: number,
  onProgress: (m: MetricState) => void = () => {},
): Promise<Backfilled> {
  const t0 = performance.now();
  const id = await server.createMetric(body);
  const statuses: string[] = [];
  for (;;) {
    const m = await server.metric(id);
    if (statuses[statuses.length - 1] !== m.status) statuses.push(m.status);
    onProgress(m);
    if (m.status === 'active') return { id, seconds: (performance.now() - t0) / 1000, statuses, final: m };
    if (m.status === 'error' || m.status === 'cancelled')
      throw new Error(`metric ${String(body.name)} went ${m.status}: ${JSON.stringify(m)}`);
    if (performance.now() - t0 > timeoutS * 1000)
      throw new Error(
        `metric ${String(body.name)} not active after ${timeoutS} s (status ${m.status}, backfill ${m.backfill_percent} %)`,
      );
    await sleep(POLL_MS);
  }
}

/**
 * Wait until every metric's history is compacted (`compact_percent` 100: its partials folded into the
 * minute, hour, day and month rows) — what queries read in steady state. Resolves with the seconds
 * waited, or null when `timeoutS` passed first.
 */
export async function compacted(
  server: BenchServer,
  metricIds: readonly string[],
  timeoutS: number,
): Promise<number | null> {
  const t0 = performance.now();
  for (;;) {
    const states = await Promise.all(metricIds.map((id) => server.metric(id)));
    if (states.every((m) => m.compact_percent === 100)) return (performance.now() - t0) / 1000;
    if (performance.now() - t0 > timeoutS * 1000) return null;
    await sleep(POLL_MS);
  }
}
