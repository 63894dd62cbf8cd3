/**
 * One timed query of one metric: the rollup answer over HTTP and the raw DuckDB scan of the same
 * buckets, their latencies, and the rollup's errors against the exact answer.
 */
import { quantile } from '../ingest/load.js';
import type { BenchServer } from '../e2e/sluice-server.js';
import { cellsOf, OTHER, type AggregationAnswer } from './aggregation.js';
import { compareCells, type ValueErrors } from './compare.js';
import type { ExactScanner } from './exact.js';
import { aggregationParams, INTERVAL_MS, timed, windowOf, type QuerySpec } from './queries.js';
import type { GeneratedFile } from './view-files.js';
import { DistinctSketch, loadHasher } from '../../src/rollup/hll.js';

export interface BenchMetric {
  name: string;
  id: string;
  /** The group_by field. */
  field: string;
  series: number;
}

export interface QueryRun {
  metric: BenchMetric;
  query: QuerySpec;
  /** Series in the answer (`__other__` included) and `series_total`. */
  seriesReturned: number;
  seriesTotal: number;
  buckets: number;
  /** The first request of the window (nothing of it cached yet), ms. */
  firstMs: number;
  rollupMs: Float64Array;
  rawMs: Float64Array;
  errors: ValueErrors[];
  completeThroughAt: string | null;
  /**
   * count_unique: the worst cell's estimate by DistinctSketch computed here straight over the cell's
   * exact values. Equal to the answer: the sketch's own error, not the rollups' merging or folding.
   */
  directSketch: number | null;
}

export interface RunContext {
  server: BenchServer;
  scanner: ExactScanner;
  files: readonly GeneratedFile[];
  dataEnd: number;
  coverage: string;
  queryRepeats: number;
  rawRepeats: number;
}

export async function runQuery(ctx: RunContext, metric: BenchMetric, query: QuerySpec): Promise<QueryRun> {
  await loadHasher();
  const { from, to } = windowOf(query, ctx.dataEnd);
  const path = ctx.server.aggregationPath(metric.id, aggregationParams(query, from, to, ctx.coverage));
  const t0 = performance.now();
  const answer = (await ctx.server.api('GET', path)) as AggregationAnswer;
  const firstMs = performance.now() - t0;
  const got = cellsOf(answer, metric.field);
  // The raw scan folds the same tail the answer folded: every group it did not keep.
  const folded = got.some((c) => c.group === OTHER);
  const kept = folded ? [...new Set(got.map((c) => c.group).filter((g) => g !== OTHER))] : null;
  const exactQuery = {
    from,
    to,
    widthMs: INTERVAL_MS[query.interval],
    field: metric.field,
    kept,
    values: query.values,
    valueField: 'latency',
    uniqueField: 'user_id',
  };
  const want = await ctx.scanner.cells(ctx.files, exactQuery);
  const rollupMs = await timed(() => ctx.server.api('GET', path), ctx.queryRepeats);
  const rawMs = await timed(() => ctx.scanner.cells(ctx.files, exactQuery), ctx.rawRepeats, 1);
  const errors = compareCells(query.values, got, want);
  const worst = errors.find((e) => e.value === 'count_unique')?.worst ?? null;
  let directSketch: number | null = null;
  if (worst !== null) {
    const s = new DistinctSketch();
    for (const id of await ctx.scanner.distinctIds(ctx.files, exactQuery, worst.group, worst.bucket)) s.add(id);
    directSketch = s.estimate();
  }
  return {
    metric,
    query,
    seriesReturned: answer.series.length,
    seriesTotal: answer.series_total,
    buckets: new Set(got.map((c) => c.bucket)).size,
    firstMs,
    rollupMs,
    rawMs,
    errors,
    completeThroughAt: answer.complete_through_at,
    directSketch,
  };
}

const ms = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
const pct = (x: number) => `${(100 * x).toFixed(3)} %`;

/** One row of the results table. */
export function queryRow(r: QueryRun): Record<string, string | number> {
  const err = (v: string) => r.errors.find((e) => e.value === v);
  const rollup50 = quantile(r.rollupMs, 0.5);
  const raw50 = quantile(r.rawMs, 0.5);
  const count = err('count');
  const rel = r.errors.filter((e) => e.value !== 'count');
  return {
    metric: r.metric.name,
    query: r.query.name,
    'series (total)': `${r.seriesReturned} (${r.seriesTotal})`,
    buckets: r.buckets,
    'first ms': ms(r.firstMs),
    'rollup p50 ms': ms(rollup50),
    'rollup p99 ms': ms(quantile(r.rollupMs, 0.99)),
    'raw p50 ms': ms(raw50),
    'raw p99 ms': ms(quantile(r.rawMs, 0.99)),
    'raw ÷ rollup': (raw50 / rollup50).toFixed(1),
    'count Δ max': count ? count.max : '—',
    'max rel. error': rel.map((e) => `${e.value} ${pct(e.max)}`).join(', ') || '—',
  };
}
