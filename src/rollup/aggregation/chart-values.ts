import { QuantileSketch } from '../ddsketch.js';
import type { ChartValue, NULL_HANDLINGS } from '../metric-records.js';
import type { ColumnFigure } from '../rollup-types.js';
import type { Cell } from './cell.js';

export type NullHandling = (typeof NULL_HANDLINGS)[number];

const QUANTILE: Partial<Record<ChartValue, { q: number; figure: 'p50' | 'p95' | 'p99' }>> = {
  p50: { q: 0.5, figure: 'p50' },
  p95: { q: 0.95, figure: 'p95' },
  p99: { q: 0.99, figure: 'p99' },
};

/** Chart values that need the value sketch once rows are merged (or zeros added for nulls). */
export const PERCENTILE_VALUES: ReadonlySet<ChartValue> = new Set(['p50', 'p95', 'p99']);

/**
 * The value of one bucket before gap handling, carrying forward and running totals: null when the
 * bucket has nothing to say for it (no records, or no numbers for a value computed from them).
 * `cumulative_*` give the bucket's own increment here.
 *
 * Stored states skip nulls; `count_as_zero` is applied here: the count − valueCount records without
 * a number count as zeros (sum unchanged, average over every record, min/max take 0 in, percentiles
 * rank that many zeros). `last` is the latest number, nulls never replace it.
 */
export function bucketValue(cell: Cell | null, value: ChartValue, nulls: NullHandling): number | null {
  if (cell === null || cell.count === 0) return null;
  const zeros = nulls === 'count_as_zero' ? cell.count - cell.valueCount : 0;
  const numbers = cell.valueCount + zeros;
  switch (value) {
    case 'count':
    case 'cumulative_count':
      return cell.count;
    case 'sum':
    case 'cumulative_sum':
      return cell.sum;
    case 'average':
      return numbers > 0 ? cell.sum / numbers : null;
    case 'min':
      return zeros > 0 ? Math.min(cell.min ?? 0, 0) : cell.min;
    case 'max':
      return zeros > 0 ? Math.max(cell.max ?? 0, 0) : cell.max;
    case 'last':
      return cell.last;
    case 'count_unique': {
      const estimate = cell.state?.distinct ? cell.state.distinct.estimate() : cell.rows === 1 ? cell.distinct : null;
      return estimate === null ? null : Math.round(estimate);
    }
    default:
      return quantileOf(cell, QUANTILE[value]!, zeros);
  }
}

function quantileOf(cell: Cell, p: { q: number; figure: 'p50' | 'p95' | 'p99' }, zeros: number): number | null {
  const sketch = cell.state?.values;
  if (!sketch) return cell.rows === 1 && zeros === 0 ? cell[p.figure] : null;
  if (zeros === 0) return sketch.quantile(p.q);
  const withZeros = new QuantileSketch();
  withZeros.merge(sketch);
  withZeros.add(0, zeros);
  return withZeros.quantile(p.q);
}

/** Stored figures each value is computed from (bucketValue, mergeCell), beyond start, count and value_count. */
const FIGURES_OF: Record<ChartValue, readonly ColumnFigure[]> = {
  count: [],
  cumulative_count: [],
  sum: ['sum'],
  cumulative_sum: ['sum'],
  average: ['sum'],
  min: ['min'],
  max: ['max'],
  last: ['last', 'last_at'],
  p50: ['p50'],
  p95: ['p95'],
  p99: ['p99'],
  count_unique: ['distinct'],
};

/** The stored figures an answer of `values` reads: start, count and value_count always (placement, presence, null handling). */
export function figuresFor(values: readonly ChartValue[]): ReadonlySet<ColumnFigure> {
  return new Set<ColumnFigure>(['start', 'count', 'value_count', ...values.flatMap((v) => FIGURES_OF[v])]);
}
