/**
 * PLACEHOLDER on branch h/agg only, so the aggregation endpoint compiles before engineer "fits"
 * lands src/rollup/fits/: the agreed signatures with a least-squares line standing in for every
 * model. Replace with theirs on merge.
 */
export type RegressionModel = 'linear' | 'exponential' | 'logarithmic' | 'logistic' | 'sinusoidal';

export interface Regression {
  model: RegressionModel;
  [k: string]: unknown;
}

export interface Forecast {
  at: string;
  value: number;
  model: RegressionModel;
  lower?: number;
  upper?: number;
}

export function fitRegression(points: Array<{ t: number; y: number }>, model: RegressionModel | 'auto'): Regression | null {
  void model;
  if (points.length < 2) return null;
  const n = points.length;
  const mt = points.reduce((a, p) => a + p.t, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const p of points) {
    sxy += (p.t - mt) * (p.y - my);
    sxx += (p.t - mt) ** 2;
  }
  if (sxx === 0) return null;
  const slope = sxy / sxx;
  return { model: 'linear', slope, intercept: my - slope * mt };
}

export function forecastAt(points: Array<{ t: number; y: number }>, r: Regression, at: number): Forecast {
  void points;
  const slope = r['slope'] as number;
  const intercept = r['intercept'] as number;
  return { at: new Date(at).toISOString(), value: intercept + slope * at, model: r.model };
}

export function horizonTime(h: 'next_7_days' | 'next_30_days' | 'next_90_days' | 'end_of_quarter' | 'end_of_year' | 'next_year', now: number): number {
  const d = new Date(now);
  switch (h) {
    case 'next_7_days': return now + 7 * 86_400_000;
    case 'next_30_days': return now + 30 * 86_400_000;
    case 'next_90_days': return now + 90 * 86_400_000;
    case 'end_of_quarter': return Date.UTC(d.getUTCFullYear(), Math.floor(d.getUTCMonth() / 3) * 3 + 3, 1);
    case 'end_of_year': return Date.UTC(d.getUTCFullYear() + 1, 0, 1);
    case 'next_year': return now + 365 * 86_400_000;
  }
}
