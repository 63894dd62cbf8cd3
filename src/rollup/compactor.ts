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
import { FIGURES, StateRowsBuilder, type MergeOutput, type StateRows } from './compact-merge.js';
import { mergeHere, type MergeStates } from './compact-thread.js';
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
/** The pass's metric revisions that are merged (current ones), numbered. */
const GROUPS = 'compact_groups';

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
 * written a column vector at a time (duck-chunks.ts) rather than a value per call. The sketches'
 * decode, merge and encode — what remains per row — run in `merge` (compact-merge.ts), on the
 * compaction's own thread in the server (compact-thread.ts).
 */
export function compactPartials(
  store: RollupStore,
  current: (metricId: string) => number | null,
  limit = COMPACT_BATCH_ROWS,
  merge: MergeStates = mergeHere,
): Promise<{ folded: Folded; more: boolean }> {
  const rows = Math.max(1, Math.floor(limit));
  return store.transaction('compact partials', async (conn) => {
    await conn.run(
      `CREATE OR REPLACE TEMP TABLE ${PASS} AS
         SELECT metric_id, revision, series, minute, state, rowid AS rid FROM rollup_partials ORDER BY rowid LIMIT ${rows};
       CREATE OR REPLACE TEMP TABLE ${SERIES} AS
         SELECT series, (row_number() OVER (ORDER BY series) - 1)::INTEGER AS s FROM (SELECT DISTINCT series FROM ${PASS});
       CREATE OR REPLACE TEMP TABLE ${GROUPS} (metric_id VARCHAR, revision INTEGER, g INTEGER)`,
    );
    const counted = (
      await conn.runAndReadAll(
        `SELECT metric_id, revision, count(*)::DOUBLE FROM ${PASS} GROUP BY metric_id, revision ORDER BY metric_id, revision`,
      )
    ).getRows();
    const folded: Folded = new Map();
    let total = 0;
    /** The metric revisions whose rows are merged (the current ones), numbered. */
    const groups: Group[] = [];
    for (const [metricId, revision, n] of counted) {
      const f = { metricId: String(metricId), revision: Number(revision), rows: Number(n) };
      folded.set(`${f.metricId}\u0000${f.revision}`, f);
      total += f.rows;
      if (current(f.metricId) === f.revision) groups.push({ metricId: f.metricId, revision: f.revision });
    }
    if (groups.length > 0) {
      await appendColumns(conn, GROUPS, [VARCHAR, INTEGER, INTEGER], groups.entries(), groups.length, ([g, m], row) => {
        row[0] = m.metricId;
        row[1] = m.revision;
        row[2] = g;
      });
      const names = (await conn.runAndReadAll(`SELECT series FROM ${SERIES} ORDER BY s`))
        .getRows()
        .map((r) => String(r[0]));
      await fold(conn, groups, names, merge);
    }
    // Exactly the rows read: the oldest ones, up to the last rowid taken.
    if (total > 0) await conn.run(`DELETE FROM rollup_partials WHERE rowid <= (SELECT max(rid) FROM ${PASS})`);
    return { folded, more: total === rows };
  });
}

interface Group {
  metricId: string;
  revision: number;
}

/**
 * The pass's partials of every group, merged into every tier: one statement per tier for all the
 * metrics of the pass (a hundred metrics on one view put a hundred groups in a pass). The rows are
 * read here, merged by `merge`, and written here.
 */
async function fold(conn: DuckDBConnection, groups: Group[], names: string[], merge: MergeStates): Promise<void> {
  const partials = new StateRowsBuilder();
  let lo = Infinity;
  let hi = -Infinity;
  // Oldest first, as the rows were committed (a tie of `last` keeps the value merged last).
  await readChunks(
    conn,
    `SELECT g.g, c.s, p.minute::DOUBLE, p.state FROM ${PASS} p
       JOIN ${GROUPS} g USING (metric_id, revision) JOIN ${SERIES} c USING (series) ORDER BY p.rid`,
    [],
    [],
    async (chunk) => {
      const g = chunk.getColumnVector(0);
      const s = chunk.getColumnVector(1);
      const minute = chunk.getColumnVector(2);
      const state = chunk.getColumnVector(3) as DuckDBBlobVector;
      for (let i = 0; i < chunk.rowCount; i++) {
        const m = minute.getItem(i) as number;
        if (m < lo) lo = m;
        if (m > hi) hi = m;
        partials.add(g.getItem(i) as number, s.getItem(i) as number, m, ownBytes(state.getItemBytes(i)!));
      }
      await breathe();
    },
  );
  if (partials.length === 0) return;
  const existing: StateRows[] = [];
  for (const tier of TIERS) existing.push(await readStored(conn, tier, bucketStart(tier, lo), bucketStart(tier, hi)));
  const stored = existing.map((r) => r.g.length);
  const out = await merge({ partials: partials.build(), existing });
  for (const [t, tier] of TIERS.entries()) {
    const range = [BigInt(bucketStart(tier, lo)), BigInt(bucketStart(tier, hi))];
    // Only this lane writes the tiers, so the rows read are the rows the delete removes.
    if (stored[t]! > 0)
      await conn.run(
        `DELETE FROM ${tierTable(tier)} t USING ${keysOf(tier)} k
           WHERE t.metric_id = k.metric_id AND t.revision = k.revision AND t.series = k.series AND t.start = k.start
             AND t.start BETWEEN $1 AND $2`,
        range,
        [BIGINT, BIGINT],
      );
    await writeRows(conn, tier, out[t]!, groups, names);
  }
}

/** The tier's keys the pass writes: (metric revision, series, bucket of its minute) of the merged groups. */
function keysOf(tier: Tier): string {
  return `(SELECT DISTINCT metric_id, revision, series, ${bucketSql(tier)} AS start FROM ${PASS} JOIN ${GROUPS} USING (metric_id, revision))`;
}

/**
 * The stored rows of the tier the pass's deltas replace: a hash semi-join on the pass's keys, the
 * start range letting DuckDB skip row groups by their min/max first.
 */
async function readStored(conn: DuckDBConnection, tier: Tier, lo: number, hi: number): Promise<StateRows> {
  const rows = new StateRowsBuilder();
  await readChunks(
    conn,
    `SELECT g.g, c.s, t.start::DOUBLE, t.state FROM ${tierTable(tier)} t
       SEMI JOIN ${keysOf(tier)} k USING (metric_id, revision, series, start)
       JOIN ${GROUPS} g USING (metric_id, revision) JOIN ${SERIES} c USING (series)
       WHERE t.start BETWEEN $1 AND $2`,
    [BigInt(lo), BigInt(hi)],
    [BIGINT, BIGINT],
    async (chunk) => {
      const g = chunk.getColumnVector(0);
      const s = chunk.getColumnVector(1);
      const start = chunk.getColumnVector(2);
      const state = chunk.getColumnVector(3) as DuckDBBlobVector;
      for (let i = 0; i < chunk.rowCount; i++)
        rows.add(
          g.getItem(i) as number,
          s.getItem(i) as number,
          start.getItem(i) as number,
          ownBytes(state.getItemBytes(i)!),
        );
      await breathe();
    },
  );
  return rows.build();
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

/** The merged rows of one tier, appended a data chunk at a time; a NaN figure is NULL. */
async function writeRows(
  conn: DuckDBConnection,
  tier: Tier,
  rows: MergeOutput[number],
  groups: Group[],
  names: string[],
): Promise<void> {
  const n = rows.g.length;
  const F = FIGURES.length;
  const f = rows.figures;
  const num = (v: number) => (Number.isNaN(v) ? null : v);
  const big = (v: number) => (Number.isNaN(v) ? null : BigInt(v));
  await appendColumns(conn, tierTable(tier), TIER_TYPES, indices(n), n, (i, row) => {
    const group = groups[rows.g[i]!]!;
    const o = i * F;
    row[0] = group.metricId;
    row[1] = group.revision;
    row[2] = names[rows.s[i]!]!;
    row[3] = BigInt(rows.start[i]!);
    row[4] = BigInt(f[o]!);
    row[5] = BigInt(f[o + 1]!);
    row[6] = num(f[o + 2]!);
    row[7] = num(f[o + 3]!);
    row[8] = num(f[o + 4]!);
    row[9] = num(f[o + 5]!);
    row[10] = big(f[o + 6]!);
    row[11] = num(f[o + 7]!);
    row[12] = num(f[o + 8]!);
    row[13] = num(f[o + 9]!);
    row[14] = num(f[o + 10]!);
    row[15] = { bytes: rows.states.subarray(i === 0 ? 0 : rows.ends[i - 1]!, rows.ends[i]!) };
  });
}

function* indices(n: number): Generator<number> {
  for (let i = 0; i < n; i++) yield i;
}

/**
 * A blob read from a chunk may be a view of the chunk's own memory (payloads of 12 bytes or less):
 * copied, since the rows outlive the chunk.
 */
function ownBytes(b: Uint8Array): Uint8Array {
  return b.byteLength <= 12 ? b.slice() : b;
}

/** Yields to the event loop between chunks: a pass reads and writes tens of thousands of rows. */
const breathe = () => new Promise<void>((r) => setImmediate(r));
