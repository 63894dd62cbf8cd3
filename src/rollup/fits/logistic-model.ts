/**
 * y = offset + capacity/(1 + e^(−rate·(t − midpoint))), by nonlinear least squares. Fitted in unit
 * scale (t/span, (y − min)/range) from a few starts: the S-curve's steepness and midpoint are not
 * knowable in advance, and a single start often settles on a flat stretch.
 */
import { num, term, T_NOTE } from './formula-text.js';
import { fitCurve } from './nonlinear-least-squares.js';
import { param } from './series.js';
import { sigmoid } from './sigmoid.js';
import type { ModelFitter } from './types.js';

export const logisticModel: ModelFitter = {
  model: 'logistic',
  fitted: ['capacity', 'rate', 'midpoint', 'offset'],
  minPoints: 5,
  fit(series) {
    let low = Infinity;
    let high = -Infinity;
    for (const v of series.y) [low, high] = [Math.min(low, v), Math.max(high, v)];
    const range = high - low;
    // A flat series has no S-shape: capacity and rate would be unidentifiable.
    if (!(range > 0) || !Number.isFinite(range)) return null;
    const x = series.days.map((t) => t / series.spanDays);
    const z = series.y.map((v) => (v - low) / range);
    const fit = fitCurve({
      x,
      y: z,
      model: ([o, l, k, m], x) => o! + l! * sigmoid(k! * (x - m!)),
      gradient: ([, l, k, m], x, out) => {
        const s = sigmoid(k! * (x - m!));
        const slope = l! * s * (1 - s);
        out[0] = 1;
        out[1] = s;
        out[2] = slope * (x - m!);
        out[3] = -slope * k!;
      },
      starts: starts(x, z),
      // Bounds (in unit scale) keep a run from escaping to a step function, a far-off midpoint, or
      // down the endless valley (capacity → ∞, rate → 0) that a straight line is to this model.
      lower: [-50, -100, -500, -5],
      upper: [50, 100, 500, 6],
    });
    if (fit === null) return null;
    const [o, l, k, m] = fit.params as [number, number, number, number];
    return { capacity: l * range, rate: k / series.spanDays, midpoint: m * series.spanDays, offset: low + o * range };
  },
  evaluate: (p, t) =>
    param(p, 'offset') + param(p, 'capacity') * sigmoid(param(p, 'rate') * (t - param(p, 'midpoint'))),
  formula: (p) =>
    `y = ${num(param(p, 'offset'))}${term(param(p, 'capacity'), '')}/(1 + e^(${num(-param(p, 'rate'))}·(t${term(-param(p, 'midpoint'), '')})))${T_NOTE}`,
};

/** Rising or falling by the ends' means; midpoint at the point nearest half-way, or the centre. */
function starts(x: Float64Array, z: Float64Array): number[][] {
  const third = Math.max(1, Math.floor(z.length / 3));
  const mean = (from: number, to: number) => z.slice(from, to).reduce((a, b) => a + b, 0) / (to - from);
  const direction = mean(z.length - third, z.length) >= mean(0, third) ? 1 : -1;
  let nearest = 0;
  for (let i = 1; i < z.length; i++) if (Math.abs(z[i]! - 0.5) < Math.abs(z[nearest]! - 0.5)) nearest = i;
  return [
    [0, 1, direction * 10, x[nearest]!],
    [0, 1, direction * 40, x[nearest]!],
    [0, 1, direction * 10, 0.5],
  ];
}
