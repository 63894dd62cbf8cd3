import {
  decodeState,
  emptyState,
  encodeState,
  figuresOf,
  mergeState,
  type BucketState,
  type StateFigures,
} from './bucket-state.js';
import { bucketStart, TIERS } from './rollup-types.js';

/**
 * The CPU half of a compaction pass (compactor.ts), as a pure function of plain arrays so it can run
 * on a thread of its own (compact-worker.ts): the pass's partial rows merged into minute, hour, day
 * and month deltas, each delta merged with the stored row it replaces, and every row to write with
 * its figures and state bytes. The compactor's DuckDB half reads the inputs and writes the output.
 */

/** Rows as columns: group (metric revision) and series numbers, bucket start, state bytes (`states` cut at `ends`). */
export interface StateRows {
  g: Int32Array;
  s: Int32Array;
  start: Float64Array;
  states: Uint8Array;
  /** End offset of each row's state in `states`. */
  ends: Uint32Array;
}

export interface MergeInput {
  /** The pass's partial rows in commit order (a tie of `last` keeps the value merged last). */
  partials: StateRows;
  /** Per tier (TIERS order), the stored rows the pass's deltas replace. */
  existing: StateRows[];
}

/** Number of figure columns a written row carries (FIGURES order), NaN for SQL NULL. */
export const FIGURES = [
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
  'distinct',
] as const;

/** Per tier, the rows to write: `figures` holds FIGURES.length numbers a row. */
export type MergeOutput = Array<StateRows & { figures: Float64Array }>;

/** Every ArrayBuffer of `rows`, to transfer them between threads. */
export function buffersOf(rows: StateRows[]): ArrayBuffer[] {
  return rows.flatMap((r) => [r.g.buffer, r.s.buffer, r.start.buffer, r.states.buffer, r.ends.buffer] as ArrayBuffer[]);
}

interface Delta {
  g: number;
  s: number;
  start: number;
  state: BucketState;
  /** The encoded `state` when it is one part's unchanged; null once merged. */
  bytes: Uint8Array | null;
  /** Whether `state` is a part's own object (copied before a merge into it). */
  shared: boolean;
}

/**
 * A (series number, bucket start) key as one safe integer: minutes from the epoch offset by half their
 * span (years 1715 to 2225) below 2^28, series numbers below 2^25 (a pass's series are fewer than its
 * rows). Each group has its own map.
 */
const MINUTE_SPAN = 2 ** 28;
const keyOf = (s: number, start: number) => s * MINUTE_SPAN + Math.floor(start / 60_000) + MINUTE_SPAN / 2;

/** Per group number, its deltas by key. */
type Deltas = Array<Map<number, Delta>>;

function addTo(
  deltas: Deltas,
  g: number,
  s: number,
  start: number,
  part: { state: BucketState; bytes: Uint8Array | null },
): void {
  const key = keyOf(s, start);
  const map = (deltas[g] ??= new Map());
  const d = map.get(key);
  if (!d) {
    map.set(key, { g, s, start, state: part.state, bytes: part.bytes, shared: true });
    return;
  }
  if (d.shared) {
    const own = emptyState({ values: d.state.values !== null, distinct: d.state.distinct !== null });
    mergeState(own, d.state);
    d.state = own;
    d.shared = false;
  }
  mergeState(d.state, part.state);
  d.bytes = null;
}

/** Collects rows one at a time (their state bytes copied), then gives them as StateRows. */
export class StateRowsBuilder {
  private readonly g: number[] = [];
  private readonly s: number[] = [];
  private readonly start: number[] = [];
  private readonly parts: Uint8Array[] = [];
  private size = 0;

  get length(): number {
    return this.g.length;
  }

  add(g: number, s: number, start: number, state: Uint8Array): void {
    this.g.push(g);
    this.s.push(s);
    this.start.push(start);
    this.parts.push(state);
    this.size += state.byteLength;
  }

  build(): StateRows {
    const n = this.g.length;
    const states = new Uint8Array(this.size);
    const ends = new Uint32Array(n);
    let at = 0;
    for (let i = 0; i < n; i++) {
      states.set(this.parts[i]!, at);
      at += this.parts[i]!.byteLength;
      ends[i] = at;
    }
    return {
      g: Int32Array.from(this.g),
      s: Int32Array.from(this.s),
      start: Float64Array.from(this.start),
      states,
      ends,
    };
  }
}

const stateAt = (rows: StateRows, i: number) => rows.states.subarray(i === 0 ? 0 : rows.ends[i - 1]!, rows.ends[i]!);

export function mergePass(input: MergeInput): MergeOutput {
  const minutes: Deltas = [];
  const p = input.partials;
  for (let i = 0; i < p.g.length; i++) {
    const bytes = stateAt(p, i);
    addTo(minutes, p.g[i]!, p.s[i]!, p.start[i]!, { state: decodeState(bytes), bytes });
  }
  // Every tier's deltas before a stored row is merged into any: an hour is the merge of its
  // minutes, a day of its hours, a month of its days.
  const tiers: Deltas[] = [minutes];
  for (let t = 1; t < TIERS.length; t++) {
    const deltas: Deltas = [];
    for (const map of tiers[t - 1]!) {
      if (!map) continue;
      for (const d of map.values()) addTo(deltas, d.g, d.s, bucketStart(TIERS[t]!, d.start), d);
    }
    tiers.push(deltas);
  }
  // A state shared by the rows of several tiers has its figures computed once.
  const figures = new Map<BucketState, StateFigures>();
  return tiers.map((deltas, t) => {
    const stored = input.existing[t]!;
    for (let i = 0; i < stored.g.length; i++) {
      const d = deltas[stored.g[i]!]?.get(keyOf(stored.s[i]!, stored.start[i]!));
      if (!d) throw new Error(`compaction: a stored ${TIERS[t]} row the pass did not ask for`);
      const merged = decodeState(stateAt(stored, i));
      mergeState(merged, d.state);
      d.state = merged;
      d.bytes = null;
    }
    return rowsOf(deltas, figures);
  });
}

function rowsOf(deltas: Deltas, cache: Map<BucketState, StateFigures>): StateRows & { figures: Float64Array } {
  let n = 0;
  for (const map of deltas) if (map) n += map.size;
  const g = new Int32Array(n);
  const s = new Int32Array(n);
  const start = new Float64Array(n);
  const ends = new Uint32Array(n);
  const figures = new Float64Array(n * FIGURES.length);
  const parts: Uint8Array[] = new Array(n);
  let size = 0;
  let i = 0;
  for (const map of deltas) {
    if (!map) continue;
    for (const d of map.values()) {
      g[i] = d.g;
      s[i] = d.s;
      start[i] = d.start;
      let f = cache.get(d.state);
      if (!f) cache.set(d.state, (f = figuresOf(d.state)));
      const o = i * FIGURES.length;
      figures[o] = f.count;
      figures[o + 1] = f.value_count;
      figures[o + 2] = f.sum ?? Number.NaN;
      figures[o + 3] = f.min ?? Number.NaN;
      figures[o + 4] = f.max ?? Number.NaN;
      figures[o + 5] = f.last ?? Number.NaN;
      figures[o + 6] = f.last_at ?? Number.NaN;
      figures[o + 7] = f.p50 ?? Number.NaN;
      figures[o + 8] = f.p95 ?? Number.NaN;
      figures[o + 9] = f.p99 ?? Number.NaN;
      figures[o + 10] = f.distinct ?? Number.NaN;
      const bytes = d.bytes ?? encodeState(d.state);
      parts[i] = bytes;
      size += bytes.byteLength;
      ends[i] = size;
      i++;
    }
  }
  const states = new Uint8Array(size);
  for (let k = 0; k < n; k++) states.set(parts[k]!, k === 0 ? 0 : ends[k - 1]!);
  return { g, s, start, states, ends, figures };
}

/**
 * `rows` cut into `n` parts by series number (`s % n`). Every key a pass merges — a tier row's
 * (group, series, bucket) — lies in one part, so the parts merge independently (on several threads)
 * and their outputs together are the whole pass's. Each part keeps the rows' order.
 */
export function splitBySeries(rows: StateRows, n: number): StateRows[] {
  const parts = Array.from({ length: n }, () => new StateRowsBuilder());
  for (let i = 0; i < rows.g.length; i++)
    parts[rows.s[i]! % n]!.add(rows.g[i]!, rows.s[i]!, rows.start[i]!, stateAt(rows, i));
  return parts.map((p) => p.build());
}

/** The outputs of the parts of one pass, one tier at a time, as one output. */
export function joinOutputs(outputs: MergeOutput[]): MergeOutput {
  return outputs[0]!.map((_, t) => {
    const tier = outputs.map((o) => o[t]!);
    const n = tier.reduce((k, r) => k + r.g.length, 0);
    const size = tier.reduce((k, r) => k + r.states.byteLength, 0);
    const out = {
      g: new Int32Array(n),
      s: new Int32Array(n),
      start: new Float64Array(n),
      states: new Uint8Array(size),
      ends: new Uint32Array(n),
      figures: new Float64Array(n * FIGURES.length),
    };
    let row = 0;
    let byte = 0;
    for (const r of tier) {
      out.g.set(r.g, row);
      out.s.set(r.s, row);
      out.start.set(r.start, row);
      out.figures.set(r.figures, row * FIGURES.length);
      out.states.set(r.states, byte);
      for (let i = 0; i < r.ends.length; i++) out.ends[row + i] = r.ends[i]! + byte;
      row += r.g.length;
      byte += r.states.byteLength;
    }
    return out;
  });
}
