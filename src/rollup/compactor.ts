import {
  BIGINT,
  BLOB,
  DOUBLE,
  INTEGER,
  VARCHAR,
  type DuckDBBlobVector,
  type DuckDBConnection,
  type DuckDBType,
} from '@duckdb/node-api';
import {
  decodeState,
  emptyState,
  encodeState,
  figuresOf,
  mergeState,
  type BucketState,
  type StateFigures,
} from './bucket-state.js';
import { appendColumns, readChunks } from './duck-chunks.js';
import { bucketStart, TIERS, type Tier } from './rollup-types.js';
import { tierTable, type RollupStore } from './rollup-store.js';

/** Partial rows folded per metric revision by one pass. */
export type Folded = Map<string, { metricId: string; revision: number; rows: number }>;

/**
 * Partial rows one pass folds at most: a backlog (a large backfill, an import) is folded in bounded
 * steps. Each pass of a time-spread backlog rewrites nearly every hour, day and month row of the
 * metric whatever its size, so fewer, larger passes cost less: 50,000 rather than 20,000 took 22 %
 * less CPU a partial row (docs/metrics.md, "A month's import"); small states keep it ~20 MB.
 */
export const COMPACT_BATCH_ROWS = 50_000;

/** The pass's partial rows (a temporary table of the write connection). */
const PASS = 'compact_pass';
/** The pass's distinct series, numbered: rows carry the number, and each name is read once. */
const SERIES = 'compact_series';

/**
 * One compaction pass (docs/metrics.md, "Rollups"), in one DuckDB transaction: the oldest partial
 * rows (at most `limit`) are merged into their canonical minute rows, and the same merged deltas
 * into the hour, day and month rows holding those minutes (merging is exact, so a tier row equals the
 * merge of its minutes whichever way it is built); then those partials are deleted. Rows of
 * revisions `current` does not name (rebuilt or destroyed metrics) are only deleted. Answers the rows
 * folded per metric revision, and whether partials remain.
 *
 * What costs per row is kept out of JavaScript where DuckDB can do it: the pass is a temporary
 * table, each tier's keys are derived from it in SQL (for the lookup and the delete of the rows a
 * pass rewrites), series names are read once per pass (rows carry a number), and rows are read and
 * written a column vector at a time (duck-chunks.ts) rather than a value per call. What remains per
 * row is the sketches' decode, merge and encode.
 */
export function compactPartials(
  store: RollupStore,
  current: (metricId: string) => number | null,
  limit = COMPACT_BATCH_ROWS,
): Promise<{ folded: Folded; more: boolean }> {
  const rows = Math.max(1, Math.floor(limit));
  return store.transaction('compact partials', async (conn) => {
    await conn.run(
      `CREATE OR REPLACE TEMP TABLE ${PASS} AS
         SELECT metric_id, revision, series, minute, state, rowid AS rid FROM rollup_partials ORDER BY rowid LIMIT ${rows};
       CREATE OR REPLACE TEMP TABLE ${SERIES} AS
         SELECT series, (row_number() OVER (ORDER BY series) - 1)::INTEGER AS s FROM (SELECT DISTINCT series FROM ${PASS})`,
    );
    const groups = (
      await conn.runAndReadAll(
        `SELECT metric_id, revision, count(*)::DOUBLE FROM ${PASS} GROUP BY metric_id, revision ORDER BY metric_id, revision`,
      )
    ).getRows();
    const folded: Folded = new Map();
    let total = 0;
    for (const [metricId, revision, n] of groups) {
      const g = { metricId: String(metricId), revision: Number(revision), rows: Number(n) };
      folded.set(`${g.metricId}\u0000${g.revision}`, g);
      total += g.rows;
    }
    if (total === 0) return { folded, more: false };
    const names = (await conn.runAndReadAll(`SELECT series FROM ${SERIES} ORDER BY s`))
      .getRows()
      .map((r) => String(r[0]));
    for (const g of folded.values()) {
      if (current(g.metricId) !== g.revision) continue;
      await foldGroup(conn, g.metricId, g.revision, names);
    }
    // Exactly the rows read: the oldest ones, up to the last rowid taken.
    await conn.run(`DELETE FROM rollup_partials WHERE rowid <= (SELECT max(rid) FROM ${PASS})`);
    return { folded, more: total === rows };
  });
}

/** One metric revision's partials of the pass, merged into every tier. */
async function foldGroup(conn: DuckDBConnection, metricId: string, revision: number, names: string[]): Promise<void> {
  const minutes = new Map<number, Delta>();
  let n = 0;
  // Oldest first, as the rows were committed (a tie of `last` keeps the value merged last).
  await readChunks(
    conn,
    `SELECT c.s, p.minute::DOUBLE, p.state FROM ${PASS} p JOIN ${SERIES} c USING (series)
       WHERE p.metric_id = $1 AND p.revision = $2 ORDER BY p.rid`,
    [metricId, revision],
    [VARCHAR, INTEGER],
    async (chunk) => {
      const s = chunk.getColumnVector(0);
      const minute = chunk.getColumnVector(1);
      const state = chunk.getColumnVector(2) as DuckDBBlobVector;
      for (let i = 0; i < chunk.rowCount; i++) {
        const bytes = ownBytes(state.getItemBytes(i)!);
        addTo(minutes, s.getItem(i) as number, minute.getItem(i) as number, { state: decodeState(bytes), bytes });
        if (++n % YIELD_ROWS === 0) await breathe();
      }
    },
  );
  if (minutes.size === 0) return;
  // Every tier's deltas before any upsert (an upsert merges the stored row into its delta): an
  // hour is the merge of its minutes, a day of its hours, a month of its days.
  const tiers = new Map<Tier, Map<number, Delta>>([['minute', minutes]]);
  for (let i = 1; i < TIERS.length; i++) {
    const finer = tiers.get(TIERS[i - 1]!)!;
    const tier = TIERS[i]!;
    const deltas = new Map<number, Delta>();
    for (const d of finer.values()) {
      if (++n % YIELD_ROWS === 0) await breathe();
      addTo(deltas, d.s, bucketStart(tier, d.start), d);
    }
    tiers.set(tier, deltas);
  }
  for (const [tier, deltas] of tiers) await upsertTier(conn, tier, metricId, revision, deltas, names);
}

/**
 * A tier row's delta. A bucket with one part shares that part's state (never mutated: a second
 * part gets a fresh state) and its blob bytes, so most minutes of a backfill — one partial each — and
 * sparse series' coarser rows are stored without copying or re-encoding a sketch.
 */
interface Delta {
  /** The series' number in the pass (SERIES). */
  s: number;
  start: number;
  state: BucketState;
  /** The encoded `state` when it is one part's unchanged; null once merged. */
  bytes: Uint8Array | null;
  /** Whether `state` is a part's own object (copied before a merge into it). */
  shared: boolean;
}

/**
 * A (series number, bucket start) key as one safe integer: minutes from the epoch, offset by half the
 * span (years 1715 to 2225), below 2^28; series numbers below 2^25 (a pass has at most `limit` rows).
 */
const MINUTE_SPAN = 2 ** 28;
const keyOf = (s: number, start: number) => s * MINUTE_SPAN + Math.floor(start / 60_000) + MINUTE_SPAN / 2;

function addTo(
  deltas: Map<number, Delta>,
  s: number,
  start: number,
  part: { state: BucketState; bytes: Uint8Array | null },
): void {
  const key = keyOf(s, start);
  const d = deltas.get(key);
  if (!d) {
    deltas.set(key, { s, start, state: part.state, bytes: part.bytes, shared: true });
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

/** A state shared by the rows of several tiers has its figures (quantiles, distinct estimate) computed once. */
const figures = new WeakMap<BucketState, StateFigures>();
function figuresCached(s: BucketState): StateFigures {
  let f = figures.get(s);
  if (!f) figures.set(s, (f = figuresOf(s)));
  return f;
}

/** The start of a tier's bucket holding `minute`, in SQL (as bucketStart does; floor division for times before 1970). */
function bucketSql(tier: Tier): string {
  if (tier === 'minute') return 'minute';
  if (tier === 'month') return `epoch_ms(date_trunc('month', epoch_ms(minute)))`;
  const w = tier === 'hour' ? 3_600_000 : 86_400_000;
  return `(minute - (((minute % ${w}) + ${w}) % ${w}))`;
}

const TIER_TYPES: DuckDBType[] = [
  VARCHAR,
  INTEGER,
  VARCHAR,
  BIGINT,
  BIGINT,
  BIGINT,
  DOUBLE,
  DOUBLE,
  DOUBLE,
  DOUBLE,
  BIGINT,
  DOUBLE,
  DOUBLE,
  DOUBLE,
  DOUBLE,
  BLOB,
];

/**
 * Merge `deltas` into the tier's rows: read the existing ones, delete them, insert the merged. The
 * keys are the pass's own (series, bucket of its minute), derived in SQL — a hash semi-join, the start
 * range letting DuckDB skip row groups by their min/max first. Only this lane writes the tiers, so
 * the rows read are the rows the delete removes.
 */
async function upsertTier(
  conn: DuckDBConnection,
  tier: Tier,
  metricId: string,
  revision: number,
  deltas: Map<number, Delta>,
  names: string[],
): Promise<void> {
  const table = tierTable(tier);
  let lo = Infinity;
  let hi = -Infinity;
  for (const d of deltas.values()) {
    if (d.start < lo) lo = d.start;
    if (d.start > hi) hi = d.start;
  }
  const keys = `(SELECT DISTINCT series, ${bucketSql(tier)} AS start FROM ${PASS} WHERE metric_id = $1 AND revision = $2)`;
  const where = `t.metric_id = $1 AND t.revision = $2 AND t.start BETWEEN $3 AND $4`;
  const params = [metricId, revision, BigInt(lo), BigInt(hi)];
  const types = [VARCHAR, INTEGER, BIGINT, BIGINT];
  let existing = 0;
  let n = 0;
  await readChunks(
    conn,
    `SELECT c.s, t.start::DOUBLE, t.state FROM ${table} t SEMI JOIN ${keys} k USING (series, start)
       JOIN ${SERIES} c USING (series) WHERE ${where}`,
    params,
    types,
    async (chunk) => {
      const s = chunk.getColumnVector(0);
      const start = chunk.getColumnVector(1);
      const state = chunk.getColumnVector(2) as DuckDBBlobVector;
      for (let i = 0; i < chunk.rowCount; i++) {
        const d = deltas.get(keyOf(s.getItem(i) as number, start.getItem(i) as number))!;
        const merged = decodeState(state.getItemBytes(i)!);
        mergeState(merged, d.state);
        d.state = merged;
        d.bytes = null;
        existing++;
        if (++n % YIELD_ROWS === 0) await breathe();
      }
    },
  );
  if (existing > 0)
    await conn.run(
      `DELETE FROM ${table} t USING ${keys} k WHERE t.series = k.series AND t.start = k.start AND ${where}`,
      params,
      types,
    );
  await breathe();
  const revisionValue = revision;
  await appendColumns(conn, table, TIER_TYPES, deltas.values(), deltas.size, (d, row) => {
    const f = figuresCached(d.state);
    row[0] = metricId;
    row[1] = revisionValue;
    row[2] = names[d.s]!;
    row[3] = BigInt(d.start);
    row[4] = BigInt(f.count);
    row[5] = BigInt(f.value_count);
    row[6] = f.sum;
    row[7] = f.min;
    row[8] = f.max;
    row[9] = f.last;
    row[10] = f.last_at === null ? null : BigInt(f.last_at);
    row[11] = f.p50;
    row[12] = f.p95;
    row[13] = f.p99;
    row[14] = f.distinct;
    row[15] = { bytes: d.bytes ?? encodeState(d.state) };
  });
}

/**
 * A blob read from a chunk may be a view of the chunk's own memory (payloads of 12 bytes or less):
 * copied, since a delta keeps its part's bytes past the chunk.
 */
function ownBytes(b: Uint8Array): Uint8Array {
  return b.byteLength <= 12 ? b.slice() : b;
}

/**
 * Rows of in-process work between yields to the event loop: a pass decodes, merges and encodes
 * thousands of sketch states, and holding the main thread for it delayed every 202, commit and
 * merge behind it by up to ~1 s under load.
 */
const YIELD_ROWS = 250;
const breathe = () => new Promise<void>((r) => setImmediate(r));
