import { BIGINT, BOOLEAN, INTEGER, LIST, listValue, VARCHAR, type DuckDBValue } from '@duckdb/node-api';
import { decodeState, emptyState, figuresOf, mergeState, type BucketState, type StateFigures } from './bucket-state.js';
import { TIER_MS, TOTAL_SERIES, type RollupReader, type StoredBucket, type Tier } from './rollup-types.js';
import { duck, tierTable, type RollupStore } from './rollup-store.js';

/** Longest bucket (a 31-day month): a partial minute below `to` + this can still fall in a bucket below `to`. */
const LONGEST_BUCKET_MS = 31 * 86_400_000;

/**
 * `RollupReader.read` over the canonical rows, merged with the partials the compactor has not folded
 * yet, in one statement (one snapshot: a compaction committing meanwhile is seen wholly or not at
 * all), so a read is never staler than DuckDB. A row with partials is decoded and merged in the
 * process, its figures recomputed; a row without them is answered from its stored figures (its blob
 * is read only when `sketches` asks for it). `completeThrough` comes from the caller (rollups.ts).
 */
export function rollupReader(store: RollupStore, completeThrough: (metricId: string) => number | null): RollupReader {
  return {
    completeThrough,
    async read(q) {
      const table = tierTable(q.tier);
      const bucket = bucketSql(q.tier, 'minute');
      const params: DuckDBValue[] = [q.metricId, q.revision, BigInt(Math.floor(q.from)), BigInt(Math.ceil(q.to)), BigInt(Math.ceil(q.to) + LONGEST_BUCKET_MS), q.sketches, listValue(q.series ?? []), q.series === null];
      const types = [VARCHAR, INTEGER, BIGINT, BIGINT, BIGINT, BOOLEAN, LIST(VARCHAR), BOOLEAN];
      const seriesCond = (col: string) => `(CASE WHEN $8 THEN ${col} <> '${TOTAL_SERIES}' ELSE list_contains($7, ${col}) END)`;
      const sql = `WITH p AS (
          SELECT series, ${bucket} AS start, state FROM rollup_partials
          WHERE metric_id = $1 AND revision = $2 AND minute >= $3 AND minute < $5 AND ${seriesCond('series')})
        SELECT 0 AS part, c.series, c.start, c.count, c.value_count, c.sum, c.min, c.max, c.last, c.last_at, c.p50, c.p95, c.p99, c.distinct_count,
          CASE WHEN $6 OR EXISTS (SELECT 1 FROM p WHERE p.series = c.series AND p.start = c.start) THEN c.state END AS state
        FROM ${table} c WHERE c.metric_id = $1 AND c.revision = $2 AND c.start >= $3 AND c.start < $4 AND ${seriesCond('c.series')}
        UNION ALL
        SELECT 1, series, start, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, state FROM p WHERE start >= $3 AND start < $4`;
      const rows = (await duck('read rollups', () => store.reader.runAndReadAll(sql, params, types))).getRows();
      const out = new Map<string, { series: string; start: number; figures: StateFigures | null; state: BucketState | null; merged: boolean }>();
      for (const r of rows) {
        const series = String(r[1]);
        const start = Number(r[2]);
        const key = `${series}\u0000${start}`;
        const blob = r[14] as { bytes: Uint8Array } | null;
        const state = blob === null ? null : decodeState(blob.bytes);
        let b = out.get(key);
        if (!b) out.set(key, (b = { series, start, figures: null, state: null, merged: false }));
        if (Number(r[0]) === 0) {
          b.figures = figuresFromRow(r);
          if (state) b.state = b.state ? mergeInto(state, b.state) : state;
        } else {
          b.merged = true;
          b.state ??= emptyState({ values: state!.values !== null, distinct: state!.distinct !== null });
          mergeState(b.state, state!);
        }
      }
      const buckets: StoredBucket[] = [];
      for (const b of out.values()) {
        const figures = b.merged ? figuresOf(b.state!) : b.figures!;
        buckets.push({ ...figures, series: b.series, start: b.start, state: q.sketches ? b.state : null });
      }
      buckets.sort((a, b) => (a.series < b.series ? -1 : a.series > b.series ? 1 : a.start - b.start));
      return buckets;
    },
  };
}

/** `into` (the canonical state) with `partials` merged after it: canonical first, as the compactor merges. */
function mergeInto(into: BucketState, partials: BucketState): BucketState {
  mergeState(into, partials);
  return into;
}

function figuresFromRow(r: readonly DuckDBValue[]): StateFigures {
  const num = (v: DuckDBValue | undefined) => (v === null || v === undefined ? null : Number(v));
  return {
    count: Number(r[3]!),
    value_count: Number(r[4]!),
    sum: num(r[5]),
    min: num(r[6]),
    max: num(r[7]),
    last: num(r[8]),
    last_at: num(r[9]),
    p50: num(r[10]),
    p95: num(r[11]),
    p99: num(r[12]),
    distinct: num(r[13]),
  };
}

/** SQL of the UTC bucket start of a tier for an epoch-ms column (no user text). */
function bucketSql(tier: Tier, col: string): string {
  if (tier === 'month') return `epoch_ms(date_trunc('month', make_timestamp(${col} * 1000)))`;
  const w = TIER_MS[tier];
  return `(${col} - ((${col} % ${w}) + ${w}) % ${w})`;
}

