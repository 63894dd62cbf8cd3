import { seriesHash } from './series-hash.js';

/**
 * Each row's series under one `group_by` over one view output, keyed on demand: `id(row)` numbers
 * the distinct combinations of the group values in the order they are first asked for. Rows with
 * the same id have the same values (typed: "1" and 1 differ, null is its own value), so a builder
 * tells series apart by id without building a key per row per metric. Only rows asked for are keyed
 * (a filter that keeps few rows keys few), and each at most once however many metrics ask.
 */
export class SeriesKeys {
  private readonly ids: Int32Array;
  private readonly index = new Map<string, number>();
  /** A row of each id (its group values are the id's). */
  private readonly rows: number[] = [];
  private readonly hashes: Array<string | undefined> = [];

  constructor(
    private readonly groups: ReadonlyArray<ArrayLike<unknown>>,
    rows: number,
  ) {
    this.ids = new Int32Array(rows).fill(-1);
  }

  /** Rows of the batch (ids are below it). */
  get capacity(): number {
    return this.ids.length;
  }

  /** Distinct combinations keyed so far. */
  get count(): number {
    return this.rows.length;
  }

  /** The series id of `row`. */
  id(row: number): number {
    let id = this.ids[row]!;
    if (id >= 0) return id;
    const g = this.groups;
    const key = g.length === 1 ? keyPart(g[0]![row]) : Array.from(g, (c) => keyPart(c[row])).join('\u0000');
    const known = this.index.get(key);
    if (known === undefined) {
      id = this.rows.length;
      this.index.set(key, id);
      this.rows.push(row);
    } else id = known;
    this.ids[row] = id;
    return id;
  }

  /** The group values of an id, in group_by order (null for a missing value). */
  values(id: number): unknown[] {
    const row = this.rows[id]!;
    return Array.from(this.groups, (c) => c[row] ?? null);
  }

  /** The stable hash of an id's series (seriesHash), computed once for every metric of the group_by. */
  hash(id: number): string {
    let h = this.hashes[id];
    if (h === undefined) this.hashes[id] = h = seriesHash(this.values(id));
    return h;
  }
}

/** A group_by list as one string (the same fields in the same order share keys). */
export function signature(groupBy: readonly string[]): string {
  return groupBy.join('\u0000');
}

/** Typed key text of one group value: null and every type apart ("1" and 1 differ). */
export function keyPart(v: unknown): string {
  if (v === null || v === undefined) return '\u0001';
  return (typeof v === 'string' ? 's' : typeof v === 'number' ? 'n' : 'b') + String(v);
}
