/**
 * Real rollups in memory for the aggregation tests: records → minute BucketStates per series and for
 * the total pseudo-series, hour/day/month tiers merged from them as the compactor does (coarse rows
 * only for buckets that end at or before the watermark, as a store that is still compacting has),
 * behind the RollupReader contract. Every read is logged, so tests can see which tiers were read and
 * whether sketches were decoded.
 */
import { emptyState, figuresOf, mergeState, type BucketState } from '../../src/rollup/bucket-state.js';
import {
  bucketStart,
  nextBucketStart,
  TIERS,
  TOTAL_SERIES,
  type StoredBucket,
  type Tier,
} from '../../src/rollup/rollup-types.js';
import type { RollupReader } from '../../src/rollup/rollup-reader-contract.js';
import type { MetricRecord, MetricSeriesRecord } from '../../src/rollup/metric-records.js';
import { METRIC_DEFAULTS } from '../../src/rollup/metric-records.js';

/** One view record as a metric sees it. */
export interface Rec {
  series: string;
  t: number;
  value?: number | null;
  unique?: string;
}

export const SHAPE = { values: true, distinct: true };

/** The state of records, added one by one: the exact reference a merged answer must equal. */
export function stateOf(records: readonly Rec[]): BucketState {
  const s = emptyState(SHAPE);
  for (const r of records) addRecord(s, r);
  return s;
}

function addRecord(s: BucketState, r: Rec): void {
  s.count++;
  if (r.value !== undefined && r.value !== null) {
    s.values!.add(r.value);
    if (r.t >= s.lastAt) {
      s.last = r.value;
      s.lastAt = r.t;
    }
  }
  if (r.unique !== undefined) s.distinct!.add(r.unique);
}

export interface ReadLog {
  tier: Tier;
  from: number;
  to: number;
  series: readonly string[] | null;
  sketches: boolean;
}

export class MemoryRollups implements RollupReader {
  /** tier → series → bucket start → state */
  private readonly tiers = new Map<Tier, Map<string, Map<number, BucketState>>>();
  readonly reads: ReadLog[] = [];

  constructor(
    records: readonly Rec[],
    private readonly watermark: number | null,
  ) {
    for (const tier of TIERS) this.tiers.set(tier, new Map());
    const minutes = this.tiers.get('minute')!;
    for (const r of records) {
      for (const series of [r.series, TOTAL_SERIES]) {
        let byStart = minutes.get(series);
        if (!byStart) minutes.set(series, (byStart = new Map()));
        const start = bucketStart('minute', r.t);
        let s = byStart.get(start);
        if (!s) byStart.set(start, (s = emptyState(SHAPE)));
        addRecord(s, r);
      }
    }
    for (const tier of TIERS.slice(1)) {
      const out = this.tiers.get(tier)!;
      for (const [series, byStart] of minutes) {
        for (const [start, state] of byStart) {
          const b = bucketStart(tier, start);
          if (watermark === null || nextBucketStart(tier, b) > watermark) continue; // not compacted yet
          let m = out.get(series);
          if (!m) out.set(series, (m = new Map()));
          let s = m.get(b);
          if (!s) m.set(b, (s = emptyState(SHAPE)));
          mergeState(s, state);
        }
      }
    }
  }

  async read(q: {
    metricId: string;
    revision: number;
    tier: Tier;
    from: number;
    to: number;
    series: readonly string[] | null;
    sketches: boolean;
  }): Promise<StoredBucket[]> {
    this.reads.push({ tier: q.tier, from: q.from, to: q.to, series: q.series, sketches: q.sketches });
    const out: StoredBucket[] = [];
    const tier = this.tiers.get(q.tier)!;
    const names = q.series ?? [...tier.keys()].filter((s) => s !== TOTAL_SERIES);
    for (const series of [...names].sort()) {
      const byStart = tier.get(series);
      if (!byStart) continue;
      for (const start of [...byStart.keys()].sort((a, b) => a - b)) {
        if (start < q.from || start >= q.to) continue;
        const state = byStart.get(start)!;
        out.push({ series, start, ...figuresOf(state), state: q.sketches ? state : null });
      }
    }
    return out;
  }

  async seriesWithData(q: {
    metricId: string;
    revision: number;
    spans: ReadonlyArray<{ tier: Tier; from: number; to: number }>;
  }): Promise<string[]> {
    const out = new Set<string>();
    for (const s of q.spans) {
      for (const [series, byStart] of this.tiers.get(s.tier)!) {
        for (const [start, state] of byStart) if (start >= s.from && start < s.to && state.count > 0) out.add(series);
      }
    }
    return [...out];
  }

  completeThrough(): number | null {
    return this.watermark;
  }
}

let n = 0;

/** A metric record with the defaults, changed by `over`. */
export function metric(over: Partial<MetricRecord> = {}): MetricRecord {
  return {
    ...METRIC_DEFAULTS,
    id: 'met_aaaaaaaaaaaaaaaaaaaa',
    name: 'Requests',
    team_id: 'tm_x',
    project_id: 'prj_x',
    deleted_at: null,
    view_id: 'vw_x',
    status: 'active',
    value_field: 'duration',
    unique_field: 'user',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    backfill_percent: 100,
    backfill_total_count: 1,
    backfill_completed_count: 1,
    backfill_completed_at: null,
    backfill_started_at: null,
    compact_percent: 100,
    compact_total_count: 1,
    compact_completed_count: 1,
    compact_started_at: null,
    definition_revision: 1,
    ...over,
  };
}

/** A registry entry for series `hash`. */
export function seriesRecord(hash: string, over: Partial<MetricSeriesRecord> = {}): MetricSeriesRecord {
  n++;
  return {
    id: `mse_${String(n).padStart(20, '0')}`,
    metric_id: 'met_aaaaaaaaaaaaaaaaaaaa',
    hash,
    dimensions: { region: hash },
    display_values: null,
    display_label: null,
    first_seen_at: '2026-01-01T00:00:00.000Z',
    last_seen_at: '2026-01-01T00:00:00.000Z',
    last_value: null,
    last_value_at: null,
    color: null,
    pinned_at: null,
    ...over,
  };
}
