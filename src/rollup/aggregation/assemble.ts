import type { StoredBucket } from '../rollup-types.js';
import { TOTAL_SERIES } from '../rollup-types.js';
import { cellOfRow, mergeCell, subtractCells, type Cell } from './cell.js';
import { bucketIndex } from './buckets.js';
import { OTHER_DETAILS, type SeriesDetails, type SeriesSelection } from './series-selection.js';
import { seriesRecords, type RecordRules, type RecordTable } from './series-records.js';

/** One answered series before fits. */
export interface AssembledSeries {
  details: SeriesDetails;
  table: RecordTable;
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

/** How `__other__` is made from what was read: none, by subtraction from the total, or the tail merged already (tail-union.ts). */
export type OtherCells = { method: 'none' } | { method: 'subtract' } | { method: 'merge'; cells: ReadonlyArray<Cell | null> };

/**
 * The answer's series from the stored rows a read plan fetched (pure): the kept series in order,
 * then `__other__` when a tail folds — by subtraction from the total pseudo-series, or the tail's
 * merged cells (read-plan.ts `OtherMethod`).
 */
export function assembleSeries(rows: readonly StoredBucket[], selection: SeriesSelection, other: OtherCells, rules: RecordRules): AssembledSeries[] {
  const cells = cellsBySeries(rows, rules.boundaries);
  const buckets = rules.boundaries.length - 1;
  const none = new Array<Cell | null>(buckets).fill(null);
  const of = (hash: string): ReadonlyArray<Cell | null> => cells.get(hash) ?? none;
  const recordsOf = (cells: ReadonlyArray<Cell | null>): RecordTable => seriesRecords((k) => cells[k] ?? null, rules);
  const out: AssembledSeries[] = selection.kept.map((details) => ({ details, table: recordsOf(of(details.hash)) }));
  if (other.method === 'none') return out;
  let otherCells: ReadonlyArray<Cell | null>;
  if (other.method === 'merge') otherCells = other.cells;
  else {
    const kept = selection.kept.map((s) => of(s.hash));
    otherCells = Array.from({ length: buckets }, (_, k) => subtractCells(of(TOTAL_SERIES)[k] ?? null, kept.map((c) => c[k] ?? null)));
  }
  out.push({ details: OTHER_DETAILS, table: recordsOf(otherCells) });
  return out;
}
