import type { ChartValue } from '../metric-records.js';
import type { StoredColumns } from '../rollup-types.js';
import { seriesWithRecords } from '../stored-columns.js';
import { CellGrid } from './assemble.js';
import type { SealedBlock, SealedCells, SealedRef } from './sealed-cells.js';
import { rowJson, seriesRecords, type RecordRules, type RecordTable } from './series-records.js';

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
  /** Keys that replace each other in the cache (the same answer under another ranking), or absent. */
  family?: string;
  metricId: string;
  /** Buckets ending at or before this are sealed (never after the answer's `completeThrough`). */
  sealBefore: number;
  /** Every series that may answer, in the entry's order (`__other__` among them when a tail folds). */
  candidates: readonly string[];
  /** The answer's rules; the boundaries are the whole window's. */
  rules: RecordRules;
  /** The candidates' tables over the buckets of `boundaries` (a suffix of the window's): read and computed. */
  compute(boundaries: readonly number[]): Promise<SealedPart>;
}

/** What an answer computed over a suffix of its window (`SealedTablesInput.compute`). */
export interface SealedPart {
  /** One table per candidate, in candidate order, over the suffix's buckets. */
  tables: RecordTable[];
  /** Whether candidate `j` has records in the suffix's bucket `i`. */
  hasRecords(j: number, i: number): boolean;
  /** Series with records in the suffix (the rows' series, which may be more than the candidates). */
  withData: Set<string>;
  /** Some partials were left out of its reads (an observed answer during a backlog): nothing of it is kept. */
  incomplete?: boolean;
}

/** A SealedPart straight from stored rows: each candidate's table from its own rows. */
export function columnsPart(rows: StoredColumns, candidates: readonly string[], rules: RecordRules): SealedPart {
  const grid = new CellGrid(rows, rules.boundaries);
  return {
    tables: candidates.map((s) => seriesRecords(grid.reader(s), rules)),
    hasRecords: (j, i) => grid.hasRecords(candidates[j]!, i),
    withData: seriesWithRecords(rows),
  };
}

/**
 * Every candidate's records over the window and which candidates have data in it: the leading
 * sealed buckets found in the cache are taken from it, every later bucket read and computed, and
 * the newly sealed ones among those kept for the next answer. The same tables as computing every
 * bucket from stored rows (sealed-cells.ts says why they stay true).
 */
export async function sealedTables(
  input: SealedTablesInput,
): Promise<{ tables: RecordTable[]; withData: Set<string> }> {
  const { cache, key, metricId, sealBefore, candidates, rules } = input;
  const { boundaries } = rules;
  const n = boundaries.length - 1;
  const generation = cache.begin(metricId, sealBefore);
  // Writes from now on that touch a bucket this answer reads keep that bucket out of the cache.
  const since = cache.writeMark(metricId);
  const cached = cache.get(key, generation);
  const hits: SealedRef[] = [];
  for (let k = 0; k < n && boundaries[k + 1]! <= sealBefore; k++) {
    const ref = cached?.get(boundaries[k]!);
    if (!ref || ref.block.series !== candidates.length) break;
    hits.push(ref);
  }
  const prefix = hits.length;
  cache.servedBuckets += prefix;
  if (prefix === n && n > 0) {
    // Every bucket cached (a window wholly in the past): the last such answer's tables, when it asked the same buckets.
    const whole = cache.whole(
      key,
      generation,
      boundaries,
      () => {
        const leads = cache.lead(
          key,
          generation,
          boundaries[0]!,
          prefix,
          () => candidates.map((_, j) => leadJson(hits, j)),
          since,
        );
        const none: RecordTable = {
          boundaries: boundaries.slice(n),
          width: rules.values.length,
          rows: 0,
          buckets: new Int32Array(0),
          cells: new Float64Array(0),
        };
        return {
          tables: candidates.map((_, j) => joinTables(boundaries, hits, j, none, leads[j]!)),
          withData: cachedWithData(hits, candidates, new Set()),
        };
      },
      since,
    );
    return { tables: whole.tables, withData: new Set(whole.withData) };
  }
  const sub = prefix === 0 ? boundaries : boundaries.slice(prefix);
  const part = await input.compute(sub);
  const fresh = part.tables;
  const block = part.incomplete ? null : sealBlock(input, part, prefix);
  if (block) {
    cache.put(key, metricId, generation, block, input.family ?? null, since);
    // The fresh tables' sealed rows are written from the block's bytes (made once).
    fresh.forEach((t, j) => (t.lead = { rows: rowsIn(block, j, 0, block.starts.length), json: block.json[j]! }));
  }

  const withData = cachedWithData(hits, candidates, part.withData);
  if (prefix === 0) return { tables: fresh, withData };
  const leads = cache.lead(
    key,
    generation,
    boundaries[0]!,
    prefix,
    () => candidates.map((_, j) => leadJson(hits, j)),
    since,
  );
  const tables = fresh.map((t, j) => joinTables(boundaries, hits, j, t, leads[j]!));
  return { tables, withData };
}

/** `into` with the candidates that have records in the cached buckets `hits`. */
function cachedWithData(hits: readonly SealedRef[], candidates: readonly string[], into: Set<string>): Set<string> {
  const count = candidates.length;
  for (const { block: b, i } of hits)
    for (let j = 0; j < count; j++) if (b.hasData[i * count + j] === 1) into.add(candidates[j]!);
  return into;
}

/** Answered rows of candidate `j` in buckets [a, b) of a block. */
function rowsIn(block: SealedBlock, j: number, a: number, b: number): number {
  let rows = 0;
  for (let i = a; i < b; i++) rows += block.answered[i * block.series + j]!;
  return rows;
}

const COMMA = Buffer.from(',');

/** The JSON text of candidate `j`'s answered rows among `hits`, joined by commas: slices of each block's bytes. */
function leadJson(hits: readonly SealedRef[], j: number): Buffer {
  const parts: Buffer[] = [];
  for (let k = 0; k < hits.length; ) {
    const { block, i } = hits[k]!;
    // The run of hits in this block at consecutive indexes.
    let end = i + 1;
    while (k + (end - i) < hits.length && hits[k + (end - i)]!.block === block && hits[k + (end - i)]!.i === end) end++;
    const off = block.offsets[j]!;
    if (off[end]! > off[i]!) {
      if (parts.length > 0) parts.push(COMMA);
      parts.push(block.json[j]!.subarray(off[i]!, off[end]! - 1));
    }
    k += end - i;
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/**
 * The fresh part's sealed buckets as one block (rows as bytes, numbers, presence per candidate), or
 * null when none of its buckets is sealed. Sealed buckets come first in the fresh tables.
 */
function sealBlock(input: SealedTablesInput, part: SealedPart, prefix: number): SealedBlock | null {
  const fresh = part.tables;
  const { boundaries } = input.rules;
  const width = input.rules.values.length;
  const count = input.candidates.length;
  let end = prefix;
  while (end + 1 < boundaries.length && boundaries[end + 1]! <= input.sealBefore) end++;
  if (end === prefix) return null;
  const m = end - prefix;
  const block: SealedBlock = {
    starts: boundaries.slice(prefix, end),
    ends: boundaries.slice(prefix + 1, end + 1),
    series: count,
    width,
    hasData: new Uint8Array(m * count),
    answered: new Uint8Array(m * count),
    cells: new Float64Array(m * count * width).fill(NaN),
    json: [],
    offsets: [],
    bytes: 0,
    live: 0,
  };
  for (let j = 0; j < count; j++) {
    const t = fresh[j]!;
    for (let i = 0; i < m; i++) if (part.hasRecords(j, i)) block.hasData[i * count + j] = 1;
    const offsets = new Int32Array(m + 1);
    // One string grown row by row, encoded once (its rope is flattened by the encoding).
    let json = '';
    let i = 0;
    // The table's rows are in bucket order: its rows within the sealed buckets come first.
    for (let r = 0; r < t.rows && t.buckets[r]! < m; r++) {
      const b = t.buckets[r]!;
      // Row text is ASCII (ISO keys, numbers, null): string offsets are byte offsets.
      const at = json.length === 0 ? 0 : json.length + 1;
      for (; i <= b; i++) offsets[i] = at;
      json = json.length === 0 ? rowJson(t, r) : `${json},${rowJson(t, r)}`;
      block.answered[b * count + j] = 1;
      for (let v = 0; v < width; v++) block.cells[(b * count + j) * width + v] = t.cells[r * width + v]!;
    }
    for (; i <= m; i++) offsets[i] = json.length + 1;
    block.offsets.push(offsets);
    block.json.push(Buffer.from(json, 'latin1'));
  }
  return block;
}

/**
 * Candidate `j`'s table over the whole window: its cached rows of the first `hits.length` buckets
 * (their text as `lead`), then `fresh` (over the rest).
 */
function joinTables(
  boundaries: readonly number[],
  hits: readonly SealedRef[],
  j: number,
  fresh: RecordTable,
  lead: Buffer,
): RecordTable {
  const width = fresh.width;
  const prefix = hits.length;
  let cachedRows = 0;
  for (const { block, i } of hits) cachedRows += block.answered[i * block.series + j]!;
  const rows = cachedRows + fresh.rows;
  const t: RecordTable = {
    boundaries,
    width,
    rows,
    buckets: new Int32Array(rows),
    cells: new Float64Array(rows * width),
    lead: joinLeads(lead, cachedRows, fresh.lead),
  };
  let r = 0;
  for (let k = 0; k < prefix; k++) {
    const { block, i } = hits[k]!;
    const at = i * block.series + j;
    if (block.answered[at] === 0) continue;
    t.buckets[r] = k;
    for (let v = 0; v < width; v++) t.cells[r * width + v] = block.cells[at * width + v]!;
    r++;
  }
  for (let f = 0; f < fresh.rows; f++, r++) {
    t.buckets[r] = fresh.buckets[f]! + prefix;
    for (let v = 0; v < width; v++) t.cells[r * width + v] = fresh.cells[f * width + v]!;
  }
  return t;
}

/** The cached rows' text followed by the fresh table's own leading rows' (its newly sealed ones). */
function joinLeads(lead: Buffer, rows: number, next: RecordTable['lead']): RecordTable['lead'] {
  if (!next || next.rows === 0) return { rows, json: lead };
  if (rows === 0) return next;
  return { rows: rows + next.rows, json: Buffer.concat([lead, COMMA, next.json]) };
}
