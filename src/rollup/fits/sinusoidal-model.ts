/**
 * y = offset + amplitude·sin(omega·t + phase): ω from the periodogram's peak, offset and amplitude
 * and phase by linear least squares at that ω (a·sin + b·cos), then all four refined together by
 * nonlinear least squares in unit scale (t/span, y standardised).
 */
import { num, term, T_NOTE } from './formula-text.js';
import { leastSquares } from './linear-least-squares.js';
import { fitCurve } from './nonlinear-least-squares.js';
import { dominantAngularFrequency } from './periodogram.js';
import { meanAndSpread, param } from './series.js';
import type { ModelFitter, Params, Series } from './types.js';

export const sinusoidalModel: ModelFitter = {
  model: 'sinusoidal',
  fitted: ['offset', 'amplitude', 'omega', 'phase'],
  // Several samples per cycle are needed before a frequency means anything.
  minPoints: 8,
  fit(series) {
    const { mean, spread } = meanAndSpread(series.y);
    if (!(spread > 0)) return null;
    const x = series.days.map((t) => t / series.spanDays);
    const z = series.y.map((v) => (v - mean) / spread);
    const omega0 = dominantAngularFrequency(x, z, 1, series.stepDays / series.spanDays);
    if (omega0 === null) return null;
    const linear = leastSquares(x, z, [() => 1, (t) => Math.sin(omega0 * t), (t) => Math.cos(omega0 * t)]);
    if (linear === null) return null;
    const fit = fitCurve({
      x,
      y: z,
      model: ([c, a, b, w], x) => c! + a! * Math.sin(w! * x) + b! * Math.cos(w! * x),
      gradient: ([, a, b, w], x, out) => {
        const sin = Math.sin(w! * x);
        const cos = Math.cos(w! * x);
        out[0] = 1;
        out[1] = sin;
        out[2] = cos;
        out[3] = x * (a! * cos - b! * sin);
      },
      starts: [[...linear, omega0]],
    });
    if (fit === null) return null;
    const [c, a, b, w] = fit.params as [number, number, number, number];
    return toParams(mean + spread * c, spread * a, spread * b, w / series.spanDays);
  },
  significant: (series, sse) => falseAlarmProbability(series, sse) < FALSE_ALARM_LIMIT,
  evaluate: (p, t) => param(p, 'offset') + param(p, 'amplitude') * Math.sin(param(p, 'omega') * t + param(p, 'phase')),
  formula: (p) =>
    `y = ${num(param(p, 'offset'))}${term(param(p, 'amplitude'), `·sin(${num(param(p, 'omega'))}·t${term(param(p, 'phase'), ')')}`)}` +
    `${T_NOTE}, period ${num((2 * Math.PI) / param(p, 'omega'))} days`,
};

/** `auto` admits a sinusoid only when noise alone would draw one as strong less than 1% of the time. */
const FALSE_ALARM_LIMIT = 0.01;

/**
 * The chance that pure Gaussian noise shows a peak as strong somewhere in the searched band: the
 * best of many trial frequencies always explains some variance, which AICc (one ω parameter) does
 * not charge for. Single-frequency tail (1 − p)^((n−3)/2) for the normalised generalised
 * Lomb–Scargle power p (Zechmeister & Kürster 2009, eq. 24) over M ≈ span/(2·step) independent
 * frequencies (Horne & Baliunas 1986).
 */
function falseAlarmProbability(series: Series, sse: number): number {
  const n = series.y.length;
  const { spread } = meanAndSpread(series.y);
  const power = 1 - sse / (n * spread * spread);
  if (!(power > 0)) return 1;
  const single = Math.exp(((n - 3) / 2) * Math.log1p(-Math.min(power, 1)));
  const frequencies = Math.max(1, series.spanDays / (2 * series.stepDays));
  return -Math.expm1(frequencies * Math.log1p(-single));
}

/**
 * a·sin(ωt) + b·cos(ωt) = A·sin(ωt + φ) with A = √(a² + b²) ≥ 0, φ = atan2(b, a) ∈ (−π, π] and
 * ω > 0 (a negative ω flips the sign of the sine term), so one curve has one set of parameters.
 */
function toParams(offset: number, a: number, b: number, omega: number): Params | null {
  if (omega === 0) return null;
  const sine = omega < 0 ? -a : a;
  return { offset, amplitude: Math.hypot(sine, b), omega: Math.abs(omega), phase: Math.atan2(b, sine) };
}
