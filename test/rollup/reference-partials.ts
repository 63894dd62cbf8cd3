import { ApiError } from '../../src/errors.js';
import type { OutputColumn } from '../../src/transform/output-schema.js';
import { emptyState, encodeState, type BucketState, type StateShape } from '../../src/rollup/bucket-state.js';
import { compileFilterPredicate, prepareFilter, type FilterNode } from '../../src/rollup/filter-expression.js';
import { hashValue } from '../../src/rollup/hll.js';
import { EVENT_TIME_FIELD } from '../../src/rollup/metric-records.js';
import type { MetricTask } from '../../src/rollup/metric-task.js';
import {
  TOTAL_SERIES,
  type MetricPartials,
  type MinutePartial,
  type SeenSeries,
} from '../../src/rollup/rollup-types.js';
import { seriesHash } from '../../src/rollup/series-hash.js';
import { keyPart } from '../../src/rollup/series-keys.js';

/**
 * The partials builder as it was before the fused pass (one metric, its own pass over the rows, a
 * BucketState with its sketches per (series, minute), encodeState per cell): the reference the
 * fused builder (src/rollup/partials.ts) must match exactly, series by series and byte by byte.
 */
export function referencePartials(
  task: MetricTask,
  ts: ArrayLike<number>,
  columns: readonly OutputColumn[],
): MetricPartials {
  const byName = new Map(columns.map((c) => [c.name, c]));
  const col = (name: string, role: string): OutputColumn => {
    const c = byName.get(name);
    if (!c)
      throw new ApiError(
        'server_error',
        `metric ${task.metricId}: its ${role} "${name}" is not a column of the view's output`,
      );
    return c;
  };
  const n = ts.length;
  const times: ArrayLike<number | null> =
    task.timestampField === EVENT_TIME_FIELD
      ? ts
      : (col(task.timestampField, 'timestamp field').values as (number | null)[]);
  const values = task.valueField === null ? null : (col(task.valueField, 'value field').values as (number | null)[]);
  const uniques =
    task.uniqueField === null
      ? null
      : (col(task.uniqueField, 'unique field').values as (string | number | boolean | null)[]);
  const groups = task.groupBy.map((g) => col(g, 'group_by field').values as unknown[]);
  const display = Object.entries(task.displayFields ?? {}).map(
    ([g, f]) => [g, col(f, 'display field').values as unknown[]] as const,
  );
  const keep = filterOf(task, byName);
  const shape: StateShape = { values: values !== null, distinct: uniques !== null };

  const total = new SeriesAcc(shape, -1);
  const series = new Map<string, SeriesAcc>();
  /** Series in the order of their first kept row (the order they are emitted in). */
  const order: SeriesAcc[] = [];
  let kept = 0;
  const from = task.eventFrom ?? -Infinity;
  const before = task.eventBefore ?? Infinity;
  for (let r = 0; r < n; r++) {
    if (ts[r]! < from || ts[r]! >= before) continue;
    if (keep !== null && !keep(r)) continue;
    const t = times[r];
    if (t === null || t === undefined) continue;
    kept++;
    const minute = t - (((t % 60_000) + 60_000) % 60_000);
    const v = values === null ? null : values[r]!;
    const u = uniques === null ? null : uniques[r]!;
    const h = u === null ? 0n : hashValue(u);
    total.add(minute, t, r, v, u !== null, h);
    if (groups.length === 0) continue;
    const key = groups.length === 1 ? keyPart(groups[0]![r]) : groups.map((g) => keyPart(g[r])).join('\u0000');
    let s = series.get(key);
    if (s === undefined) {
      series.set(key, (s = new SeriesAcc(shape, r)));
      order.push(s);
    }
    s.add(minute, t, r, v, u !== null, h);
  }

  const seen: SeenSeries[] = [];
  const partials: MinutePartial[] = [];
  const emit = (
    acc: SeriesAcc,
    hash: string,
    dimensions: Record<string, unknown>,
    labels: Record<string, unknown> | null,
  ) => {
    const index =
      seen.push({ hash, dimensions, display: labels, last: acc.last, lastAt: acc.last === null ? null : acc.lastAt }) -
      1;
    for (const [minute, state] of acc.minutes) partials.push({ series: index, minute, state: encodeState(state) });
  };
  if (kept > 0) emit(total, TOTAL_SERIES, {}, null);
  for (const s of order) {
    const dims = task.groupBy.map((_, i) => groups[i]![s.firstRow] ?? null);
    const dimensions: Record<string, unknown> = {};
    task.groupBy.forEach((g, i) => (dimensions[g] = dims[i]));
    let labels: Record<string, unknown> | null = null;
    if (display.length > 0) {
      labels = {};
      for (const [g, vals] of display) labels[g] = vals[s.latestRow] ?? null;
    }
    emit(s, seriesHash(dims), dimensions, labels);
  }
  return { metricId: task.metricId, revision: task.revision, series: seen, partials, kept };
}

/** The states of one series in one build, by minute. */
class SeriesAcc {
  readonly minutes = new Map<number, BucketState>();
  private lastMinute = NaN;
  private lastState: BucketState | null = null;
  /** Latest value of the value field and its time (ranking). */
  last: number | null = null;
  lastAt = -Infinity;
  /** Row of the record with the latest time (display values). */
  latestRow: number;
  private latestAt = -Infinity;

  constructor(
    private readonly shape: StateShape,
    readonly firstRow: number,
  ) {
    this.latestRow = firstRow;
  }

  add(minute: number, t: number, row: number, v: number | null, hasUnique: boolean, h: bigint): void {
    let st = this.lastState;
    if (minute !== this.lastMinute || st === null) {
      let found = this.minutes.get(minute);
      if (found === undefined) this.minutes.set(minute, (found = emptyState(this.shape)));
      this.lastMinute = minute;
      this.lastState = st = found;
    }
    st.count++;
    // Later rows win ties: within a batch, rows are in arrival order.
    if (t >= this.latestAt) {
      this.latestAt = t;
      this.latestRow = row;
    }
    if (v !== null) {
      st.values!.add(v);
      if (t >= st.lastAt) {
        st.last = v;
        st.lastAt = t;
      }
      if (t >= this.lastAt) {
        this.last = v;
        this.lastAt = t;
      }
    }
    if (hasUnique) st.distinct!.addHash(h);
  }
}

/** The filter as a row predicate over the columns (null: keep every row). */
function filterOf(task: MetricTask, byName: Map<string, OutputColumn>): ((row: number) => boolean) | null {
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
  return (row) => {
    for (const read of readers) read(row);
    return predicate(record);
  };
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
