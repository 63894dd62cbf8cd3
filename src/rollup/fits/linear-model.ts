/** y = intercept + slope·t. */
import { num, term, T_NOTE } from './formula-text.js';
import { leastSquares } from './linear-least-squares.js';
import { param } from './series.js';
import type { ModelFitter } from './types.js';

export const linearModel: ModelFitter = {
  model: 'linear',
  fitted: ['intercept', 'slope'],
  minPoints: 3,
  fit(series) {
    const beta = leastSquares(series.days, series.y, [() => 1, (t) => t]);
    return beta === null ? null : { intercept: beta[0]!, slope: beta[1]! };
  },
  evaluate: (p, t) => param(p, 'intercept') + param(p, 'slope') * t,
  formula: (p) => `y = ${num(param(p, 'intercept'))}${term(param(p, 'slope'), '·t')}${T_NOTE}`,
};
