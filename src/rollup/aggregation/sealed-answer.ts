import type { ChartValue } from '../metric-records.js';
import type { StoredColumns } from '../rollup-types.js';
import { seriesWithRecords } from '../stored-columns.js';
import { CellGrid } from './assemble.js';
import type { SealedBucket, SealedCells } from './sealed-cells.js';
import { rowJson, seriesRecords, type RecordRules, type RecordTable } from './series-records.js';

const EMPTY = Buffer.alloc(0);

/**
 * Values whose row in a bucket depends only on that bucket: `last` carries forward from earlier
 * buckets and the running totals start at the window's start, so answers asking for them are not
 * taken from sealed buckets.
 */
export function sealable(values: readonly ChartValue[]): boolean {
  return !values.some((v) => v === 'last' || v === 'cumulative_count' || v === 'cumulative_sum');
}

export interface SealedTablesInput {
  cache: SealedCells;
  /** What the cached rows depend on besides the bucket (sealed-cells.ts: metric, revision, interval, zone, values, handling, series). */
  key: string;
  metricId: string;
  /** Buckets ending at or before this are sealed (never after the answer's `completeThrough`). */
  sealBefore: number;
  /** Every series that may answer, in the entry's order. */
  candidates: readonly string[];
  /** The answer's rules; the boundaries are the whole window's. */
  rules: RecordRules;
  /** The stored rows of `candidates` over the buckets of `boundaries` (a suffix of the window's). */
  read(boundaries: readonly number[]): Promise<StoredColumns>;
}

/**
 * Every candidate's records over the window and which candidates have data in it: the leading
 * sealed buckets found in the cache are taken from it, every later bucket read and computed, and
 * the newly sealed ones among those kept for the next answer. The same tables as computing every
 * bucket from stored rows (sealed-cells.ts says why they stay true).
 */
export async function sealedTables(input: SealedTablesInput): Promise<{ tables: RecordTable[]; withData: Set<string> }> {
  const { cache, key, metricId, sealBefore, candidates, rules } = input;
  const { boundaries } = rules;
  const n = boundaries.length - 1;
  const width = rules.values.length;
  const generation = cache.begin(metricId, sealBefore);
  const cached = cache.get(key, generation);
  const hits: SealedBucket[] = [];
  for (let k = 0; k < n && boundaries[k + 1]! <= sealBefore; k++) {
    const b = cached?.get(boundaries[k]!);
    if (!b || b.texts.length !== candidates.length) break;
    hits.push(b);
  }
  const prefix = hits.length;
  const sub = boundaries.slice(prefix);
  const rows = await input.read(sub);
  const grid = new CellGrid(rows, sub);
  const fresh = candidates.map((s) => seriesRecords(grid.reader(s), { ...rules, boundaries: sub }));
  keepSealed(input, generation, grid, fresh, prefix);

  const withData = seriesWithRecords(rows);
  for (const b of hits) b.hasData.forEach((has, j) => has === 1 && withData.add(candidates[j]!));
  const leads = prefix === 0 ? candidates.map(() => EMPTY) : cache.lead(key, generation, boundaries[0]!, prefix, () => candidates.map((_, j) => Buffer.from(hits.flatMap((b) => (b.texts[j] === null ? [] : [b.texts[j]!])).join(','), 'utf8')));
  const tables = fresh.map((t, j) => joinTables(boundaries, width, hits, j, t, prefix, leads[j]!));
  return { tables, withData };
}

/** The fresh part's sealed buckets (rows, texts, presence per candidate) into the cache; the texts go to the tables too. */
function keepSealed(input: SealedTablesInput, generation: number, grid: CellGrid, fresh: RecordTable[], prefix: number): void {
  const { boundaries } = input.rules;
  const width = input.rules.values.length;
  const count = input.candidates.length;
  const readers = input.candidates.map((s) => grid.reader(s));
  const next = new Int32Array(count);
  const keep: Array<{ start: number; bucket: SealedBucket }> = [];
  for (let k = prefix; k + 1 < boundaries.length && boundaries[k + 1]! <= input.sealBefore; k++) {
    const bucket: SealedBucket = { hasData: new Uint8Array(count), texts: new Array<string | null>(count).fill(null), cells: new Float64Array(count * width).fill(NaN) };
    for (let j = 0; j < count; j++) {
      const cell = readers[j]!(k - prefix);
      bucket.hasData[j] = cell !== null && cell.count > 0 ? 1 : 0;
      const t = fresh[j]!;
      const r = next[j]!;
      if (r >= t.rows || t.buckets[r] !== k - prefix) continue;
      const text = rowJson(t, r);
      (t.texts ??= [])[r] = text;
      bucket.texts[j] = text;
      for (let i = 0; i < width; i++) bucket.cells[j * width + i] = t.cells[r * width + i]!;
      next[j] = r + 1;
    }
    keep.push({ start: boundaries[k]!, bucket });
  }
  input.cache.put(input.key, input.metricId, generation, keep);
}

/**
 * Candidate `j`'s table over the whole window: its cached rows of the first `prefix` buckets (their
 * text as `lead`), then `fresh` (over the rest).
 */
function joinTables(boundaries: readonly number[], width: number, hits: readonly SealedBucket[], j: number, fresh: RecordTable, prefix: number, lead: Buffer): RecordTable {
  let cachedRows = 0;
  for (const b of hits) if (b.texts[j] !== null) cachedRows++;
  const rows = cachedRows + fresh.rows;
  const t: RecordTable = { boundaries, width, rows, buckets: new Int32Array(rows), cells: new Float64Array(rows * width), texts: new Array<string | undefined>(rows), lead: { rows: cachedRows, json: lead } };
  let r = 0;
  for (let k = 0; k < hits.length; k++) {
    const b = hits[k]!;
    if (b.texts[j] === null) continue;
    t.buckets[r] = k;
    for (let i = 0; i < width; i++) t.cells[r * width + i] = b.cells[j * width + i]!;
    r++;
  }
  for (let f = 0; f < fresh.rows; f++, r++) {
    t.buckets[r] = fresh.buckets[f]! + prefix;
    for (let i = 0; i < width; i++) t.cells[r * width + i] = fresh.cells[f * width + i]!;
    t.texts![r] = fresh.texts?.[f];
  }
  return t;
}
