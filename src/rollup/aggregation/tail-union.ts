import { createHash } from 'node:crypto';
import { TOTAL_SERIES, type StoredColumns } from '../rollup-types.js';
import { CellGrid } from './assemble.js';
import { mergeCells, type Cell } from './cell.js';
import { coalesce, tileBucket, type ReadSpan, type Tile } from './tiling.js';

/**
 * `__other__` by merging the tail (read-plan.ts `OtherMethod` `merge`: `last` and `count_unique`,
 * which cannot be subtracted). Merging 990 series' distinct sketches per bucket on every request
 * cost ~1.5 s for 30 days by day; the merged tail of a bucket is cached instead.
 *
 * Key: metric, revision, the kept series (digest), the bucket and the stored rows tiling it: the tail
 * of a bucket is every series with rows in it but the kept ones and the total (each has data in the
 * window), so the kept series name it without listing the tail (a metric may have 100,000). The
 * rows of a key only ever gain records (merges add, compaction moves partials into rows without
 * changing the merge; a rebuild is a new revision), so the bucket's record count in the total
 * pseudo-series — every record of the metric, in the same commit as the series' own rows — is a
 * version: a cached union is used only while the total still counts what it counted when the union
 * was merged (read in the same statement as the tail's rows, so from the same snapshot).
 */
export class TailUnionCache {
  private readonly entries = new Map<string, { totalCount: number; cell: Cell }>();

  /** `maxEntries`: one entry is one bucket's merged tail (a 16 KB distinct sketch at most, plus the value sketch). */
  constructor(private readonly maxEntries = 1_024) {}

  get(key: string, totalCount: number): Cell | null {
    const e = this.entries.get(key);
    if (e === undefined) return null;
    this.entries.delete(key); // least recently used goes first: re-inserted at the end
    if (e.totalCount !== totalCount) return null; // records arrived since: stale, dropped
    this.entries.set(key, e);
    return e.cell;
  }

  set(key: string, totalCount: number, cell: Cell): void {
    this.entries.delete(key);
    this.entries.set(key, { totalCount, cell });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The process's cache (the aggregation endpoint's default). */
export const tailUnionCache = new TailUnionCache();

export interface TailUnionInput {
  metricId: string;
  revision: number;
  /** The series answered as themselves: with the bucket, they name its tail (every other series with rows). */
  kept: readonly string[];
  /** The tail's series, listed only when a bucket must be merged (no cached union is current). */
  tail(): readonly string[];
  /** Answer bucket boundaries, and the last one answered (read-plan.ts `answerEnd`). */
  boundaries: readonly number[];
  end: number;
  completeThrough: number | null;
  /** Whether merged buckets need the states (percentiles, distinct counts) or only figures (`last`, counts). */
  sketches: boolean;
  /** The total pseudo-series' cells per answer bucket, as read for this answer (their counts are the versions). */
  total: ReadonlyArray<Cell | null>;
  read(spans: readonly ReadSpan[], series: readonly string[]): Promise<StoredColumns>;
}

/** The tail merged, one cell (or null) per answer bucket; cached unions reused while current. */
export async function tailCells(input: TailUnionInput, cache: TailUnionCache): Promise<Array<Cell | null>> {
  const { boundaries, total } = input;
  const out = new Array<Cell | null>(boundaries.length - 1).fill(null);
  const digest = createHash('sha1')
    .update([...input.kept].sort().join('\n'))
    .digest('base64');
  const missing: Array<{ k: number; key: string; tiles: Tile[] }> = [];
  for (let k = 0; k + 1 < boundaries.length && boundaries[k + 1]! <= input.end; k++) {
    const t = total[k] ?? null;
    if (t === null || t.count === 0) continue; // no records in the bucket: no tail either
    const tiles = tileBucket(boundaries[k]!, boundaries[k + 1]!, input.completeThrough);
    const key = `${input.metricId}\u0000${input.revision}\u0000${input.sketches ? 1 : 0}\u0000${digest}\u0000${tiles.map((x) => `${x.tier}:${x.from}:${x.to}`).join(',')}`;
    const hit = cache.get(key, t.count);
    if (hit !== null) out[k] = hit;
    else missing.push({ k, key, tiles });
  }
  if (missing.length === 0) return out;
  // The tail and the total in one read (one snapshot): the total's count then versions the union.
  const spans = coalesce(missing.flatMap((m) => m.tiles.map((t) => ({ ...t, sketches: input.sketches }))));
  const tail = input.tail();
  const grid = new CellGrid(await input.read(spans, [...tail, TOTAL_SERIES]), boundaries);
  for (const m of missing) {
    const cell = mergeCells(tail.map((h) => grid.cellAt(h, m.k)));
    out[m.k] = cell;
    const t = grid.cellAt(TOTAL_SERIES, m.k);
    // Shared between answers from now on: nothing may merge into it (mergeCell copies a borrowed state).
    if (cell !== null && t !== null) cache.set(m.key, t.count, { ...cell, ownsState: false });
  }
  return out;
}
