/** Turns chart points into a fitting series: epoch ms become days since the first point. */
import type { FitPoint, Series } from './types.js';

export const DAY_MS = 86_400_000;

/**
 * Finite points sorted by time, t in days since the first one; null when fewer than two distinct
 * times remain (no time axis to fit along). Days, not epoch ms: powers and exponentials of 1.7e12
 * make the least-squares systems hopelessly ill-conditioned.
 */
export function toSeries(points: readonly FitPoint[]): Series | null {
  const kept = points.filter((p) => Number.isFinite(p.t) && Number.isFinite(p.y)).sort((a, b) => a.t - b.t);
  const first = kept[0];
  const last = kept[kept.length - 1];
  if (first === undefined || last === undefined || last.t === first.t) return null;
  const days = Float64Array.from(kept, (p) => (p.t - first.t) / DAY_MS);
  const y = Float64Array.from(kept, (p) => p.y);
  const steps: number[] = [];
  for (let i = 1; i < days.length; i++) {
    const step = days[i]! - days[i - 1]!;
    if (step > 0) steps.push(step);
  }
  steps.sort((a, b) => a - b);
  const stepDays = steps[Math.floor(steps.length / 2)]!;
  return { originMs: first.t, days, y, spanDays: days[days.length - 1]!, stepDays };
}

/** Reads a parameter; a missing one is NaN so that a malformed Regression evaluates to NaN, never to a guess. */
export function param(params: Readonly<Record<string, number>>, name: string): number {
  return params[name] ?? Number.NaN;
}

/** Mean and (population) standard deviation, for scaling y to unit size before an iterative fit. */
export function meanAndSpread(values: Float64Array): { mean: number; spread: number } {
  let sum = 0;
  for (const v of values) sum += v;
  const mean = sum / values.length;
  let squares = 0;
  for (const v of values) squares += (v - mean) ** 2;
  return { mean, spread: Math.sqrt(squares / values.length) };
}
