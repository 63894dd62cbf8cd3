/**
 * The aggregation endpoint's answer (spec: TimeseriesAggregation) as the bench reads it, flattened
 * into cells: one (series, bucket) with the numbers in the order of `values`.
 */
export const OTHER = '__other__';

export interface AggregationSeries {
  details: { label: string | null; hash: string; dimensions: Record<string, unknown> | null; color: string | null };
  /** Bucket start → numbers aligned with `values` (null: no data, with `gaps`). */
  records: Record<string, (number | null)[]>;
}

export interface AggregationAnswer {
  coverage_mode: string | null;
  start_at: string;
  end_at: string;
  interval: string;
  values: string[];
  series: AggregationSeries[];
  series_total: number;
  complete_through_at: string | null;
}

export interface Cell {
  /** The series' value of the group_by field, or `__other__`. */
  group: string;
  /** Bucket start, epoch ms. */
  bucket: number;
  values: (number | null)[];
}

/** A bucket key as epoch ms: an ISO date-time, or epoch ms written as digits. */
export function bucketTime(key: string): number {
  const t = /^-?\d+$/.test(key) ? Number(key) : Date.parse(key);
  if (!Number.isFinite(t)) throw new Error(`aggregation: bucket key "${key}" is neither a date-time nor epoch ms`);
  return t;
}

/** The group a series stands for: its `field` dimension, or `__other__` for the folded tail. */
export function groupOf(s: AggregationSeries, field: string): string {
  if (s.details.hash === OTHER || s.details.label === OTHER) return OTHER;
  const v = s.details.dimensions?.[field];
  // A series the registry has not caught up with has no dimensions: it shows as its own group
  // (and as an error against the exact answer), rather than stopping the run.
  return v === undefined ? `(unregistered ${s.details.hash})` : String(v);
}

export function cellsOf(answer: AggregationAnswer, field: string): Cell[] {
  const out: Cell[] = [];
  for (const s of answer.series) {
    const group = groupOf(s, field);
    for (const [key, values] of Object.entries(s.records)) out.push({ group, bucket: bucketTime(key), values });
  }
  return out;
}

/** Sum of `count` over every series and bucket with start ≥ `from` (the total of a metric's records there). */
export function countFrom(answer: AggregationAnswer, from: number): Map<number, number> {
  const i = answer.values.indexOf('count');
  if (i === -1) throw new Error(`aggregation: "count" not among the values ${answer.values.join(',')}`);
  const byBucket = new Map<number, number>();
  for (const s of answer.series) {
    for (const [key, values] of Object.entries(s.records)) {
      const t = bucketTime(key);
      if (t < from) continue;
      byBucket.set(t, (byBucket.get(t) ?? 0) + (values[i] ?? 0));
    }
  }
  return byBucket;
}
