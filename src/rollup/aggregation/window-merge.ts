import type { ChartValue, MetricRecord } from '../metric-records.js';
import type { RollupReader } from '../rollup-reader-contract.js';
import { concatColumns, readColumns } from '../stored-columns.js';
import { CellGrid } from './assemble.js';
import { bucketValue, figuresFor, type NullHandling } from './chart-values.js';
import { coalesce, isSingleRow, tileBucket } from './tiling.js';

/** What `mergedWindowValues` is asked. */
export interface WindowMergeRequest {
  /** The window `[start, end)`, minute boundaries (any length: it is one bucket, not a tier's). */
  start: number;
  end: number;
  value: ChartValue;
  nullHandling: NullHandling;
  /** The series hashes to answer (TOTAL_SERIES for the whole metric). */
  series: readonly string[];
}

/**
 * One value per series over a whole window taken as a single bucket: the stored rows that tile
 * `[start, end)` (coarsest tiers where final, tiling.ts) merged, states included when more than
 * one row — so a p95 over ten minutes is the p95 of the ten minutes' merged sketch, not a figure of
 * one of them, and a distinct count is the union's. The same cell and value rules as an answer
 * bucket (cell.ts, chart-values.ts): the figure equals the aggregation's for a bucket of that span.
 * A series without rows maps to null. Only final data is meaningful: the caller checks the window
 * ends at or before `completeThrough` (monitors, docs/monitors.md "Only complete data").
 */
export async function mergedWindowValues(
  reader: RollupReader,
  metric: Pick<MetricRecord, 'id' | 'definition_revision'>,
  req: WindowMergeRequest,
): Promise<Map<string, number | null>> {
  const out = new Map<string, number | null>();
  if (req.series.length === 0 || req.end <= req.start) return out;
  const tiles = tileBucket(req.start, req.end, reader.completeThrough(metric.id));
  // One stored row: its precomputed figures are the answer, no sketch decoded.
  const sketches = !isSingleRow(tiles) || req.nullHandling === 'count_as_zero';
  const spans = coalesce(tiles.map((t) => ({ ...t, sketches })));
  const parts = await Promise.all(
    spans.map((s) =>
      readColumns(reader, {
        metricId: metric.id,
        revision: metric.definition_revision,
        tier: s.tier,
        from: s.from,
        to: s.to,
        series: req.series,
        sketches: s.sketches,
        figures: figuresFor([req.value]),
      }),
    ),
  );
  const grid = new CellGrid(concatColumns(parts), [req.start, req.end]);
  for (const hash of req.series) out.set(hash, bucketValue(grid.cellAt(hash, 0), req.value, req.nullHandling));
  return out;
}
