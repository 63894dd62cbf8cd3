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
        SELECT 0 AS part, c.series, ${NUMBERS.map((n) => `CAST(c.${n} AS DOUBLE)`).join(', ')},
          CASE WHEN $6 OR EXISTS (SELECT 1 FROM p WHERE p.series = c.series AND p.start = c.start) THEN c.state END AS state
        FROM ${table} c WHERE c.metric_id = $1 AND c.revision = $2 AND c.start >= $3 AND c.start < $4 AND ${seriesCond('c.series')}
        UNION ALL
        SELECT 1, series, CAST(start AS DOUBLE), ${NUMBERS.slice(1).map(() => 'NULL').join(', ')}, state FROM p WHERE start >= $3 AND start < $4`;
      // Column-wise, numbers as DOUBLE: converting row arrays of BIGINTs cost far more than the query.
      const cols = (await duck('read rollups', () => store.reader.runAndReadAll(sql, params, types))).getColumns();
      // No rows: no chunks, and no columns either.
      if (cols.length === 0) return [];
      const [parts, seriesCol, ...rest] = cols as [DuckDBValue[], DuckDBValue[], ...DuckDBValue[][]];
      const blobs = rest.pop()! as Array<{ bytes: Uint8Array } | null>;
      const numbers = rest as Array<Array<number | null>>;
      // Everything compacted (the usual case): one stored row per bucket, nothing to merge.
      if (!parts.some((p) => p !== 0)) {
        const buckets = new Array<StoredBucket>(parts.length);
        for (let i = 0; i < parts.length; i++) {
          const blob = blobs[i]!;
          buckets[i] = storedBucket(figuresAt(numbers, i), String(seriesCol[i]), numbers[0]![i]!, q.sketches && blob !== null ? decodeState(blob.bytes) : null);
        }
        return buckets.sort(bySeriesThenStart);
      }
      const out = new Map<string, { series: string; start: number; figures: StateFigures | null; state: BucketState | null; merged: boolean }>();
      for (let i = 0; i < parts.length; i++) {
        const series = String(seriesCol[i]);
        const start = numbers[0]![i]!;
        const key = `${series}\u0000${start}`;
        const blob = blobs[i]!;
        const state = blob === null ? null : decodeState(blob.bytes);
        let b = out.get(key);
        if (!b) out.set(key, (b = { series, start, figures: null, state: null, merged: false }));
        if (parts[i] === 0) {
          b.figures = figuresAt(numbers, i);
          if (state) b.state = b.state ? mergeInto(state, b.state) : state;
        } else {
          b.merged = true;
          b.state ??= emptyState({ values: state!.values !== null, distinct: state!.distinct !== null });
          mergeState(b.state, state!);
        }
      }
      const buckets: StoredBucket[] = [];
      for (const b of out.values()) buckets.push(storedBucket(b.merged ? figuresOf(b.state!) : b.figures!, b.series, b.start, q.sketches ? b.state : null));
      return buckets.sort(bySeriesThenStart);
    },
  };
}

const bySeriesThenStart = (a: StoredBucket, b: StoredBucket) => (a.series < b.series ? -1 : a.series > b.series ? 1 : a.start - b.start);

/** Every field written out: an object spread here cost ~5 µs a row (V8), most of a 24 h read. */
function storedBucket(f: StateFigures, series: string, start: number, state: BucketState | null): StoredBucket {
  return { count: f.count, value_count: f.value_count, sum: f.sum, min: f.min, max: f.max, last: f.last, last_at: f.last_at, p50: f.p50, p95: f.p95, p99: f.p99, distinct: f.distinct, series, start, state };
}

/** `into` (the canonical state) with `partials` merged after it: canonical first, as the compactor merges. */
function mergeInto(into: BucketState, partials: BucketState): BucketState {
  mergeState(into, partials);
  return into;
}

/** Stored figure columns after `series`, in this order (`start` first). */
const NUMBERS = ['start', 'count', 'value_count', 'sum', 'min', 'max', 'last', 'last_at', 'p50', 'p95', 'p99', 'distinct_count'] as const;

function figuresAt(c: ReadonlyArray<ReadonlyArray<number | null>>, i: number): StateFigures {
  return {
    count: c[1]![i]!,
    value_count: c[2]![i]!,
    sum: c[3]![i]!,
    min: c[4]![i]!,
    max: c[5]![i]!,
    last: c[6]![i]!,
    last_at: c[7]![i]!,
    p50: c[8]![i]!,
    p95: c[9]![i]!,
    p99: c[10]![i]!,
    distinct: c[11]![i]!,
  };
}

/** SQL of the UTC bucket start of a tier for an epoch-ms column (no user text). */
function bucketSql(tier: Tier, col: string): string {
  if (tier === 'month') return `epoch_ms(date_trunc('month', make_timestamp(${col} * 1000)))`;
  const w = TIER_MS[tier];
  return `(${col} - ((${col} % ${w}) + ${w}) % ${w})`;
}

