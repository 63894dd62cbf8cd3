import { BIGINT, INTEGER, VARCHAR, type DuckDBAppender, type DuckDBConnection } from '@duckdb/node-api';
import {
  decodeState,
  emptyState,
  encodeState,
  figuresOf,
  mergeState,
  type BucketState,
  type StateFigures,
} from './bucket-state.js';
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

/**
 * One compaction pass (docs/metrics.md, "Rollups"), in one DuckDB transaction: the oldest partial
 * rows (at most `limit`) are merged into their canonical minute rows, and the same merged deltas
 * into the hour, day and month rows holding those minutes (merging is exact, so a tier row equals the
 * merge of its minutes whichever way it is built); then those partials are deleted. Rows of
 * revisions `current` does not name (rebuilt or destroyed metrics) are only deleted. Answers the rows
 * folded per metric revision, and whether partials remain.
 */
export function compactPartials(
  store: RollupStore,
  current: (metricId: string) => number | null,
  limit = COMPACT_BATCH_ROWS,
): Promise<{ folded: Folded; more: boolean }> {
  // One look a metric per pass: the catalogue lookup decodes the metric's record each time.
  const revisions = new Map<string, number | null>();
  const currentOf = (id: string): number | null => {
    let r = revisions.get(id);
    if (r === undefined) revisions.set(id, (r = current(id)));
    return r;
  };
  return store.transaction('compact partials', async (conn) => {
    const reader = await conn.runAndReadAll(
      'SELECT metric_id, revision, series, minute, state, rowid FROM rollup_partials ORDER BY rowid LIMIT $1',
      [limit],
      [INTEGER],
    );
    const rows = reader.getRows();
    const folded: Folded = new Map();
    // metric revision → series NUL minute → merged state
    const groups = new Map<string, { metricId: string; revision: number; minutes: Map<string, Delta> }>();
    let lastRowid = -1n;
    let n = 0;
    for (const [metricId, revision, series, minute, state, rowid] of rows) {
      if (++n % YIELD_ROWS === 0) await breathe();
      lastRowid = BigInt(rowid as bigint);
      const key = `${String(metricId)}\u0000${Number(revision)}`;
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { metricId: String(metricId), revision: Number(revision), minutes: new Map() }));
      const f = folded.get(key) ?? { metricId: g.metricId, revision: g.revision, rows: 0 };
      f.rows++;
      folded.set(key, f);
      if (currentOf(g.metricId) !== g.revision) continue;
      const bytes = (state as { bytes: Uint8Array }).bytes;
      addTo(g.minutes, `${String(series)}@${Number(minute)}`, String(series), Number(minute), {
        state: decodeState(bytes),
        bytes,
      });
    }
    for (const g of groups.values()) {
      if (g.minutes.size === 0) continue;
      // Every tier's deltas before any upsert (an upsert merges the stored row into its delta): an
      // hour is the merge of its minutes, a day of its hours, a month of its days.
      const tiers = new Map<Tier, Map<string, Delta>>([['minute', g.minutes]]);
      for (let i = 1; i < TIERS.length; i++) {
        const finer = tiers.get(TIERS[i - 1]!)!;
        const tier = TIERS[i]!;
        const deltas = new Map<string, Delta>();
        for (const d of finer.values()) {
          if (++n % YIELD_ROWS === 0) await breathe();
          const start = bucketStart(tier, d.start);
          addTo(deltas, `${d.series}@${start}`, d.series, start, d);
        }
        tiers.set(tier, deltas);
      }
      for (const [tier, deltas] of tiers) await upsertTier(conn, tier, g.metricId, g.revision, deltas);
    }
    // Exactly the rows read: the oldest ones, up to the last rowid taken.
    if (rows.length > 0) await conn.run('DELETE FROM rollup_partials WHERE rowid <= $1', [lastRowid], [BIGINT]);
    return { folded, more: rows.length === limit };
  });
}

/**
 * A tier row's delta. A bucket with one part shares that part's state (never mutated: a second
 * part gets a fresh state) and its blob bytes, so most minutes of a backfill — one partial each — and
 * sparse series' coarser rows are stored without copying or re-encoding a sketch.
 */
interface Delta {
  series: string;
  start: number;
  state: BucketState;
  /** The encoded `state` when it is one part's unchanged; null once merged. */
  bytes: Uint8Array | null;
  /** Whether `state` is a part's own object (copied before a merge into it). */
  shared: boolean;
}

function addTo(
  deltas: Map<string, Delta>,
  key: string,
  series: string,
  start: number,
  part: { state: BucketState; bytes: Uint8Array | null },
): void {
  const d = deltas.get(key);
  if (!d) {
    deltas.set(key, { series, start, state: part.state, bytes: part.bytes, shared: true });
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

/**
 * Merge `deltas` into the tier's rows (read the existing ones, delete them, insert the merged). Keys
 * and rows go to DuckDB through appenders, inside the pass's transaction (a rollback drops them):
 * binding them as list parameters cost a third of a pass in value conversions.
 */
async function upsertTier(
  conn: DuckDBConnection,
  tier: Tier,
  metricId: string,
  revision: number,
  deltas: Map<string, Delta>,
): Promise<void> {
  const table = tierTable(tier);
  let lo = Infinity;
  let hi = -Infinity;
  await conn.run(`CREATE TEMP TABLE IF NOT EXISTS ${KEYS} (series VARCHAR, start BIGINT); DELETE FROM ${KEYS}`);
  const keys = await conn.createAppender(KEYS);
  for (const d of deltas.values()) {
    lo = Math.min(lo, d.start);
    hi = Math.max(hi, d.start);
    keys.appendVarchar(d.series);
    keys.appendBigInt(BigInt(d.start));
    keys.endRow();
  }
  keys.closeSync();
  // A semi-join on the (series, start) keys (a hash join; testing a key list per row cost ~20× more),
  // the start range letting DuckDB skip row groups by their min/max first. Only this lane writes the
  // tiers, so the rows read are the rows the delete removes.
  const where = `t.metric_id = $1 AND t.revision = $2 AND t.start BETWEEN $3 AND $4`;
  const params = [metricId, revision, BigInt(lo), BigInt(hi)];
  const types = [VARCHAR, INTEGER, BIGINT, BIGINT];
  const existing = (
    await conn.runAndReadAll(
      `SELECT t.series, t.start, t.state FROM ${table} t SEMI JOIN ${KEYS} k USING (series, start) WHERE ${where}`,
      params,
      types,
    )
  ).getRows();
  for (const [series, start, state] of existing) {
    const d = deltas.get(`${String(series)}@${Number(start)}`)!;
    const merged = decodeState((state as { bytes: Uint8Array }).bytes);
    mergeState(merged, d.state);
    d.state = merged;
    d.bytes = null;
  }
  if (existing.length > 0)
    await conn.run(
      `DELETE FROM ${table} t USING ${KEYS} k WHERE t.series = k.series AND t.start = k.start AND ${where}`,
      params,
      types,
    );
  await breathe();
  const rows = await conn.createAppender(table);
  let n = 0;
  for (const d of deltas.values()) {
    const f = figuresCached(d.state);
    rows.appendVarchar(metricId);
    rows.appendInteger(revision);
    rows.appendVarchar(d.series);
    rows.appendBigInt(BigInt(d.start));
    rows.appendBigInt(BigInt(f.count));
    rows.appendBigInt(BigInt(f.value_count));
    for (const v of [f.sum, f.min, f.max, f.last]) appendDouble(rows, v);
    if (f.last_at === null) rows.appendNull();
    else rows.appendBigInt(BigInt(f.last_at));
    for (const v of [f.p50, f.p95, f.p99, f.distinct]) appendDouble(rows, v);
    rows.appendBlob(d.bytes ?? encodeState(d.state));
    rows.endRow();
    if (++n % YIELD_ROWS === 0) await breathe();
  }
  rows.closeSync();
}

/** The pass's tier keys: a temporary table of the write connection (columns series, start). */
const KEYS = 'compact_keys';

function appendDouble(a: DuckDBAppender, v: number | null): void {
  if (v === null) a.appendNull();
  else a.appendDouble(v);
}

/**
 * Rows of in-process work between yields to the event loop: a pass decodes, merges and encodes
 * thousands of sketch states, and holding the main thread for it delayed every 202, commit and
 * merge behind it by up to ~1 s under load.
 */
const YIELD_ROWS = 250;
const breathe = () => new Promise<void>((r) => setImmediate(r));
