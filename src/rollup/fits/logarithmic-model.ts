/**
 * y = intercept + slope·ln(t + shift). The first point is at t = 0, where ln has its pole, so t is
 * shifted by one typical step (the median spacing of the points): the curve reads as growth since
 * one bucket before the first point, whatever the bucket size. `shift` is fixed, not fitted.
 */
import { num, term, T_NOTE } from './formula-text.js';
import { leastSquares } from './linear-least-squares.js';
import { param } from './series.js';
import type { ModelFitter } from './types.js';

export const logarithmicModel: ModelFitter = {
  model: 'logarithmic',
  fitted: ['intercept', 'slope'],
  minPoints: 3,
  fit(series) {
    const shift = series.stepDays;
    const beta = leastSquares(series.days, series.y, [() => 1, (t) => Math.log(t + shift)]);
    return beta === null ? null : { intercept: beta[0]!, slope: beta[1]!, shift };
  },
  evaluate: (p, t) => param(p, 'intercept') + param(p, 'slope') * Math.log(t + param(p, 'shift')),
  formula: (p) =>
    `y = ${num(param(p, 'intercept'))}${term(param(p, 'slope'), `·ln(t + ${num(param(p, 'shift'))})`)}${T_NOTE}`,
};
