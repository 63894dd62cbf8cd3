import { TOTAL_SERIES, type StoredColumns } from '../rollup-types.js';
import { blankCell, cellOfColumns, mergeCell, subtractCells, type Cell } from './cell.js';
import { bucketIndex } from './buckets.js';
import { OTHER_DETAILS, type SeriesDetails, type SeriesSelection } from './series-selection.js';
import { seriesRecords, type RecordRules, type RecordTable } from './series-records.js';

/** One answered series before fits. */
export interface AssembledSeries {
  details: SeriesDetails;
  table: RecordTable;
}

/**
 * Stored rows (column-wise) grouped into answer buckets per series. A bucket made of one stored row
 * (a minute of a by-minute answer, an hour of a UTC by-hour one) keeps only the row's index and
 * makes its cell when asked; a bucket of several rows holds their merged cell. A 24 h by-minute
 * answer of 10 series so makes no object per row.
 */
export class CellGrid {
  private readonly buckets: number;
  private readonly series: Map<string, number>;
  /** (series index × buckets + bucket) → the row making the bucket, or -1. */
  private readonly rowOf: Int32Array;
  /** Same key → the merged cell of a bucket made of several rows. */
  private readonly merged = new Map<number, Cell>();
  private readonly scratch = blankCell();

  constructor(
    private readonly columns: StoredColumns,
    boundaries: readonly number[],
  ) {
    const c = columns;
    const buckets = (this.buckets = boundaries.length - 1);
    this.series = new Map(c.names.map((n, i) => [n, i]));
    this.rowOf = new Int32Array(c.names.length * buckets).fill(-1);
    let k = -1;
    for (let i = 0; i < c.length; i++) {
      const start = c.start[i]!;
      // Rows come by series then start: the next row's bucket is usually this one or the next.
      if (!(k >= 0 && start >= boundaries[k]! && start < boundaries[k + 1]!)) {
        k =
          k >= 0 && k + 2 < boundaries.length && start >= boundaries[k + 1]! && start < boundaries[k + 2]!
            ? k + 1
            : bucketIndex(boundaries, start);
      }
      if (k < 0) continue; // a read span never reaches past the answer; defensive
      const at = c.si[i]! * buckets + k;
      const into = this.merged.get(at);
      if (into) mergeCell(into, cellOfColumns(c, i, this.scratch));
      else if (this.rowOf[at] === -1) this.rowOf[at] = i;
      else {
        const cell = cellOfColumns(c, this.rowOf[at]!);
        mergeCell(cell, cellOfColumns(c, i, this.scratch));
        this.merged.set(at, cell);
      }
    }
  }

  /** The cell of `series` in bucket `k` (a new object), or null without rows. */
  cellAt(series: string, k: number): Cell | null {
    return this.cellInto(series, k);
  }

  /** Every bucket's cell of `series` (new objects). */
  cells(series: string): Array<Cell | null> {
    return Array.from({ length: this.buckets }, (_, k) => this.cellInto(series, k));
  }

  /** `cellAt` for one series that reuses one object for single rows: each cell is read before the next call. */
  reader(series: string): (k: number) => Cell | null {
    return (k) => this.cellInto(series, k, this.scratch);
  }

  /** Whether `series` has records in bucket `k` (no cell made). */
  hasRecords(series: string, k: number): boolean {
    const s = this.series.get(series);
    if (s === undefined) return false;
    const at = s * this.buckets + k;
    const merged = this.merged.get(at);
    if (merged) return merged.count > 0;
    const row = this.rowOf[at]!;
    return row !== -1 && this.columns.count[row]! > 0;
  }

  private cellInto(series: string, k: number, scratch?: Cell): Cell | null {
    const s = this.series.get(series);
    if (s === undefined) return null;
    const at = s * this.buckets + k;
    const merged = this.merged.get(at);
    if (merged) return merged;
    const row = this.rowOf[at]!;
    return row === -1 ? null : cellOfColumns(this.columns, row, scratch);
  }
}

/** How `__other__` is made from what was read: none, by subtraction from the total, or the tail merged already (tail-union.ts). */
export type OtherCells =
  | { method: 'none' }
  | { method: 'subtract' }
  | { method: 'merge'; cells: ReadonlyArray<Cell | null> };

/**
 * The answer's series from the stored rows a read plan fetched (pure): the kept series in order,
 * then `__other__` when a tail folds — by subtraction from the total pseudo-series, or the tail's
 * merged cells (read-plan.ts `OtherMethod`).
 */
export function assembleSeries(
  grid: CellGrid,
  selection: SeriesSelection,
  other: OtherCells,
  rules: RecordRules,
): AssembledSeries[] {
  const out: AssembledSeries[] = selection.kept.map((details) => ({
    details,
    table: seriesRecords(grid.reader(details.hash), rules),
  }));
  const otherCells = otherCellsOf(grid, selection, other);
  if (otherCells === null) return out;
  out.push({ details: OTHER_DETAILS, table: seriesRecords((k) => otherCells[k] ?? null, rules) });
  return out;
}

/** `__other__`'s cell per bucket (null: no tail folds): the merged tail, or the total less the kept series. */
export function otherCellsOf(
  grid: CellGrid,
  selection: SeriesSelection,
  other: OtherCells,
): ReadonlyArray<Cell | null> | null {
  if (other.method === 'none') return null;
  if (other.method === 'merge') return other.cells;
  const kept = selection.kept.map((s) => grid.cells(s.hash));
  const total = grid.cells(TOTAL_SERIES);
  return total.map((t, k) =>
    subtractCells(
      t,
      kept.map((c) => c[k] ?? null),
    ),
  );
}
