import type { StoredBucket } from '../rollup-types.js';
import { TOTAL_SERIES } from '../rollup-types.js';
import { cellOfRow, mergeCell, mergeCells, subtractCells, type Cell } from './cell.js';
import { bucketIndex } from './buckets.js';
import type { OtherMethod } from './read-plan.js';
import { OTHER_DETAILS, type SeriesDetails, type SeriesSelection } from './series-selection.js';
import { seriesRecords, type RecordRules, type SeriesRecords } from './series-records.js';

/** One answered series before fits. */
export interface AssembledSeries extends SeriesRecords {
  details: SeriesDetails;
}

/** Rows grouped into cells: series hash → one cell (or null) per answer bucket. */
export function cellsBySeries(rows: readonly StoredBucket[], boundaries: readonly number[]): Map<string, Array<Cell | null>> {
  const out = new Map<string, Array<Cell | null>>();
  const buckets = boundaries.length - 1;
  let k = -1;
  let series: string | null = null;
  let cells: Array<Cell | null> | undefined;
  for (const row of rows) {
    // Rows come by series then start: the next row's bucket is usually this one or the next.
    if (!(k >= 0 && row.start >= boundaries[k]! && row.start < boundaries[k + 1]!)) {
      k = k >= 0 && k + 2 < boundaries.length && row.start >= boundaries[k + 1]! && row.start < boundaries[k + 2]! ? k + 1 : bucketIndex(boundaries, row.start);
    }
    if (k < 0) continue; // a read span never reaches past the answer; defensive
    if (row.series !== series) {
      series = row.series;
      cells = out.get(series);
      if (cells === undefined) out.set(series, (cells = new Array<Cell | null>(buckets).fill(null)));
    }
    const cell = cellOfRow(row);
    const current = cells![k];
    if (current) mergeCell(current, cell);
    else cells![k] = cell;
  }
  return out;
}

/**
 * The answer's series from the stored rows a read plan fetched (pure): the kept series in order,
 * then `__other__` when a tail folds — by subtraction from the total pseudo-series, or by merging
 * the tail's rows (read-plan.ts `OtherMethod`).
 */
export function assembleSeries(rows: readonly StoredBucket[], selection: SeriesSelection, other: OtherMethod, rules: RecordRules): AssembledSeries[] {
  const cells = cellsBySeries(rows, rules.boundaries);
  const buckets = rules.boundaries.length - 1;
  const none = new Array<Cell | null>(buckets).fill(null);
  const of = (hash: string): ReadonlyArray<Cell | null> => cells.get(hash) ?? none;
  const out: AssembledSeries[] = selection.kept.map((details) => ({ details, ...seriesRecords(of(details.hash), rules) }));
  if (other === 'none') return out;
  const kept = selection.kept.map((s) => of(s.hash));
  const tail = selection.tail.map(of);
  const otherCells = Array.from({ length: buckets }, (_, k) =>
    other === 'subtract' ? subtractCells(of(TOTAL_SERIES)[k] ?? null, kept.map((c) => c[k] ?? null)) : mergeCells(tail.map((c) => c[k] ?? null)),
  );
  out.push({ details: OTHER_DETAILS, ...seriesRecords(otherCells, rules) });
  return out;
}
