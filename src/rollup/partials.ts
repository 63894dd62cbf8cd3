import { ApiError } from '../errors.js';
import type { OutputColumn, OutputField } from '../transform/output-schema.js';
import { encodeCell, valueBucket, type CellRecords } from './cell-state-bytes.js';
import { compileFilterPredicate, prepareFilter, type FilterNode } from './filter-expression.js';
import { hashValue } from './hll.js';
import { EVENT_TIME_FIELD } from './metric-records.js';
import type { MetricOutcome, MetricTask } from './metric-task.js';
import { TOTAL_SERIES, type MetricPartials, type MinutePartial, type SeenSeries } from './rollup-types.js';
import { SeriesKeys, signature } from './series-keys.js';

/**
 * The partials builder (docs/metrics.md, "Rollups"): the metrics of one view over one view output
 * — a live batch's coerced columns or a view file read back for a backfill — into per (series,
 * minute) bucket states plus the TOTAL_SERIES pseudo-series. Pure: same input, same output.
 *
 * One fused pass for all the metrics of the batch (issue 22, item 4): what metrics have in common
 * is computed once for all of them — each row's minute per timestamp field, the rows each distinct
 * filter keeps (same filter text → evaluated once per row), each row's series per group_by
 * (series-keys.ts), each row's hash per unique field — and the (series, minute) cells of a set of
 * kept rows under a group_by are laid out once for every metric with that filter, time and
 * group_by (a "plan"). Per metric remains only what differs: its value and unique updates, written
 * per cell from the cell's rows straight into state bytes (cell-state-bytes.ts). No sketch object
 * and no per-record object is kept per cell: a cell is a few typed-array slots and its rows are row
 * numbers (docs/metrics.md, "Series limits", gives the bytes per series-minute).
 *
 * Records whose timestamp field is null are not counted (they have no bucket). A null value is left
 * out of the value aggregates (the record still counts): states always hold `skip` semantics, and
 * `null_handling: count_as_zero` is applied when they are read (its zeros are count − value count),
 * so either handling can be asked of the same rows. A null unique value is not a distinct value.
 * A metric's failure (a column it names is not in the output, a bad filter, a non-finite value) is
 * its outcome, never the other metrics'.
 */
export function buildViewPartials(
  tasks: readonly MetricTask[],
  ts: ArrayLike<number>,
  columns: readonly OutputColumn[],
): MetricOutcome[] {
  return buildEach(tasks, ts, columns).map((b, i): MetricOutcome => {
    if (b instanceof Failure)
      return {
        status: 'failed',
        metricId: tasks[i]!.metricId,
        revision: tasks[i]!.revision,
        message: (b.err as Error)?.message ?? String(b.err),
      };
    return { status: 'ok', partials: b };
  });
}

/** One metric's partials (the backfill counts a file for one metric); throws what its outcome would say. */
export function buildPartials(
  task: MetricTask,
  ts: ArrayLike<number>,
  columns: readonly OutputColumn[],
): MetricPartials {
  const [b] = buildEach([task], ts, columns);
  if (b instanceof Failure) throw b.err;
  return b!;
}

class Failure {
  constructor(readonly err: unknown) {}
}

function buildEach(
  tasks: readonly MetricTask[],
  ts: ArrayLike<number>,
  columns: readonly OutputColumn[],
): Array<MetricPartials | Failure> {
  const batch = new BatchColumns(ts, columns);
  const out: Array<MetricPartials | Failure> = new Array(tasks.length);
  // Each task's columns first (a failure there is the task's), then plan by plan: a plan's arrays
  // are dropped before the next one is laid out, so the batch never holds every metric's cells at once.
  const groups = new Map<string, Array<[number, Resolved]>>();
  tasks.forEach((task, i) => {
    try {
      const r = batch.resolve(task);
      let g = groups.get(r.planKey);
      if (g === undefined) groups.set(r.planKey, (g = []));
      g.push([i, r]);
    } catch (err) {
      out[i] = new Failure(err);
    }
  });
  for (const members of groups.values()) {
    let plan: CellPlan;
    try {
      plan = batch.plan(members[0]![1]);
    } catch (err) {
      for (const [i] of members) out[i] = new Failure(err);
      continue;
    }
    for (const [i, r] of members) {
      try {
        out[i] = emit(batch, plan, r);
      } catch (err) {
        out[i] = new Failure(err);
      }
    }
  }
  return out;
}

/** A task with its columns found. */
interface Resolved {
  task: MetricTask;
  time: TimeColumn;
  rowsKey: string;
  planKey: string;
  keep: RowFilter | null;
  values: ArrayLike<number | null> | null;
  valueField: string | null;
  unique: string | null;
  groups: SeriesKeys | null;
  display: ReadonlyArray<readonly [string, ArrayLike<unknown>]>;
}

/** A timestamp field's times and minutes (NaN where the time is null). */
interface TimeColumn {
  times: ArrayLike<number | null>;
  minutes: Float64Array;
  /** Lowest and highest minute (cell keys are offsets from the lowest). */
  lo: number;
  hi: number;
}

type RowFilter = (row: number) => boolean;

/** What the metrics of a batch share, each computed on first use. */
class BatchColumns {
  readonly n: number;
  private readonly byName: Map<string, OutputColumn>;
  private readonly timeColumns = new Map<string, TimeColumn>();
  private readonly filters = new Map<OutputField[], Map<string, RowFilter | null>>();
  private readonly fieldsIds = new Map<OutputField[], number>();
  private readonly keys = new Map<string, SeriesKeys>();
  private readonly hashes = new Map<string, UniqueHashes>();
  private readonly buckets = new Map<string, ValueBuckets>();
  private readonly kept = new Map<string, Int32Array>();

  constructor(
    readonly ts: ArrayLike<number>,
    columns: readonly OutputColumn[],
  ) {
    this.n = ts.length;
    this.byName = new Map(columns.map((c) => [c.name, c]));
  }

  /** The task's columns, checked in the order the single-metric builder checked them. */
  resolve(task: MetricTask): Resolved {
    const col = (name: string, role: string): OutputColumn => {
      const c = this.byName.get(name);
      if (!c)
        throw new ApiError(
          'server_error',
          `metric ${task.metricId}: its ${role} "${name}" is not a column of the view's output`,
        );
      return c;
    };
    if (task.timestampField !== EVENT_TIME_FIELD) col(task.timestampField, 'timestamp field');
    const values = task.valueField === null ? null : (col(task.valueField, 'value field').values as (number | null)[]);
    if (task.uniqueField !== null) col(task.uniqueField, 'unique field');
    const groupCols = task.groupBy.map((g) => col(g, 'group_by field').values as unknown[]);
    const display = Object.entries(task.displayFields ?? {}).map(
      ([g, f]) => [g, col(f, 'display field').values as unknown[]] as const,
    );
    const keep = this.filterOf(task);
    const time = this.timeOf(task.timestampField);
    const rowsKey = [task.filters, task.timestampField, task.eventFrom ?? '', task.eventBefore ?? ''].join('\u0000');
    const sig = signature(task.groupBy);
    let groups: SeriesKeys | null = null;
    if (groupCols.length > 0) {
      groups = this.keys.get(sig) ?? null;
      if (groups === null) this.keys.set(sig, (groups = new SeriesKeys(groupCols, this.n)));
    }
    // Filters of tasks over other field lists are other filters: the key names the list's identity.
    const fieldsKey = this.fieldsIds.get(task.fields)!;
    return {
      task,
      time,
      rowsKey: `${fieldsKey}\u0000${rowsKey}`,
      planKey: `${fieldsKey}\u0000${rowsKey}\u0002${sig}`,
      keep,
      values,
      valueField: task.valueField,
      unique: task.uniqueField,
      groups,
      display,
    };
  }

  timeOf(field: string): TimeColumn {
    let c = this.timeColumns.get(field);
    if (c !== undefined) return c;
    const times = field === EVENT_TIME_FIELD ? this.ts : (this.byName.get(field)!.values as (number | null)[]);
    const minutes = new Float64Array(this.n);
    let lo = Infinity;
    let hi = -Infinity;
    for (let r = 0; r < this.n; r++) {
      const t = times[r];
      if (t === null || t === undefined) {
        minutes[r] = NaN;
        continue;
      }
      const m = t - (((t % 60_000) + 60_000) % 60_000);
      minutes[r] = m;
      if (m < lo) lo = m;
      if (m > hi) hi = m;
    }
    this.timeColumns.set(field, (c = { times, minutes, lo, hi }));
    return c;
  }

  /** The row predicate of the task's filter, one per distinct filter text (null: keep every row). */
  private filterOf(task: MetricTask): RowFilter | null {
    let byText = this.filters.get(task.fields);
    if (byText === undefined) {
      this.filters.set(task.fields, (byText = new Map()));
      this.fieldsIds.set(task.fields, this.fieldsIds.size);
    }
    if (byText.has(task.filters)) return byText.get(task.filters)!;
    const f = rowFilter(task, this.byName, this.n);
    byText.set(task.filters, f);
    return f;
  }

  /** The rows a task counts, ascending (shared by every task with the same filter, time field and bounds). */
  keptRows(r: Resolved): Int32Array {
    let rows = this.kept.get(r.rowsKey);
    if (rows !== undefined) return rows;
    const { ts, n } = this;
    const from = r.task.eventFrom ?? -Infinity;
    const before = r.task.eventBefore ?? Infinity;
    const minutes = r.time.minutes;
    const out = new Int32Array(n);
    let k = 0;
    for (let row = 0; row < n; row++) {
      if (ts[row]! < from || ts[row]! >= before) continue;
      if (r.keep !== null && !r.keep(row)) continue;
      if (minutes[row] !== minutes[row]) continue; // NaN: no time
      out[k++] = row;
    }
    rows = out.slice(0, k);
    this.kept.set(r.rowsKey, rows);
    return rows;
  }

  /** The unique field's hashes, computed for the rows asked (once per row for every metric). */
  hashesOf(field: string): UniqueHashes {
    let h = this.hashes.get(field);
    if (h === undefined) this.hashes.set(field, (h = new UniqueHashes(this.byName.get(field)!.values, this.n)));
    return h;
  }

  /** The value field's sketch buckets, computed for the rows asked (once per row for every metric). */
  bucketsOf(field: string): ValueBuckets {
    let b = this.buckets.get(field);
    if (b === undefined)
      this.buckets.set(field, (b = new ValueBuckets(this.byName.get(field)!.values as (number | null)[], this.n)));
    return b;
  }

  plan(r: Resolved): CellPlan {
    return layCells(this.keptRows(r), r.time, r.groups);
  }
}

/** Per row: its unique value's 64-bit hash (high and low halves), or that it has none; computed on first ask. */
class UniqueHashes {
  readonly hi: Uint32Array;
  readonly lo: Uint32Array;
  /** 0: not computed, 1: hashed, 2: null (no distinct value). */
  readonly state: Uint8Array;

  constructor(
    private readonly values: ArrayLike<unknown>,
    n: number,
  ) {
    this.hi = new Uint32Array(n);
    this.lo = new Uint32Array(n);
    this.state = new Uint8Array(n);
  }

  ensure(rows: Int32Array): void {
    const { values, hi, lo, state } = this;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      if (state[r] !== 0) continue;
      const u = values[r] as string | number | boolean | null | undefined;
      if (u === null || u === undefined) state[r] = 2;
      else {
        const h = hashValue(u);
        hi[r] = Number(h >> 32n);
        lo[r] = Number(h & 0xffffffffn);
        state[r] = 1;
      }
    }
  }
}

/** Per row: its value's quantile-sketch bucket and kind (cell-state-bytes.ts `valueBucket`; 0: not computed, NULL_VALUE). */
class ValueBuckets {
  readonly index: Float64Array;
  readonly kind: Uint8Array;

  constructor(
    private readonly values: ArrayLike<number | null>,
    n: number,
  ) {
    this.index = new Float64Array(n);
    this.kind = new Uint8Array(n);
  }

  ensure(rows: Int32Array): void {
    const { values, index, kind } = this;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      if (kind[r] !== 0) continue;
      const v = values[r];
      kind[r] = v === null ? NULL_VALUE : valueBucket(v as number, index, r);
    }
  }
}

const NULL_VALUE = 255;

/**
 * The (series, minute) cells of a set of kept rows under one group_by, shared by every metric
 * with the same rows and group_by. Series are numbered in the order of their first kept row
 * (0 is TOTAL_SERIES when any row is kept), cells in the order they are first met; `cellRows`
 * holds each cell's rows in arrival order from `cellStart[c]` to `cellStart[c + 1]`, and `emitOrder`
 * the cells series by series (each series' cells in the order met).
 */
interface CellPlan {
  rows: Int32Array;
  series: number;
  /** Per series: its keys id (−1 for TOTAL_SERIES), its row with the latest time (display values). */
  seriesKey: Int32Array;
  latestRow: Int32Array;
  cells: number;
  cellSeries: Int32Array;
  cellMinute: Float64Array;
  cellStart: Int32Array;
  cellRows: Int32Array;
  emitOrder: Int32Array;
}

function layCells(rows: Int32Array, time: TimeColumn, keys: SeriesKeys | null): CellPlan {
  const kept = rows.length;
  const grouped = keys !== null;
  const maxSeries = grouped ? kept + 1 : kept > 0 ? 1 : 0;
  const maxCells = grouped ? 2 * kept : kept;
  const minutes = time.minutes;
  const times = time.times;
  const cellSeries = new Int32Array(maxCells);
  const cellMinute = new Float64Array(maxCells);
  const cellSize = new Int32Array(maxCells + 1);
  const rowCell = new Int32Array(maxCells); // kept row i: total cell at i, series cell at kept + i
  const seriesCap = Math.min(maxSeries, kept + 1);
  let seriesKey = new Int32Array(Math.min(seriesCap, 1024));
  let latestRow = new Int32Array(seriesKey.length);
  let latestAt = new Float64Array(seriesKey.length);
  let lastMinute = new Float64Array(seriesKey.length);
  let lastCell = new Int32Array(seriesKey.length);
  // Keys ids are below the batch's row count (one id at most per row keyed, by any metric).
  const seriesOfKey = grouped ? new Int32Array(keys.capacity).fill(-1) : null;
  // Cell keys: minute offset × stride + series, exact below 2^53; else a string.
  const stride = maxSeries + 1;
  const span = Number.isFinite(time.lo) ? (time.hi - time.lo) / 60_000 + 1 : 1;
  const numeric = span * stride < Number.MAX_SAFE_INTEGER;
  const cellOf = new Map<number | string, number>();
  let series = 0;
  let cells = 0;

  const newSeries = (key: number, row: number): number => {
    if (series === seriesKey.length) {
      const grow = <T extends Int32Array | Float64Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(Math.min(seriesCap, a.length * 2));
        b.set(a);
        return b;
      };
      seriesKey = grow(seriesKey);
      latestRow = grow(latestRow);
      latestAt = grow(latestAt);
      lastMinute = grow(lastMinute);
      lastCell = grow(lastCell);
    }
    seriesKey[series] = key;
    latestRow[series] = row;
    latestAt[series] = -Infinity;
    lastMinute[series] = NaN;
    return series++;
  };
  const cellFor = (s: number, minute: number): number => {
    if (lastMinute[s] === minute) return lastCell[s]!;
    const key = numeric ? ((minute - time.lo) / 60_000) * stride + s : `${minute}:${s}`;
    let c = cellOf.get(key);
    if (c === undefined) {
      c = cells++;
      cellOf.set(key, c);
      cellSeries[c] = s;
      cellMinute[c] = minute;
    }
    lastMinute[s] = minute;
    lastCell[s] = c;
    return c;
  };

  if (kept > 0) newSeries(-1, rows[0]!);
  for (let i = 0; i < kept; i++) {
    const r = rows[i]!;
    const minute = minutes[r]!;
    const c = cellFor(0, minute);
    rowCell[i] = c;
    cellSize[c]!++;
    if (!grouped) continue;
    const k = keys.id(r);
    let s = seriesOfKey![k]!;
    if (s < 0) seriesOfKey![k] = s = newSeries(k, r);
    const t = times[r] as number;
    // Later rows win ties: within a batch, rows are in arrival order.
    if (t >= latestAt[s]!) {
      latestAt[s] = t;
      latestRow[s] = r;
    }
    const sc = cellFor(s, minute);
    rowCell[kept + i] = sc;
    cellSize[sc]!++;
  }

  // Rows by cell (a counting sort keeps arrival order within a cell).
  const cellStart = new Int32Array(cells + 1);
  for (let c = 0; c < cells; c++) cellStart[c + 1] = cellStart[c]! + cellSize[c]!;
  const fill = cellStart.slice(0, cells);
  const cellRows = new Int32Array(cellStart[cells]!);
  for (let i = 0; i < kept; i++) {
    cellRows[fill[rowCell[i]!]!++] = rows[i]!;
    if (grouped) cellRows[fill[rowCell[kept + i]!]!++] = rows[i]!;
  }
  // Cells by series, in the order met within each.
  const perSeries = new Int32Array(series + 1);
  for (let c = 0; c < cells; c++) perSeries[cellSeries[c]! + 1]!++;
  for (let s = 0; s < series; s++) perSeries[s + 1]! += perSeries[s]!;
  const emitOrder = new Int32Array(cells);
  for (let c = 0; c < cells; c++) emitOrder[perSeries[cellSeries[c]!]!++] = c;
  return {
    rows,
    series,
    seriesKey: seriesKey.subarray(0, series),
    latestRow: latestRow.subarray(0, series),
    cells,
    cellSeries: cellSeries.subarray(0, cells),
    cellMinute: cellMinute.subarray(0, cells),
    cellStart,
    cellRows,
    emitOrder,
  };
}

/** Scratch for one cell's records (a worker emits one cell at a time). */
const cell: CellRecords = {
  count: 0,
  values: null,
  buckets: null,
  kinds: null,
  valueCount: 0,
  last: 0,
  lastAt: -Infinity,
  hashHi: null,
  hashLo: null,
  hashCount: 0,
};
let valueScratch = new Float64Array(1024);
let bucketScratch = new Float64Array(1024);
let kindScratch = new Uint8Array(1024);
let hiScratch = new Uint32Array(1024);
let loScratch = new Uint32Array(1024);

/** One metric's partials from its plan: per cell its state bytes, per series what the registry keeps. */
function emit(batch: BatchColumns, plan: CellPlan, r: Resolved): MetricPartials {
  const { task, values } = r;
  const times = r.time.times;
  const unique = r.unique === null ? null : batch.hashesOf(r.unique);
  unique?.ensure(plan.rows);
  const buckets = r.valueField === null ? null : batch.bucketsOf(r.valueField);
  buckets?.ensure(plan.rows);
  const seen: SeenSeries[] = [];
  const partials: MinutePartial[] = new Array(plan.cells);
  // Every cell's bytes in one buffer, each state a view of it: one allocation per metric, not one
  // per cell (a small ArrayBuffer each was most of the batch's garbage).
  const arena = new Arena(plan.cells * 24);
  const ends = new Int32Array(plan.cells);
  let p = 0;
  let o = 0;
  for (let s = 0; s < plan.series; s++) {
    let last: number | null = null;
    let lastAt = -Infinity;
    for (; o < plan.cells && plan.cellSeries[plan.emitOrder[o]!] === s; o++) {
      const c = plan.emitOrder[o]!;
      const from = plan.cellStart[c]!;
      const to = plan.cellStart[c + 1]!;
      const size = to - from;
      cell.count = size;
      cell.valueCount = 0;
      cell.hashCount = 0;
      cell.lastAt = -Infinity;
      cell.last = 0;
      cell.values = cell.buckets = cell.kinds = null;
      cell.hashHi = cell.hashLo = null;
      if (values !== null) {
        if (valueScratch.length < size) {
          valueScratch = new Float64Array(Math.max(size, 2 * valueScratch.length));
          bucketScratch = new Float64Array(valueScratch.length);
          kindScratch = new Uint8Array(valueScratch.length);
        }
        cell.values = valueScratch;
        cell.buckets = bucketScratch;
        cell.kinds = kindScratch;
        const kinds = buckets!.kind;
        const index = buckets!.index;
        for (let j = from; j < to; j++) {
          const row = plan.cellRows[j]!;
          const kind = kinds[row]!;
          if (kind === NULL_VALUE) continue;
          const v = values[row];
          kindScratch[cell.valueCount] = kind;
          bucketScratch[cell.valueCount] = index[row]!;
          valueScratch[cell.valueCount++] = v as number;
          const t = times[row] as number;
          if (t >= cell.lastAt) {
            cell.last = v as number;
            cell.lastAt = t;
          }
        }
        // A series' latest value: ties in time are within one minute, so within this cell's order.
        if (cell.lastAt !== -Infinity && cell.lastAt >= lastAt) {
          last = cell.last;
          lastAt = cell.lastAt;
        }
      }
      if (unique !== null) {
        if (hiScratch.length < size) {
          hiScratch = new Uint32Array(Math.max(size, 2 * hiScratch.length));
          loScratch = new Uint32Array(hiScratch.length);
        }
        cell.hashHi = hiScratch;
        cell.hashLo = loScratch;
        const { state, hi, lo } = unique;
        for (let j = from; j < to; j++) {
          const row = plan.cellRows[j]!;
          if (state[row] !== 1) continue;
          hiScratch[cell.hashCount] = hi[row]!;
          loScratch[cell.hashCount++] = lo[row]!;
        }
      }
      ends[p] = arena.add(encodeCell(cell));
      partials[p++] = { series: s, minute: plan.cellMinute[c]!, state: EMPTY };
    }
    const key = plan.seriesKey[s]!;
    if (key < 0) {
      seen.push({ hash: TOTAL_SERIES, dimensions: {}, display: null, last, lastAt: last === null ? null : lastAt });
      continue;
    }
    const dims = r.groups!.values(key);
    const dimensions: Record<string, unknown> = {};
    task.groupBy.forEach((g, i) => (dimensions[g] = dims[i]));
    let labels: Record<string, unknown> | null = null;
    if (r.display.length > 0) {
      labels = {};
      const row = plan.latestRow[s]!;
      for (const [g, vals] of r.display) labels[g] = vals[row] ?? null;
    }
    seen.push({
      hash: r.groups!.hash(key),
      dimensions,
      display: labels,
      last,
      lastAt: last === null ? null : lastAt,
    });
  }
  const bytes = arena.bytes();
  for (let i = 0, start = 0; i < p; start = ends[i++]!) partials[i]!.state = bytes.subarray(start, ends[i]);
  return { metricId: task.metricId, revision: task.revision, series: seen, partials, kept: plan.rows.length };
}

const EMPTY = new Uint8Array(0);

/** A growing byte buffer of one metric's cell states. */
class Arena {
  private buf: Uint8Array;
  private len = 0;

  constructor(size: number) {
    this.buf = new Uint8Array(Math.max(64, size));
  }

  /** Appends `b`; answers the end offset. */
  add(b: Uint8Array): number {
    if (this.len + b.length > this.buf.length) {
      const next = new Uint8Array(Math.max(this.buf.length * 2, this.len + b.length));
      next.set(this.buf.subarray(0, this.len));
      this.buf = next;
    }
    this.buf.set(b, this.len);
    return (this.len += b.length);
  }

  /** The bytes written, in a buffer of their size (the whole buffer travels with any view of it). */
  bytes(): Uint8Array {
    return this.len === this.buf.length ? this.buf : this.buf.slice(0, this.len);
  }
}

/** The filter as a row predicate over the columns, each row's answer kept (null: keep every row). */
function rowFilter(task: MetricTask, byName: Map<string, OutputColumn>, n: number): RowFilter | null {
  const node = prepareFilter(task.filters, task.fields);
  if (node === null) return null;
  const predicate = compileFilterPredicate(node);
  const names = new Set<string>();
  collectFields(node, names);
  // Only the fields the filter names, in one object reused for every row (a field missing from the
  // output reads as null, as a missing key does).
  const record: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  const readers = [...names].map((name) => {
    const c = byName.get(name);
    record[name] = null;
    if (!c) return (_row: number) => undefined;
    const vals = c.values as unknown[];
    // Array columns hold JSON text; the predicate's `contains` wants the array.
    if (c.type === 'array')
      return (row: number) => (record[name] = vals[row] === null ? null : (JSON.parse(vals[row] as string) as unknown));
    return (row: number) => (record[name] = vals[row]);
  });
  // 0: not asked yet, 1: kept, 2: dropped — metrics with the same filter but other bounds ask again.
  const answers = new Uint8Array(n);
  return (row) => {
    const a = answers[row];
    if (a !== 0) return a === 1;
    for (const read of readers) read(row);
    const keep = predicate(record);
    answers[row] = keep ? 1 : 2;
    return keep;
  };
}

/** Every view field the metric reads (a backfill reads only these columns of a file). */
export function fieldsOfTask(task: MetricTask): Set<string> {
  const names = new Set<string>([...task.groupBy, ...Object.values(task.displayFields ?? {})]);
  for (const f of [task.timestampField, task.valueField, task.uniqueField])
    if (f !== null && f !== EVENT_TIME_FIELD) names.add(f);
  const node = prepareFilter(task.filters, task.fields);
  if (node !== null) collectFields(node, names);
  return names;
}

function collectFields(n: FilterNode, into: Set<string>): void {
  switch (n.kind) {
    case 'and':
    case 'or':
      for (const o of n.operands) collectFields(o, into);
      return;
    case 'not':
      collectFields(n.operand, into);
      return;
    default:
      into.add(n.field.name);
  }
}
