import { join } from 'node:path';
import {
  BIGINT,
  BLOB,
  DuckDBInstance,
  INTEGER,
  LIST,
  listValue,
  VARCHAR,
  type DuckDBConnection,
  type DuckDBValue,
} from '@duckdb/node-api';
import { ApiError } from '../errors.js';
import { appendColumns } from './duck-chunks.js';
import { TIERS, type Tier } from './rollup-types.js';
import type { MetricPartials } from './rollup-types.js';
import { duckdbQuerySeconds } from '../self-metrics/registry.js';

/**
 * The one boundary to the rollups' DuckDB database `DATA_DIR/rollups.duckdb` (one instance for the
 * process). Tables (docs/metrics.md, "Rollups"):
 *
 * - `rollup_partials` (metric_id, revision, series, minute, state): minute partials appended
 *   without a key, by committed batches and backfilled files; the compactor folds them away;
 * - `rollup_applied` (batch): the spool batches whose partials are in, written in the same
 *   transaction as their rows — a replay after a crash finds the mark and adds nothing;
 * - `rollup_backfilled` (metric_id, revision, file_id): the same for each backfilled view file;
 * - `rollup_minute|hour|day|month` (metric_id, revision, series, start, figures…, state): the
 *   canonical rows, one per (metric, revision, series, bucket), figures precomputed from the state.
 *
 * Writes go through two lanes, each one connection running one operation at a time: `exclusive`
 * (compaction, pruning, drops: they update and delete rows) and `appending` (merges of committed
 * batches and backfilled files: they only append). Appends never conflict in DuckDB's MVCC with
 * another transaction's deletes of older rows, so a merge never waits behind a compaction pass (the
 * ingest → counted lag, docs/metrics.md "Rollups"); a delete only sees rows of its own snapshot.
 * Reads use their own connection and see committed snapshots.
 */
export class RollupStore {
  private readonly chains = {
    exclusive: Promise.resolve() as Promise<unknown>,
    appending: Promise.resolve() as Promise<unknown>,
  };
  private closed = false;
  /** Told after every commit that adds or drops rows (compaction aside: it changes no figure). */
  listener: RollupWriteListener | null = null;

  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly writer: DuckDBConnection,
    private readonly appender: DuckDBConnection,
    readonly reader: DuckDBConnection,
  ) {}

  static async open(dataDir: string, settings: DuckDbSettings = {}): Promise<RollupStore> {
    return duck('open the rollups database', async () => {
      const instance = await DuckDBInstance.create(join(dataDir, 'rollups.duckdb'), duckDbOptions(settings));
      const store = new RollupStore(
        instance,
        await instance.connect(),
        await instance.connect(),
        await instance.connect(),
      );
      await store.writer.run(SCHEMA);
      return store;
    });
  }

  /** Run `fn` with the write connection once every earlier write of its lane has finished. */
  exclusive<T>(what: string, fn: (conn: DuckDBConnection) => Promise<T>, lane: WriteLane = 'exclusive'): Promise<T> {
    const conn = lane === 'exclusive' ? this.writer : this.appender;
    const run = this.chains[lane].then(() => {
      if (this.closed) throw new ApiError('service_unavailable', 'the rollups database is closed');
      return duck(what, () => fn(conn));
    });
    this.chains[lane] = run.catch(() => undefined);
    return run;
  }

  /** `fn` inside one DuckDB transaction on the lane's write connection (rolled back when it throws). */
  transaction<T>(what: string, fn: (conn: DuckDBConnection) => Promise<T>, lane: WriteLane = 'exclusive'): Promise<T> {
    return this.exclusive(
      what,
      async (conn) => {
        await conn.run('BEGIN TRANSACTION');
        try {
          const out = await fn(conn);
          await conn.run('COMMIT');
          return out;
        } catch (err) {
          await conn.run('ROLLBACK').catch(() => undefined);
          throw err;
        }
      },
      lane,
    );
  }

  /**
   * Merge committed batches' partials: their rows and applied marks in one transaction (a backlog of
   * small batches costs one transaction, not one each); batches already marked (a replay) add
   * nothing. `replay` false: every batch was committed by this process and merged by nobody yet, so
   * the marks are not looked up (a live merge's lag). Answers how many were merged.
   */
  async mergeBatches(
    batches: ReadonlyArray<{ batch: number; metrics: readonly MetricPartials[] }>,
    replay = true,
  ): Promise<number> {
    let added: readonly MetricPartials[] = [];
    try {
      return await this.transaction(
        'merge batches of partials',
        async (conn) => {
          const keys = batches.map((b) => BigInt(b.batch));
          const seen = replay
            ? new Set(
                (
                  await conn.runAndReadAll(
                    'SELECT batch FROM rollup_applied WHERE list_contains($1, batch)',
                    [listValue(keys)],
                    [LIST(BIGINT)],
                  )
                )
                  .getRows()
                  .map((r) => Number(r[0])),
              )
            : new Set<number>();
          const fresh = batches.filter((b) => !seen.has(b.batch));
          if (fresh.length === 0) return 0;
          added = fresh.flatMap((b) => b.metrics);
          await insertPartials(conn, added);
          await conn.run(
            'INSERT INTO rollup_applied SELECT unnest($1)',
            [listValue(fresh.map((b) => BigInt(b.batch)))],
            [LIST(BIGINT)],
          );
          return fresh.length;
        },
        'appending',
      );
    } finally {
      // After the commit (or a failure that may have committed): readers' caches learn what changed.
      this.reportAdded(added);
    }
  }

  /** Merge one backfilled view file's partials with its mark; false when it was done already. */
  async mergeBackfillFile(
    metricId: string,
    revision: number,
    fileId: string,
    partials: MetricPartials,
  ): Promise<boolean> {
    let added = false;
    try {
      return await this.transaction(
        'merge a backfilled file',
        async (conn) => {
          const seen = await conn.runAndReadAll(
            'SELECT 1 FROM rollup_backfilled WHERE metric_id = $1 AND revision = $2 AND file_id = $3',
            [metricId, revision, fileId],
          );
          if (seen.currentRowCount > 0) return false;
          added = true;
          await insertPartials(conn, [partials]);
          await conn.run('INSERT INTO rollup_backfilled VALUES ($1, $2, $3)', [metricId, revision, fileId]);
          return true;
        },
        'appending',
      );
    } finally {
      if (added) this.reportAdded([partials]);
    }
  }

  /** Per metric, the minutes of partials just committed (sorted; the oldest first), to the listener (sealed-cells.ts). */
  private reportAdded(added: readonly MetricPartials[]): void {
    if (!this.listener || added.length === 0) return;
    const minutes = new Map<string, Set<number>>();
    for (const m of added) {
      let set = minutes.get(m.metricId);
      if (!set) minutes.set(m.metricId, (set = new Set()));
      for (const p of m.partials) set.add(p.minute);
    }
    for (const [id, set] of minutes) {
      if (set.size === 0) continue;
      const sorted = Float64Array.from(set).sort();
      this.listener.added(id, sorted[0]!, sorted);
    }
  }

  /** Partial rows not folded yet, per metric (compaction progress). */
  async partialsByMetric(): Promise<Map<string, number>> {
    const r = await duck('count partials', () =>
      this.reader.runAndReadAll('SELECT metric_id, count(*)::DOUBLE FROM rollup_partials GROUP BY metric_id'),
    );
    return new Map(r.getRows().map((row) => [String(row[0]), Number(row[1])]));
  }

  /** The view files already backfilled for this metric revision. */
  async backfilledFiles(metricId: string, revision: number): Promise<Set<string>> {
    const r = await duck('read backfill marks', () =>
      this.reader.runAndReadAll('SELECT file_id FROM rollup_backfilled WHERE metric_id = $1 AND revision = $2', [
        metricId,
        revision,
      ]),
    );
    return new Set(r.getRows().map((row) => String(row[0])));
  }

  /**
   * Applied marks are needed only while their LMDB entry may replay: keep those of the pending keys.
   * `pending` is read inside the exclusive section: a batch merged before it still has its LMDB entry
   * until the delete commits, so its mark is kept (read earlier, a merge in between would lose it).
   */
  pruneApplied(pending: () => readonly number[]): Promise<void> {
    return this.exclusive('prune applied marks', async (conn) => {
      await conn.run(
        'DELETE FROM rollup_applied WHERE NOT list_contains($1, batch)',
        [listValue(pending().map((k) => BigInt(k)))],
        [LIST(BIGINT)],
      );
    });
  }

  /** Remove every row and mark of `metricId` whose revision is not `keep` (null: every revision). */
  async dropMetric(metricId: string, keep: number | null): Promise<void> {
    try {
      await this.transaction('drop old rollup rows', async (conn) => {
        const cond = 'metric_id = $1 AND revision IS DISTINCT FROM $2';
        const params: DuckDBValue[] = [metricId, keep];
        for (const t of ['rollup_partials', 'rollup_backfilled', ...TIERS.map(tierTable)])
          await conn.run(`DELETE FROM ${t} WHERE ${cond}`, params, [VARCHAR, INTEGER]);
      });
    } finally {
      this.listener?.dropped(metricId);
    }
  }

  /** (metric, revision) pairs that have rows (start-up: drop what metrics no longer need). */
  async storedRevisions(): Promise<Array<{ metricId: string; revision: number }>> {
    const sql = ['rollup_partials', 'rollup_backfilled', ...TIERS.map(tierTable)]
      .map((t) => `SELECT DISTINCT metric_id, revision FROM ${t}`)
      .join(' UNION ');
    const r = await duck('list stored revisions', () => this.reader.runAndReadAll(sql));
    return r.getRows().map((row) => ({ metricId: String(row[0]), revision: Number(row[1]) }));
  }

  /**
   * DuckDB's own accounting (docs/self-hosting.md, "Memory"): bytes its buffer manager holds now
   * (tables' blocks, query intermediates, the appenders' row groups) and spilled to its temporary
   * files, with its `memory_limit` and `threads`. Allocations outside the buffer manager are not in it.
   */
  async memory(): Promise<DuckDbMemory> {
    const r = await duck('read its memory use', () =>
      this.reader.runAndReadAll(
        `SELECT sum(memory_usage_bytes)::DOUBLE, sum(temporary_storage_bytes)::DOUBLE,
          current_setting('memory_limit'), current_setting('threads')::INTEGER FROM duckdb_memory()`,
      ),
    );
    const [bytes, temporary, limit, threads] = r.getRows()[0]!;
    return { bytes: Number(bytes), temporaryBytes: Number(temporary), limit: String(limit), threads: Number(threads) };
  }

  /** Let the writes queued so far finish, then close. */
  async close(): Promise<void> {
    await Promise.all([this.chains.exclusive, this.chains.appending]);
    this.closed = true;
    try {
      this.writer.closeSync();
      this.appender.closeSync();
      this.reader.closeSync();
      this.instance.closeSync();
    } catch {
      // Closing twice is harmless.
    }
  }
}

/** What the rollup store tells after its writes (sealed-cells.ts keeps its cached buckets true to them). */
export interface RollupWriteListener {
  /** Partials of `metricId` were committed, the oldest at minute `from`; `minutes`: every minute they touch, sorted. */
  added(metricId: string, from: number, minutes: Float64Array): void;
  /** Rows of `metricId` were dropped. */
  dropped(metricId: string): void;
}

/** How the rollups' DuckDB is sized (config.ts `SLUICE_DUCKDB_*`; docs/self-hosting.md, "Memory"). */
export interface DuckDbSettings {
  /** Bytes DuckDB's buffer manager may hold (0 or absent: DEFAULT_DUCKDB_MEMORY_BYTES). */
  memoryLimitBytes?: number;
  /** DuckDB's threads (0 or absent: DEFAULT_DUCKDB_THREADS). */
  threads?: number;
}

/**
 * DuckDB's own default is 80 % of the machine's memory: it then never evicts what it read or wrote,
 * and its cache grows with the rollup tables beside the rest of the server. Past this limit it
 * evicts (the tables are on disk) and spills large intermediates to `rollups.duckdb.tmp/`.
 */
export const DEFAULT_DUCKDB_MEMORY_BYTES = 512 * 1024 * 1024;
/** Compaction and merges are one statement at a time per lane: two threads serve them and the reads. */
export const DEFAULT_DUCKDB_THREADS = 2;

/** What `RollupStore.memory` answers. */
export interface DuckDbMemory {
  bytes: number;
  temporaryBytes: number;
  /** `memory_limit` as DuckDB prints it (e.g. "488.2 MiB"). */
  limit: string;
  threads: number;
}

function duckDbOptions(s: DuckDbSettings): Record<string, string> {
  const bytes = s.memoryLimitBytes || DEFAULT_DUCKDB_MEMORY_BYTES;
  // DuckDB reads "KiB" as 1024 bytes; a whole number of KiB is exact enough for a limit.
  return {
    threads: String(s.threads || DEFAULT_DUCKDB_THREADS),
    memory_limit: `${Math.max(1, Math.floor(bytes / 1024))}KiB`,
  };
}

/** `exclusive`: writes that update or delete; `appending`: writes that only append (merges). */
export type WriteLane = 'exclusive' | 'appending';

/** The table of a tier's canonical rows (a fixed name per tier, never user text). */
export function tierTable(tier: Tier): string {
  return `rollup_${tier}`;
}

const TIER_COLUMNS = `metric_id VARCHAR, revision INTEGER, series VARCHAR, start BIGINT, count BIGINT, value_count BIGINT, sum DOUBLE, min DOUBLE, max DOUBLE,
  last DOUBLE, last_at BIGINT, p50 DOUBLE, p95 DOUBLE, p99 DOUBLE, distinct_count DOUBLE, state BLOB`;

const SCHEMA = [
  'CREATE TABLE IF NOT EXISTS rollup_partials (metric_id VARCHAR, revision INTEGER, series VARCHAR, minute BIGINT, state BLOB)',
  'CREATE TABLE IF NOT EXISTS rollup_applied (batch BIGINT)',
  'CREATE TABLE IF NOT EXISTS rollup_backfilled (metric_id VARCHAR, revision INTEGER, file_id VARCHAR)',
  ...TIERS.map((t) => `CREATE TABLE IF NOT EXISTS ${tierTable(t)} (${TIER_COLUMNS})`),
].join(';\n');

/**
 * Append partial rows a data chunk at a time (duck-chunks.ts), inside the caller's transaction (a
 * rollback drops them): binding them as list parameters cost a value conversion a cell, and an
 * appender call per value a twentieth of the main thread in a time-spread import (two partials a record).
 */
async function insertPartials(conn: DuckDBConnection, metrics: readonly MetricPartials[]): Promise<void> {
  let count = 0;
  for (const m of metrics) count += m.partials.length;
  if (count === 0) return;
  function* rows() {
    for (const m of metrics) for (const p of m.partials) yield { m, p };
  }
  await appendColumns(conn, 'rollup_partials', PARTIAL_TYPES, rows(), count, ({ m, p }, row) => {
    row[0] = m.metricId;
    row[1] = m.revision;
    row[2] = m.series[p.series]!.hash;
    row[3] = BigInt(p.minute);
    row[4] = { bytes: p.state };
  });
}

const PARTIAL_TYPES = [VARCHAR, INTEGER, VARCHAR, BIGINT, BLOB];

/** DuckDB failures as catalogue errors carrying the cause. */
export async function duck<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const end = duckdbQuerySeconds.startTimer({ operation: what });
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError('server_error', `DuckDB failed to ${what}: ${(err as Error)?.message ?? String(err)}`, {
      cause: err,
    });
  } finally {
    end();
  }
}
