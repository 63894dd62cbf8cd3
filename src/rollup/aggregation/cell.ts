import { emptyState, mergeState, type BucketState } from '../bucket-state.js';
import { QuantileSketch } from '../ddsketch.js';
import type { StoredColumns } from '../rollup-types.js';

/**
 * The aggregate of one (series, answer bucket): the stored rows that tile the bucket, merged. Counts,
 * sums, extremes and `last` merge from the rows' figures; percentiles and distinct counts need the
 * rows' states (`state`), except when the bucket is one stored row, whose precomputed figures
 * (`rows === 1`) are the answer — so most reads never decode a blob.
 */
export interface Cell {
  /** Stored rows merged in. */
  rows: number;
  count: number;
  /** Non-null numbers of the value field (count − valueCount records had none). */
  valueCount: number;
  /** Sum of those numbers; 0 when there are none. */
  sum: number;
  min: number | null;
  max: number | null;
  last: number | null;
  lastAt: number | null;
  /** The one row's precomputed figures; meaningful only while `rows === 1` and `state` is null. */
  p50: number | null;
  p95: number | null;
  p99: number | null;
  distinct: number | null;
  /** The merged states, when the rows were read with sketches. */
  state: BucketState | null;
  /** False while `state` is a read row's own (borrowed): it is copied before the first merge into it. */
  ownsState: boolean;
}

/**
 * A cell holding stored row `i` of columns, written into `into` when given (a reused object: read
 * it before the next call). Its state is borrowed: merging copies it first, so rows read stay as read.
 */
export function cellOfColumns(c: StoredColumns, i: number, into?: Cell): Cell {
  const sum = c.sum[i]!;
  const cell = into ?? blankCell();
  cell.rows = 1;
  cell.count = c.count[i]!;
  cell.valueCount = c.value_count[i]!;
  cell.sum = Number.isNaN(sum) ? 0 : sum;
  cell.min = orNull(c.min[i]!);
  cell.max = orNull(c.max[i]!);
  cell.last = orNull(c.last[i]!);
  cell.lastAt = orNull(c.last_at[i]!);
  cell.p50 = orNull(c.p50[i]!);
  cell.p95 = orNull(c.p95[i]!);
  cell.p99 = orNull(c.p99[i]!);
  cell.distinct = orNull(c.distinct[i]!);
  cell.state = c.states?.[i] ?? null;
  cell.ownsState = false;
  return cell;
}

/** A cell of no rows, every field written out (one hidden class for every cell). */
export function blankCell(): Cell {
  return {
    rows: 0,
    count: 0,
    valueCount: 0,
    sum: 0,
    min: null,
    max: null,
    last: null,
    lastAt: null,
    p50: null,
    p95: null,
    p99: null,
    distinct: null,
    state: null,
    ownsState: false,
  };
}

const orNull = (x: number): number | null => (Number.isNaN(x) ? null : x);

function copyState(s: BucketState): BucketState {
  const copy = emptyState({ values: s.values !== null, distinct: s.distinct !== null });
  mergeState(copy, s);
  return copy;
}

const lesser = (a: number | null, b: number | null): number | null =>
  a === null ? b : b === null ? a : Math.min(a, b);
const greater = (a: number | null, b: number | null): number | null =>
  a === null ? b : b === null ? a : Math.max(a, b);

/** Adds `from` into `into` (`from` unchanged). A later `last` wins; on a tie the one merged last. */
export function mergeCell(into: Cell, from: Cell): void {
  into.rows += from.rows;
  into.count += from.count;
  into.valueCount += from.valueCount;
  into.sum += from.sum;
  into.min = lesser(into.min, from.min);
  into.max = greater(into.max, from.max);
  if (from.last !== null && (into.lastAt === null || (from.lastAt ?? -Infinity) >= into.lastAt)) {
    into.last = from.last;
    into.lastAt = from.lastAt;
  }
  if (from.state) {
    if (into.state && !into.ownsState) into.state = copyState(into.state);
    if (into.state) mergeState(into.state, from.state);
    else into.state = copyState(from.state);
    into.ownsState = true;
  }
}

/** The merge of several cells, or null when there are none. */
export function mergeCells(cells: ReadonlyArray<Cell | null>): Cell | null {
  let out: Cell | null = null;
  for (const c of cells) {
    if (c === null) continue;
    // Fields written out: an object spread costs microseconds a cell in V8.
    if (out === null)
      out = {
        rows: c.rows,
        count: c.count,
        valueCount: c.valueCount,
        sum: c.sum,
        min: c.min,
        max: c.max,
        last: c.last,
        lastAt: c.lastAt,
        p50: c.p50,
        p95: c.p95,
        p99: c.p99,
        distinct: c.distinct,
        state: c.state,
        ownsState: false,
      };
    else mergeCell(out, c);
  }
  return out;
}

/**
 * The tail of `total` once `kept` is taken out (the `__other__` series by subtraction): counts and
 * sums subtract exactly, the value sketch by buckets (QuantileSketch.subtract: quantiles within α,
 * min and max exact unless a kept series holds the total's extreme). `last` and distinct counts
 * cannot be subtracted and come back null: a plan that needs them merges the tail instead.
 * Null when nothing is left.
 */
export function subtractCells(total: Cell | null, kept: ReadonlyArray<Cell | null>): Cell | null {
  if (total === null) return null;
  const part = mergeCells(kept);
  if (part === null) return mergeCells([total]); // nothing kept: the tail is the total, exactly
  const count = total.count - part.count;
  if (count <= 0) return null;
  let values: QuantileSketch | null = null;
  if (total.state?.values) {
    values = new QuantileSketch();
    values.merge(total.state.values);
    if (part.state?.values) values.subtract(part.state.values);
  }
  const valueCount = total.valueCount - part.valueCount;
  return {
    rows: 2, // never one stored row: figures must come from the state
    count,
    valueCount,
    sum: valueCount > 0 ? total.sum - part.sum : 0,
    min: values?.min ?? null,
    max: values?.max ?? null,
    last: null,
    lastAt: null,
    p50: null,
    p95: null,
    p99: null,
    distinct: null,
    state: values ? { count, values, last: null, lastAt: -Infinity, distinct: null } : null,
    ownsState: true,
  };
}
