import type { SeriesValue } from '../../src/monitor/evaluate.js';

export const CRASH_T0 = Date.parse('2026-01-01T00:00:00Z');
export const CRASH_MIN = 60_000;

/** Deterministic values of three series at slot `at`: each crosses 10 on its own rhythm. */
export function crashSlotValues(at: number): SeriesValue[] {
  const i = (at - CRASH_T0) / CRASH_MIN;
  return ['a', 'b', 'c'].map((hash, k) => ({
    hash,
    label: hash,
    dimensions: { path: hash },
    value: Math.floor(i / (k + 2)) % 3 === 0 ? 5 : 20,
  }));
}
