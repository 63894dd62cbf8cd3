/**
 * The dashboard queries the benchmark times, and their windows. Each window ends at the first
 * interval boundary at or after the data's end and spans the named range back from there, so the
 * rollups and the raw scan answer over exactly the same buckets (a relative `time_range` would
 * move with the clock between the two).
 */
export type QueryInterval = 'minute' | 'hour' | 'day';

export const INTERVAL_MS: Record<QueryInterval, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

export interface QuerySpec {
  name: string;
  spanMs: number;
  interval: QueryInterval;
  values: string[];
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export const QUERIES: readonly QuerySpec[] = [
  { name: 'last 24 h by minute', spanMs: DAY, interval: 'minute', values: ['count', 'sum'] },
  { name: 'last 30 d by hour', spanMs: 30 * DAY, interval: 'hour', values: ['count', 'sum'] },
  { name: 'p95, 7 d by hour', spanMs: 7 * DAY, interval: 'hour', values: ['p95'] },
  { name: 'count_unique, 30 d by day', spanMs: 30 * DAY, interval: 'day', values: ['count_unique'] },
];

/** [from, to) of `q` for data ending at `dataEnd` (epoch ms). */
export function windowOf(q: QuerySpec, dataEnd: number): { from: number; to: number } {
  const w = INTERVAL_MS[q.interval];
  const to = Math.ceil(dataEnd / w) * w;
  return { from: to - q.spanMs, to };
}

/** Query parameters of GET …/aggregation for `q` over [from, to). */
export function aggregationParams(q: QuerySpec, from: number, to: number, coverage: string): Record<string, string> {
  return {
    start_at: new Date(from).toISOString(),
    end_at: new Date(to).toISOString(),
    interval: q.interval,
    timezone: 'UTC',
    values: q.values.join(','),
    coverage_mode: coverage,
  };
}

/** Run `fn` `warmup` times untimed, then `repeats` times; the latencies in ms. */
export async function timed(fn: () => Promise<unknown>, repeats: number, warmup = 2): Promise<Float64Array> {
  for (let i = 0; i < warmup; i++) await fn();
  const ms = new Float64Array(repeats);
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await fn();
    ms[i] = performance.now() - t0;
  }
  return ms;
}
