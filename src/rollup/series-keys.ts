import type { OutputColumn } from '../transform/output-schema.js';

/**
 * Each row's series under one `group_by` over one view output: `ids[row]` numbers the distinct
 * combinations of the group values in the order their first row comes. Rows with the same id have
 * the same values (typed: "1" and 1 differ, null is its own value), so a metric can tell series apart
 * by id without building a key per row.
 */
export interface SeriesKeys {
  ids: Int32Array;
  /** Distinct combinations found. */
  count: number;
}

/**
 * Series keys shared by the metrics of one view's batch (issue 22, item 4): metrics with the same
 * `group_by` read the group columns once for all of them, not once each. Only group_by lists that
 * `shared` names are computed here (keying every row costs more than one metric's own keying of the
 * rows its filter keeps); `of` answers null for the others, and the builder keys its rows itself.
 */
export class SharedSeriesKeys {
  private readonly done = new Map<string, SeriesKeys>();

  constructor(
    private readonly byName: ReadonlyMap<string, OutputColumn>,
    private readonly rows: number,
    private readonly shared: ReadonlySet<string>,
  ) {}

  /** The keys of `groupBy` when shared (computed on first use), else null. */
  of(groupBy: readonly string[]): SeriesKeys | null {
    const sig = signature(groupBy);
    if (!this.shared.has(sig)) return null;
    let keys = this.done.get(sig);
    if (keys === undefined) {
      const groups = groupBy.map((g) => this.byName.get(g)?.values as unknown[] | undefined);
      if (groups.some((g) => g === undefined)) return null; // the builder reports the missing column
      keys = keysOf(groups as unknown[][], this.rows);
      this.done.set(sig, keys);
    }
    return keys;
  }
}

/** A group_by list as one string (the same fields in the same order share keys). */
export function signature(groupBy: readonly string[]): string {
  return groupBy.join('\u0000');
}

/** The group_by lists (signatures) at least two of `groupBys` have: the ones worth keying once. */
export function sharedSignatures(groupBys: ReadonlyArray<readonly string[]>): Set<string> {
  const seen = new Set<string>();
  const shared = new Set<string>();
  for (const g of groupBys) {
    if (g.length === 0) continue;
    const sig = signature(g);
    if (seen.has(sig)) shared.add(sig);
    seen.add(sig);
  }
  return shared;
}

function keysOf(groups: unknown[][], rows: number): SeriesKeys {
  const ids = new Int32Array(rows);
  const index = new Map<string, number>();
  for (let r = 0; r < rows; r++) {
    const key = groups.length === 1 ? keyPart(groups[0]![r]) : groups.map((g) => keyPart(g[r])).join('\u0000');
    let id = index.get(key);
    if (id === undefined) index.set(key, (id = index.size));
    ids[r] = id;
  }
  return { ids, count: index.size };
}

/** Typed key text of one group value: null and every type apart ("1" and 1 differ). */
export function keyPart(v: unknown): string {
  if (v === null || v === undefined) return '\u0001';
  return (typeof v === 'string' ? 's' : typeof v === 'number' ? 'n' : 'b') + String(v);
}
