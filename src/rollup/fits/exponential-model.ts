/**
 * y = scale·e^(rate·t), for series with every y > 0. Started from the straight line through
 * (t, ln y), which is exact on noiseless data but weighs small values too heavily on noisy data, then
 * refined by least squares on y itself so that r2, rmse and the AICc of `auto` compare like for like.
 */
import { num, T_NOTE } from './formula-text.js';
import { leastSquares } from './linear-least-squares.js';
import { fitCurve, squaredError } from './nonlinear-least-squares.js';
import { param } from './series.js';
import type { ModelFitter, Params } from './types.js';

export const exponentialModel: ModelFitter = {
  model: 'exponential',
  fitted: ['scale', 'rate'],
  minPoints: 3,
  fit(series) {
    if (!series.y.every((v) => v > 0)) return null;
    const beta = leastSquares(series.days, series.y.map(Math.log), [() => 1, (t) => t]);
    if (beta === null) return null;
    const logSpace: Params = { scale: Math.exp(beta[0]!), rate: beta[1]! };
    return refine(series.days, series.y, series.spanDays, logSpace) ?? logSpace;
  },
  evaluate: (p, t) => param(p, 'scale') * Math.exp(param(p, 'rate') * t),
  formula: (p) => `y = ${num(param(p, 'scale'))}·e^(${num(param(p, 'rate'))}·t)${T_NOTE}`,
};

/** Least squares on y in unit scale (t/span, y/max y); the log-space start when it does no better. */
function refine(days: Float64Array, y: Float64Array, span: number, start: Params): Params | null {
  const yScale = y.reduce((a, b) => Math.max(a, b), 0);
  const x = days.map((t) => t / span);
  const z = y.map((v) => v / yScale);
  const problem = {
    x,
    y: z,
    model: ([a, b]: readonly number[], x: number) => a! * Math.exp(b! * x),
    gradient: ([a, b]: readonly number[], x: number, out: Float64Array) => {
      out[0] = Math.exp(b! * x);
      out[1] = a! * x * out[0];
    },
    starts: [[param(start, 'scale') / yScale, param(start, 'rate') * span]],
  };
  const fit = fitCurve(problem);
  if (fit === null || !(fit.sse < squaredError(problem, problem.starts[0]!))) return null;
  return { scale: fit.params[0]! * yScale, rate: fit.params[1]! / span };
}
