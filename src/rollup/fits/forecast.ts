/** A regression's value at a future time, with an approximate prediction band. */
import { Matrix, SingularValueDecomposition } from 'ml-matrix';
import { predict } from './fit-regression.js';
import { modelOf } from './models.js';
import { DAY_MS, toSeries } from './series.js';
import type { FitPoint, Forecast, Params, Regression } from './types.js';

/** Two-sided 95% quantile of the normal distribution. */
const Z95 = 1.959964;

/**
 * `predict(r, at)` as a Forecast. `points` are the ones `r` was fitted to: they give the residual
 * spread and the parameters' uncertainty for the ≈95% band (delta method, normal quantile), which is
 * left out when it cannot be computed. A value beyond float range (an exponential far out) is held
 * at ±Number.MAX_VALUE, since JSON has no Infinity. Throws RangeError where the model is undefined
 * (a logarithmic regression before its pole, i.e. before the first point), never the case for a
 * horizon after the points.
 */
export function forecastAt(points: readonly FitPoint[], r: Regression, at: number): Forecast {
  const raw = predict(r, at);
  if (Number.isNaN(raw))
    throw new RangeError(`the ${r.model} regression is undefined at ${new Date(at).toISOString()}`);
  const value = Math.max(-Number.MAX_VALUE, Math.min(Number.MAX_VALUE, raw));
  const forecast: Forecast = { at: new Date(at).toISOString(), value, model: r.model };
  const halfWidth = Number.isFinite(raw) ? bandHalfWidth(points, r, at) : null;
  if (halfWidth !== null && Number.isFinite(value - halfWidth) && Number.isFinite(value + halfWidth)) {
    forecast.lower = value - halfWidth;
    forecast.upper = value + halfWidth;
  }
  return forecast;
}

/**
 * z·√(s²·(1 + gᵀ(JᵀJ)⁻¹g)): s² the residual variance, J the curve's gradient over the fitted
 * parameters at each point, g the gradient at `at` (numerical, central differences).
 */
function bandHalfWidth(points: readonly FitPoint[], r: Regression, at: number): number | null {
  const fitter = modelOf(r.model);
  const series = toSeries(points);
  if (fitter === undefined || series === null) return null;
  const n = series.y.length;
  const p = fitter.fitted.length;
  if (n <= p) return null;
  // Days from the regression's own origin, in case the points were given in another order.
  const shift = (series.originMs - Date.parse(r.origin_at)) / DAY_MS;
  const curve = (params: Params, days: number) => fitter.evaluate(params, days);
  let sse = 0;
  for (let i = 0; i < n; i++) sse += (series.y[i]! - curve(r.params, series.days[i]! + shift)) ** 2;
  const jacobian = new Matrix(n, p);
  for (let i = 0; i < n; i++) jacobian.setRow(i, gradient(r.params, fitter.fitted, series.days[i]! + shift, curve));
  const svd = new SingularValueDecomposition(jacobian.transpose().mmul(jacobian));
  if (svd.rank < p) return null;
  const g = Matrix.columnVector(gradient(r.params, fitter.fitted, (at - Date.parse(r.origin_at)) / DAY_MS, curve));
  const leverage = g.transpose().mmul(svd.solve(g)).get(0, 0);
  const half = Z95 * Math.sqrt((sse / (n - p)) * (1 + Math.max(0, leverage)));
  return Number.isFinite(half) ? half : null;
}

function gradient(
  params: Params,
  names: readonly string[],
  days: number,
  curve: (params: Params, days: number) => number,
): number[] {
  return names.map((name) => {
    const value = params[name] ?? 0;
    const h = 1e-6 * Math.max(Math.abs(value), 1e-3);
    return (curve({ ...params, [name]: value + h }, days) - curve({ ...params, [name]: value - h }, days)) / (2 * h);
  });
}
