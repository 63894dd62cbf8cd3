/** How well a fitted curve matches the points, and the criterion `auto` ranks models by. */
import type { Series } from './types.js';

export interface Goodness {
  sse: number;
  r2: number;
  rmse: number;
}

/** SSE, R² and RMSE of a curve over the series; null when the curve is not finite at some point. */
export function goodness(series: Series, curve: (days: number) => number): Goodness | null {
  const n = series.y.length;
  let mean = 0;
  for (const v of series.y) mean += v / n;
  let sse = 0;
  let sst = 0;
  for (let i = 0; i < n; i++) {
    const fitted = curve(series.days[i]!);
    if (!Number.isFinite(fitted)) return null;
    sse += (series.y[i]! - fitted) ** 2;
    sst += (series.y[i]! - mean) ** 2;
  }
  if (!Number.isFinite(sse) || !Number.isFinite(sst)) return null;
  const floor = sseFloor(series);
  // A constant series has no variance to explain: a curve through every point explains all of it.
  const r2 = sst <= floor ? (sse <= floor ? 1 : 0) : 1 - sse / sst;
  return { sse, r2, rmse: Math.sqrt(sse / n) };
}

/**
 * Corrected Akaike information criterion for least squares with Gaussian errors:
 * n·ln(SSE/n) + 2k + 2k(k+1)/(n−k−1), k = fitted parameters + 1 (the error variance). Null when
 * n ≤ k + 1, where the correction is undefined. SSE is floored at float noise so that exact fits
 * tie (and the tie-break picks the simpler model) instead of scoring −∞.
 */
export function aicc(series: Series, sse: number, fittedParameters: number): number | null {
  const n = series.y.length;
  const k = fittedParameters + 1;
  if (n <= k + 1) return null;
  const floored = Math.max(sse, sseFloor(series));
  return n * Math.log(floored / n) + 2 * k + (2 * k * (k + 1)) / (n - k - 1);
}

/** Squared error indistinguishable from rounding: a residual of 1e-9 of the series' magnitude per point. */
function sseFloor(series: Series): number {
  let magnitude = 0;
  for (const v of series.y) magnitude = Math.max(magnitude, Math.abs(v));
  return series.y.length * (1e-9 * Math.max(magnitude, Number.MIN_VALUE)) ** 2;
}
