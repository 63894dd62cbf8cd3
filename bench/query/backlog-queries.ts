/**
 * The four dashboard queries timed while a compaction backlog waits (docs/benchmarks.md "Queries"):
 * right after the metrics' backfills, rounds of the four (observed and strict, one at a time) until
 * every metric reports `compact_percent` 100. An observed answer may leave out partials not folded
 * yet (it then carries a `compacting` coverage reason, counted here); a strict one never does.
 */
import type { BenchServer } from '../e2e/sluice-server.js';
import { aggregationParams, QUERIES, windowOf, type QuerySpec } from './queries.js';
import type { BenchMetric } from './query-runs.js';

export interface BacklogRun {
  query: QuerySpec;
  coverage: 'observed' | 'strict';
  ms: number[];
  /** Answers marked partial (a `compacting` coverage reason). */
  marked: number;
}

/** Rounds of the queries of `metric` while any of `metrics` is not compacted, at most `maxRounds`. */
export async function backlogQueries(
  server: BenchServer,
  metric: BenchMetric,
  metrics: readonly BenchMetric[],
  dataEnd: number,
  maxRounds: number,
): Promise<{ runs: BacklogRun[]; rounds: number }> {
  const runs: BacklogRun[] = QUERIES.flatMap((query) =>
    (['observed', 'strict'] as const).map((coverage) => ({ query, coverage, ms: [], marked: 0 })),
  );
  let rounds = 0;
  for (; rounds < maxRounds; rounds++) {
    const states = await Promise.all(metrics.map((m) => server.metric(m.id)));
    if (states.every((m) => m.compact_percent === 100)) break;
    for (const r of runs) {
      const { from, to } = windowOf(r.query, dataEnd);
      const path = server.aggregationPath(metric.id, aggregationParams(r.query, from, to, r.coverage));
      const t0 = performance.now();
      const answer = (await server.api('GET', path)) as { coverage_reasons?: Array<{ reason: string }> };
      r.ms.push(performance.now() - t0);
      if (answer.coverage_reasons?.some((c) => c.reason === 'compacting')) r.marked++;
    }
  }
  return { runs, rounds };
}
