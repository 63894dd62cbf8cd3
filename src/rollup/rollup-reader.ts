import {
  BIGINT,
  BOOLEAN,
  INTEGER,
  LIST,
  listValue,
  VARCHAR,
  type DuckDBDataChunk,
  type DuckDBMaterializedResult,
  type DuckDBValue,
} from '@duckdb/node-api';
import { decodeState, emptyState, figuresOf, mergeState, type BucketState, type StateFigures } from './bucket-state.js';
import {
  COLUMN_FIGURES,
  TIER_MS,
  TOTAL_SERIES,
  type StoredBucket,
  type StoredColumns,
  type Tier,
} from './rollup-types.js';
import type { RollupReader, RollupReadQuery } from './rollup-reader-contract.js';
import { allocColumns, columnsOfBuckets } from './stored-columns.js';
import { decodeStateWithoutDistinct, readStateScalars, type StateScalars } from './state-scalars.js';
import { duck, tierTable, type RollupStore } from './rollup-store.js';

/** Up to this many series a read matches names with list functions; more take a hash join. */
const FEW_NAMES = 64;

/** Longest bucket (a 31-day month): a partial minute below `to` + this can still fall in a bucket below `to`. */
const LONGEST_BUCKET_MS = 31 * 86_400_000;

/**
 * `RollupReader.read` over the canonical rows, merged with the partials the compactor has not folded
 * yet, in one statement (one snapshot: a compaction committing meanwhile is seen wholly or not at
 * all), so a read is never staler than DuckDB. A row with partials is decoded and merged in the
 * process, its figures recomputed; a row without them is answered from its stored figures (its blob
 * is read only when `sketches` asks for it). `completeThrough` comes from the caller (rollups.ts).
 *
 * Speed (a 24 h by-minute read of 10 series is 14,400 rows): series travel as their index in the
 * sorted list of names asked for, never as a VARCHAR per row (decoding one string a row cost more
 * than the query); numbers come as DOUBLE straight from the result's vectors; a row's partials are
 * found by a hash join, not a correlated EXISTS (which cost ~2× the scan).
 */
export function rollupReader(store: RollupStore, completeThrough: (metricId: string) => number | null): RollupReader {
  return {
    completeThrough,
    async read(q) {
      const r = await readRaw(store, q);
      if (r === null) return [];
      return r.rows.partials === 0
        ? compactedBuckets(r.rows, r.names, q.sketches)
        : mergedInOrder(r.rows, r.names, q.sketches, decoderFor(r.wanted));
    },

    async readColumns(q) {
      const r = await readRaw(store, q);
      if (r === null) return allocColumns(0, [], q.sketches);
      const c =
        r.rows.partials === 0
          ? compactedColumns(r.rows, r.names, q.sketches, r.wanted)
          : // Figures that merge from the states' headers: no sketch decoded (a backlog of partials waits).
            r.scalar
            ? mergedScalarColumns(r.rows, r.names, r.wanted)
            : columnsOfBuckets(mergedInOrder(r.rows, r.names, q.sketches, decoderFor(r.wanted)));
      if (r.leftOut > 0) c.leftOut = r.leftOut;
      return c;
    },

    async seriesWithData(q) {
      if (q.spans.length === 0) return [];
      const params: DuckDBValue[] = [q.metricId, q.revision];
      const parts: string[] = [];
      for (const s of q.spans) {
        params.push(BigInt(Math.floor(s.from)), BigInt(Math.ceil(s.to)));
        const [a, b] = [params.length - 1, params.length];
        parts.push(
          `SELECT DISTINCT series FROM ${tierTable(s.tier)} WHERE metric_id = $1 AND revision = $2 AND start >= $${a} AND start < $${b} AND count > 0`,
        );
        // A partial holds at least one record (a batch registers only series it saw).
        if (s.tier === 'minute')
          parts.push(
            `SELECT DISTINCT series FROM rollup_partials WHERE metric_id = $1 AND revision = $2 AND minute >= $${a} AND minute < $${b}`,
          );
      }
      // Partials of a coarser span: their minute may sit anywhere inside the span's buckets.
      const lo = Math.min(...q.spans.map((s) => s.from));
      const hi = Math.max(...q.spans.map((s) => s.to));
      params.push(BigInt(Math.floor(lo)), BigInt(Math.ceil(hi)));
      parts.push(
        `SELECT DISTINCT series FROM rollup_partials WHERE metric_id = $1 AND revision = $2 AND minute >= $${params.length - 1} AND minute < $${params.length}`,
      );
      const types = [VARCHAR, INTEGER, ...params.slice(2).map(() => BIGINT)];
      const r = await duck('list series with data', () =>
        store.reader.runAndReadAll(parts.join(' UNION '), params, types),
      );
      const col = r.getColumns()[0] ?? [];
      return col.map(String);
    },
  };
}

/** The statement of `read`: canonical rows and the partials not folded yet, column-wise; null when no series is asked. */
async function readRaw(
  store: RollupStore,
  q: RollupReadQuery,
): Promise<{ rows: Rows; names: string[]; wanted: boolean[]; scalar: boolean; leftOut: number } | null> {
  // Sorted names: index order is series order, so rows come out grouped as the contract wants.
  const names = q.series === null ? await realSeries(store, q) : [...new Set(q.series)].sort();
  if (names.length === 0) return null;
  const bucket = bucketSql(q.tier, 'minute');
  // Fewer columns: a 24 h by-minute read of count and sum took ~2 ms less in DuckDB with 4 than with 12.
  const wanted = COLUMN_FIGURES.map((f) => q.figures === undefined || q.figures.has(f));
  // Only figures a state's header holds: canonical rows with partials are merged from their figure
  // columns and the partials' headers, so no canonical state is fetched.
  const scalar = !q.sketches && COLUMN_FIGURES.every((f, k) => !wanted[k] || SCALAR_FIGURES.has(f));
  const params: DuckDBValue[] = [
    q.metricId,
    q.revision,
    BigInt(Math.floor(q.from)),
    BigInt(Math.ceil(q.to)),
    BigInt(Math.ceil(q.to) + LONGEST_BUCKET_MS),
    q.sketches,
    listValue(names),
  ];
  const types = [VARCHAR, INTEGER, BIGINT, BIGINT, BIGINT, BOOLEAN, LIST(VARCHAR)];
  const budget = q.partialBudget;
  if (budget) {
    params.push(BigInt(Math.max(0, Math.floor(budget.rows))), BigInt(Math.floor(budget.keepFrom)));
    types.push(BIGINT, BIGINT);
  }
  // A few names: matched in the list itself (cheaper than a join); many: a hash join on them.
  const few = names.length <= FEW_NAMES;
  const match = (t: string) =>
    few
      ? { from: '', where: `AND list_contains($7, ${t}.series)`, si: `list_position($7, ${t}.series) - 1` }
      : { from: `JOIN n ON n.series = ${t}.series`, where: '', si: 'n.si' };
  const [mc, mp] = [match('c'), match('r')];
  const sql = `WITH n AS (SELECT unnest($7) AS series, unnest(range(len($7))) AS si),
    ${
      budget
        ? `pa AS (
      SELECT ${mp.si} AS si, ${bucket} AS start, r.minute, r.state FROM rollup_partials r ${mp.from}
      WHERE r.metric_id = $1 AND r.revision = $2 AND r.minute >= $3 AND r.minute < $5 ${mp.where}),
    pc AS (SELECT count(*) AS c FROM pa WHERE start >= $3 AND start < $4),
    p AS (SELECT si, start, state FROM pa, pc WHERE pc.c <= $8 OR pa.minute >= $9),`
        : `p AS (
      SELECT ${mp.si} AS si, ${bucket} AS start, r.state FROM rollup_partials r ${mp.from}
      WHERE r.metric_id = $1 AND r.revision = $2 AND r.minute >= $3 AND r.minute < $5 ${mp.where}),`
    }
    pk AS (SELECT DISTINCT si, start FROM p)
    SELECT 0::DOUBLE AS part, (${mc.si})::DOUBLE, ${NUMBERS.map((f, k) => (wanted[k] ? `CAST(c.${f} AS DOUBLE)` : 'NULL::DOUBLE')).join(', ')},
      CASE WHEN $6 OR ${scalar ? 'false' : 'pk.si IS NOT NULL'} THEN c.state END AS state
    FROM ${tierTable(q.tier)} c ${mc.from} LEFT JOIN pk ON pk.si = ${mc.si} AND pk.start = c.start
    WHERE c.metric_id = $1 AND c.revision = $2 AND c.start >= $3 AND c.start < $4 ${mc.where}
    UNION ALL
    SELECT 1, si::DOUBLE, CAST(start AS DOUBLE), ${NUMBERS.slice(1)
      .map(() => 'NULL')
      .join(', ')}, state FROM p WHERE start >= $3 AND start < $4${
      // Over the budget: one more row (part 2) says how many partials were in the range.
      budget ? ` UNION ALL SELECT 2, c::DOUBLE, ${NUMBERS.map(() => 'NULL').join(', ')}, NULL FROM pc WHERE c > $8` : ''
    }`;
  const result = await duck('read rollups', () => store.reader.run(sql, params, types));
  const rows = readRows(result, wanted, q.sketches);
  const waiting = budget ? takeMarker(rows) : null;
  return { rows, names, wanted, scalar, leftOut: waiting === null ? 0 : Math.max(0, waiting - rows.partials) };
}

/** The real series (not TOTAL_SERIES) with rows or partials in the read's range: a read of "every series". */
async function realSeries(store: RollupStore, q: RollupReadQuery): Promise<string[]> {
  const sql = `SELECT DISTINCT series FROM ${tierTable(q.tier)} WHERE metric_id = $1 AND revision = $2 AND start >= $3 AND start < $4 AND series <> '${TOTAL_SERIES}'
    UNION SELECT DISTINCT series FROM rollup_partials WHERE metric_id = $1 AND revision = $2 AND minute >= $3 AND minute < $5 AND series <> '${TOTAL_SERIES}'`;
  const params: DuckDBValue[] = [
    q.metricId,
    q.revision,
    BigInt(Math.floor(q.from)),
    BigInt(Math.ceil(q.to)),
    BigInt(Math.ceil(q.to) + LONGEST_BUCKET_MS),
  ];
  const r = await duck('list series', () =>
    store.reader.runAndReadAll(sql, params, [VARCHAR, INTEGER, BIGINT, BIGINT, BIGINT]),
  );
  return (r.getColumns()[0] ?? []).map(String).sort();
}

/** A read's result column-wise: numbers (NaN for NULL) and the state blobs. */
interface Rows {
  length: number;
  /** Rows that are partials (`part` 1). */
  partials: number;
  part: Float64Array;
  si: Float64Array;
  /** NUMBERS, in order. */
  numbers: Float64Array[];
  blobs: Array<Uint8Array | null>;
}

function readRows(result: DuckDBMaterializedResult, wanted: readonly boolean[], sketches: boolean): Rows {
  const chunks: DuckDBDataChunk[] = [];
  let length = 0;
  for (let c = 0; c < result.chunkCount; c++) {
    const chunk = result.getChunk(c);
    chunks.push(chunk);
    length += chunk.rowCount;
  }
  // Figures not read share one array of NaN.
  let none: Float64Array | null = null;
  const doubles = Array.from({ length: 2 + NUMBERS.length }, (_, k) =>
    k < 2 || wanted[k - 2] ? new Float64Array(length) : (none ??= new Float64Array(length).fill(NaN)),
  );
  const blobs = new Array<Uint8Array | null>(length);
  let at = 0;
  for (const chunk of chunks) {
    const n = chunk.rowCount;
    for (let k = 0; k < doubles.length; k++) {
      if (k < 2 || wanted[k - 2]) readDoubles(chunk, k, n, doubles[k]!, at);
    }
    at += n;
  }
  const [part, si, ...numbers] = doubles as [Float64Array, Float64Array, ...Float64Array[]];
  let partials = 0;
  for (let i = 0; i < length; i++) if (part[i] !== 0) partials++;
  // Without sketches a state is read only for rows with partials: none, no blob to look at (a
  // 24 h by-minute read spent ~1 ms asking 14,400 NULLs for their value).
  if (sketches || partials > 0) {
    at = 0;
    for (const chunk of chunks) {
      const v = chunk.getColumnVector(doubles.length);
      for (let i = 0; i < chunk.rowCount; i++) {
        const b = v.getItem(i) as { bytes: Uint8Array } | null;
        blobs[at + i] = b === null ? null : b.bytes;
      }
      at += chunk.rowCount;
    }
  } else blobs.fill(null);
  return { length, partials, part, si, numbers, blobs };
}

/**
 * The partials waiting in a budgeted read's range when they were over its budget (the part-2 row,
 * taken out of `rows`), or null when they were within it.
 */
function takeMarker(rows: Rows): number | null {
  let at = -1;
  for (let i = 0; i < rows.length && at < 0; i++) if (rows.part[i] === 2) at = i;
  if (at < 0) return null;
  const waiting = rows.si[at]!;
  const without = (a: Float64Array): Float64Array => {
    const out = new Float64Array(a.length - 1);
    out.set(a.subarray(0, at));
    out.set(a.subarray(at + 1), at);
    return out;
  };
  rows.part = without(rows.part);
  rows.si = without(rows.si);
  // Figures not read share one array (readRows): each is cut once.
  const cut = new Map<Float64Array, Float64Array>();
  rows.numbers = rows.numbers.map((a) => cut.get(a) ?? (cut.set(a, without(a)), cut.get(a)!));
  rows.blobs.splice(at, 1);
  rows.length--;
  rows.partials--;
  return waiting;
}

/** One DOUBLE column of a chunk into `out` from `at` (NULL as NaN): a tight loop over the vector. */
function readDoubles(chunk: DuckDBDataChunk, column: number, n: number, out: Float64Array, at: number): void {
  const v = chunk.getColumnVector(column);
  for (let i = 0; i < n; i++) {
    const x = v.getItem(i) as number | null;
    out[at + i] = x === null ? NaN : x;
  }
}

/** Everything compacted (the usual case): one stored row per bucket, nothing to merge, in (series, start) order. */
function compactedBuckets(rows: Rows, names: readonly string[], sketches: boolean): StoredBucket[] {
  const [start, count, valueCount, sum, min, max, last, lastAt, p50, p95, p99, distinct] = rows.numbers as [
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
  ];
  const order = seriesThenStartOrder(rows.si, start, rows.length, names.length);
  const out = new Array<StoredBucket>(rows.length);
  for (let j = 0; j < rows.length; j++) {
    const i = order[j]!;
    const blob = rows.blobs[i]!;
    // Fields written out in one literal: one allocation a row, one hidden class.
    out[j] = {
      count: count[i]!,
      value_count: valueCount[i]!,
      sum: orNull(sum[i]!),
      min: orNull(min[i]!),
      max: orNull(max[i]!),
      last: orNull(last[i]!),
      last_at: orNull(lastAt[i]!),
      p50: orNull(p50[i]!),
      p95: orNull(p95[i]!),
      p99: orNull(p99[i]!),
      distinct: orNull(distinct[i]!),
      series: names[rows.si[i]!]!,
      start: start[i]!,
      state: sketches && blob !== null ? decodeState(blob) : null,
    };
  }
  return out;
}

/** `compactedBuckets` column-wise: the rows gathered into (series, start) order. */
function compactedColumns(
  rows: Rows,
  names: readonly string[],
  sketches: boolean,
  wanted: readonly boolean[],
): StoredColumns {
  const order = seriesThenStartOrder(rows.si, rows.numbers[0]!, rows.length, names.length);
  const c = allocColumns(rows.length, names, sketches, wanted);
  const decode = decoderFor(wanted);
  COLUMN_FIGURES.forEach((f, k) => {
    const from = rows.numbers[k]!;
    const to = c[f];
    // A figure not read is NaN throughout (allocColumns): no gathering.
    if (wanted[k]) for (let j = 0; j < rows.length; j++) to[j] = from[order[j]!]!;
  });
  for (let j = 0; j < rows.length; j++) {
    const i = order[j]!;
    c.si[j] = rows.si[i]!;
    if (c.states) {
      const blob = rows.blobs[i];
      c.states[j] = blob ? decode(blob) : null;
    }
  }
  return c;
}

/**
 * Row indexes ordered by series index then start: a counting sort on the series index (names are
 * sorted, so this is series order), then each series' run sorted by start unless the scan already
 * returned it in order (the usual case).
 */
function seriesThenStartOrder(si: Float64Array, start: Float64Array, length: number, series: number): Uint32Array {
  const offsets = new Uint32Array(series + 1);
  for (let i = 0; i < length; i++) offsets[si[i]! + 1]!++;
  for (let k = 0; k < series; k++) offsets[k + 1]! += offsets[k]!;
  const next = offsets.slice(0, series);
  const order = new Uint32Array(length);
  for (let i = 0; i < length; i++) order[next[si[i]!]!++] = i;
  for (let k = 0; k < series; k++) {
    const [a, b] = [offsets[k]!, offsets[k + 1]!];
    let ordered = true;
    for (let j = a + 1; j < b && ordered; j++) if (start[order[j - 1]!]! > start[order[j]!]!) ordered = false;
    if (!ordered) order.subarray(a, b).sort((x, y) => start[x]! - start[y]!);
  }
  return order;
}

/** How a read decodes states: without the distinct sketch when it wants no distinct count (its last figure). */
function decoderFor(wanted: readonly boolean[]): (blob: Uint8Array) => BucketState {
  return wanted[COLUMN_FIGURES.indexOf('distinct')] ? decodeState : decodeStateWithoutDistinct;
}

/** Figures a state's header holds (state-scalars.ts). */
const SCALAR_FIGURES: ReadonlySet<string> = new Set([
  'start',
  'count',
  'value_count',
  'sum',
  'min',
  'max',
  'last',
  'last_at',
]);

/**
 * `mergedBuckets` for reads of scalar figures only, column-wise: a canonical row gives its figure
 * columns, a partial the scalars of its state's header (no sketch decoded, no object per row). The
 * same figures as merging the states: counts and sums add (canonical first, then the partials),
 * extremes compare, the latest `last` wins (a tie: the one merged last).
 */
function mergedScalarColumns(rows: Rows, names: readonly string[], wanted: readonly boolean[]): StoredColumns {
  const [start, count, valueCount, sum, min, max, last, lastAt] = rows.numbers as Float64Array[] as [
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
  ];
  // One output row per (series, bucket start): canonical figures, then the partials' sums apart.
  const at = names.map(() => new Map<number, number>());
  const cap = rows.length;
  const o = {
    si: new Float64Array(cap),
    start: new Float64Array(cap),
    hasCanonical: new Uint8Array(cap),
    count: new Float64Array(cap),
    valueCount: new Float64Array(cap),
    sum: new Float64Array(cap),
    partSum: new Float64Array(cap),
    min: new Float64Array(cap).fill(NaN),
    max: new Float64Array(cap).fill(NaN),
    last: new Float64Array(cap).fill(NaN),
    lastAt: new Float64Array(cap).fill(NaN),
  };
  let n = 0;
  const sc: StateScalars = { count: 0, valueCount: 0, sum: NaN, min: NaN, max: NaN, last: NaN, lastAt: NaN };
  const lesser = (a: number, b: number) => (Number.isNaN(a) ? b : Number.isNaN(b) ? a : Math.min(a, b));
  const greater = (a: number, b: number) => (Number.isNaN(a) ? b : Number.isNaN(b) ? a : Math.max(a, b));
  for (let i = 0; i < rows.length; i++) {
    const si = rows.si[i]!;
    const st = start[i]!;
    let j = at[si]!.get(st);
    if (j === undefined) {
      at[si]!.set(st, (j = n++));
      o.si[j] = si;
      o.start[j] = st;
    }
    if (rows.part[i] === 0) {
      o.hasCanonical[j] = 1;
      o.count[j]! += count[i]!;
      o.valueCount[j]! += valueCount[i]!;
      if (valueCount[i]! > 0) o.sum[j] = sum[i]!;
      o.min[j] = lesser(o.min[j]!, min[i]!);
      o.max[j] = greater(o.max[j]!, max[i]!);
      // The canonical row merges first: a partial's `last` at the same time wins over it.
      if (!Number.isNaN(last[i]!) && (Number.isNaN(o.lastAt[j]!) || lastAt[i]! > o.lastAt[j]!)) {
        o.last[j] = last[i]!;
        o.lastAt[j] = lastAt[i]!;
      }
      continue;
    }
    const blob = rows.blobs[i];
    if (!blob) continue;
    readStateScalars(blob, sc);
    o.count[j]! += sc.count;
    if (sc.valueCount > 0) {
      o.valueCount[j]! += sc.valueCount;
      o.partSum[j]! += sc.sum;
      o.min[j] = lesser(o.min[j]!, sc.min);
      o.max[j] = greater(o.max[j]!, sc.max);
    }
    if (!Number.isNaN(sc.last) && (Number.isNaN(o.lastAt[j]!) || sc.lastAt >= o.lastAt[j]!)) {
      o.last[j] = sc.last;
      o.lastAt[j] = sc.lastAt;
    }
  }
  const order = seriesThenStartOrder(o.si, o.start, n, names.length);
  const c = allocColumns(n, names, false, wanted);
  for (let r = 0; r < n; r++) {
    const j = order[r]!;
    c.si[r] = o.si[j]!;
    if (wanted[0]) c.start[r] = o.start[j]!;
    if (wanted[1]) c.count[r] = o.count[j]!;
    if (wanted[2]) c.value_count[r] = o.valueCount[j]!;
    if (wanted[3]) c.sum[r] = o.valueCount[j]! > 0 ? o.sum[j]! + o.partSum[j]! : NaN;
    if (wanted[4]) c.min[r] = o.min[j]!;
    if (wanted[5]) c.max[r] = o.max[j]!;
    if (wanted[6]) c.last[r] = o.last[j]!;
    if (wanted[7]) c.last_at[r] = o.lastAt[j]!;
  }
  return c;
}

/** Canonical rows with partials merged into them (or standing alone), by (series, start). */
function mergedBuckets(
  rows: Rows,
  names: readonly string[],
  sketches: boolean,
  decode: (blob: Uint8Array) => BucketState,
): StoredBucket[] {
  const out = new Map<
    string,
    { si: number; start: number; figures: StateFigures | null; state: BucketState | null; merged: boolean }
  >();
  for (let i = 0; i < rows.length; i++) {
    const si = rows.si[i]!;
    const start = rows.numbers[0]![i]!;
    const key = `${si}\u0000${start}`;
    const blob = rows.blobs[i]!;
    const state = blob === null ? null : decode(blob);
    let b = out.get(key);
    if (!b) out.set(key, (b = { si, start, figures: null, state: null, merged: false }));
    if (rows.part[i] === 0) {
      b.figures = figuresAt(rows.numbers, i);
      if (state) b.state = b.state ? mergeInto(state, b.state) : state;
    } else {
      b.merged = true;
      b.state ??= emptyState({ values: state!.values !== null, distinct: state!.distinct !== null });
      mergeState(b.state, state!);
    }
  }
  const buckets: StoredBucket[] = [];
  for (const b of out.values())
    buckets.push(
      storedBucket(b.merged ? figuresOf(b.state!) : b.figures!, names[b.si]!, b.start, sketches ? b.state : null),
    );
  return buckets;
}

const mergedInOrder = (
  rows: Rows,
  names: readonly string[],
  sketches: boolean,
  decode: (blob: Uint8Array) => BucketState,
): StoredBucket[] =>
  mergedBuckets(rows, names, sketches, decode).sort((a, b) =>
    a.series < b.series ? -1 : a.series > b.series ? 1 : a.start - b.start,
  );

/** Every field written out: an object spread here cost ~5 µs a row (V8), most of a 24 h read. */
function storedBucket(f: StateFigures, series: string, start: number, state: BucketState | null): StoredBucket {
  return {
    count: f.count,
    value_count: f.value_count,
    sum: f.sum,
    min: f.min,
    max: f.max,
    last: f.last,
    last_at: f.last_at,
    p50: f.p50,
    p95: f.p95,
    p99: f.p99,
    distinct: f.distinct,
    series,
    start,
    state,
  };
}

/** `into` (the canonical state) with `partials` merged after it: canonical first, as the compactor merges. */
function mergeInto(into: BucketState, partials: BucketState): BucketState {
  mergeState(into, partials);
  return into;
}

/** Stored figure columns after `series`, in this order (`start` first): COLUMN_FIGURES' order, `distinct` stored as `distinct_count`. */
const NUMBERS = [
  'start',
  'count',
  'value_count',
  'sum',
  'min',
  'max',
  'last',
  'last_at',
  'p50',
  'p95',
  'p99',
  'distinct_count',
] as const;

const orNull = (x: number): number | null => (Number.isNaN(x) ? null : x);

function figuresAt(c: readonly Float64Array[], i: number): StateFigures {
  return {
    count: c[1]![i]!,
    value_count: c[2]![i]!,
    sum: orNull(c[3]![i]!),
    min: orNull(c[4]![i]!),
    max: orNull(c[5]![i]!),
    last: orNull(c[6]![i]!),
    last_at: orNull(c[7]![i]!),
    p50: orNull(c[8]![i]!),
    p95: orNull(c[9]![i]!),
    p99: orNull(c[10]![i]!),
    distinct: orNull(c[11]![i]!),
  };
}

/** SQL of the UTC bucket start of a tier for an epoch-ms column (no user text). */
function bucketSql(tier: Tier, col: string): string {
  if (tier === 'month') return `epoch_ms(date_trunc('month', make_timestamp(${col} * 1000)))`;
  const w = TIER_MS[tier];
  return `(${col} - ((${col} % ${w}) + ${w}) % ${w})`;
}
