import { lastValue } from './colors.js';
import type { CardSeries } from './types.js';

/** Values that add up over buckets are summed over the window; others (averages, percentiles, last, distinct counts) take the latest. */
const ADDITIVE = new Set(['count', 'sum']);

/** One number per series for stat, pie, radar (docs/pages.md, "Charts"): the window's total, or the latest value. */
export function reduce(value: string, s: CardSeries): number | null {
  if (!ADDITIVE.has(value)) return lastValue(s.values);
  let sum = 0;
  let any = false;
  for (const v of s.values) {
    if (v === null) continue;
    sum += v;
    any = true;
  }
  return any ? sum : null;
}
