/**
 * The one metric of the e2e "view + metric" runs (BENCH_METRIC=1): on each input's bench view,
 * grouped by a low-cardinality field, with a value field (quantile sketch) and a unique field
 * (distinct-count sketch), so every part of the rollup write path runs. Its clock stops once the
 * metric counts every record stored, not only when the spool is drained.
 */
import { countFrom, type AggregationAnswer } from '../query/aggregation.js';
import type { InputName } from './options.js';
import type { BenchServer } from './sluice-server.js';

/** The create body for `input`'s view (fields of bench/transform/view-scripts.ts). */
export function benchMetricBody(input: InputName, viewId: string): Record<string, unknown> {
  const fields =
    input === 'flat'
      ? { group_by: ['event'], value_field: 'ts', unique_field: 'ip' }
      : { group_by: ['has_media'], value_field: 'followers', unique_field: 'user' };
  return { name: 'bench metric', view_id: viewId, ...fields };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Poll (every 50 ms, at most `timeoutMs`) until the metric counts `want` records over the last 24
 * hours (the records' receive times); returns performance.now() then and the count last seen.
 */
export async function metricCounted(
  server: BenchServer,
  metricId: string,
  want: number,
  timeoutMs: number,
): Promise<{ at: number; counted: number }> {
  const path = server.aggregationPath(metricId, {
    time_range: 'last_24_hours',
    interval: 'hour',
    values: 'count',
    coverage_mode: 'observed',
    timezone: 'UTC',
  });
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const counted = [...countFrom((await server.api('GET', path)) as AggregationAnswer, 0).values()].reduce(
      (a, b) => a + b,
      0,
    );
    if (counted >= want || performance.now() > deadline) return { at: performance.now(), counted };
    await sleep(50);
  }
}
