/**
 * Each regression model recovers the parameters of the curve that made the data: to float
 * precision without noise, within stated tolerances with seeded noise (and gaps); degenerate input
 * is a null fit, never a throw or a NaN.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FIT_MODELS, fitRegression, predict, type FitModel, type Regression } from '../../src/rollup/fits/index.js';
import { mulberry32, normal } from '../helpers/seeded-random.js';
import { CURVES, DAY, HOUR, ORIGIN, synthetic } from './fits-series.js';

/** Absolute tolerance per parameter with noise (σ as in CURVES, 720 hourly points). */
const NOISY_TOLERANCE: Record<FitModel, Record<string, number>> = {
  linear: { intercept: 0.1, slope: 0.01 },
  exponential: { scale: 0.02, rate: 0.001 },
  logarithmic: { intercept: 0.05, slope: 0.02, shift: 1e-12 },
  logistic: { capacity: 0.5, rate: 0.02, midpoint: 0.05, offset: 0.3 },
  sinusoidal: { offset: 0.1, amplitude: 0.2, omega: 0.003, phase: 0.03 },
};

function assertParams(
  r: Regression | null,
  expected: Readonly<Record<string, number>>,
  tolerance: (name: string) => number,
): Regression {
  assert.ok(r !== null, 'a fit');
  assert.deepEqual(Object.keys(r.params).sort(), Object.keys(expected).sort());
  for (const [name, want] of Object.entries(expected)) {
    const got = r.params[name]!;
    assert.ok(Math.abs(got - want) <= tolerance(name), `${r.model}.${name}: ${got} vs ${want}`);
  }
  return r;
}

for (const model of FIT_MODELS) {
  const { params, curve, noise } = CURVES[model];

  test(`${model}: noiseless data gives its parameters back`, () => {
    const points = synthetic(curve);
    const r = assertParams(
      fitRegression(points, model),
      params,
      (name) => 1e-6 * Math.max(1, Math.abs(params[name as keyof typeof params])),
    );
    assert.equal(r.model, model);
    assert.equal(r.origin_at, new Date(ORIGIN).toISOString());
    assert.equal(r.points, points.length);
    assert.ok(r.r2 > 1 - 1e-9, `r2 ${r.r2}`);
    assert.ok(r.rmse < 1e-6, `rmse ${r.rmse}`);
    assert.equal(r.criterion, undefined);
    for (const p of points.slice(0, 50)) assert.ok(Math.abs(predict(r, p.t) - p.y) < 1e-6);
    assert.match(r.formula, /^y = .*\(t in days since origin_at\)/);
  });

  for (const seed of [1, 2, 3]) {
    test(`${model}: noisy data (σ = ${noise}, seed ${seed}) gives its parameters back within tolerance`, () => {
      const r = assertParams(
        fitRegression(synthetic(curve, { noise, seed }), model),
        params,
        (name) => NOISY_TOLERANCE[model][name]!,
      );
      // The residuals are the noise: rmse ≈ σ.
      assert.ok(Math.abs(r.rmse - noise) < 0.1 * noise, `rmse ${r.rmse}`);
    });
  }
}

test('the fits see through missing buckets (20% of the points dropped) and unsorted input', () => {
  for (const model of FIT_MODELS) {
    const { params, curve, noise } = CURVES[model];
    const points = synthetic(curve, { noise, gaps: 0.2, seed: 7 }).reverse();
    const tolerance = (name: string) => 1.5 * NOISY_TOLERANCE[model][name]!;
    const r = assertParams(fitRegression(points, model), params, tolerance);
    assert.equal(r.origin_at, new Date(ORIGIN).toISOString());
  }
});

test('sinusoidal finds a short period among many cycles and a long one of barely two', () => {
  for (const periodDays of [0.5, 12]) {
    const omega = (2 * Math.PI) / periodDays;
    const r = fitRegression(
      synthetic((t) => 4 - 2 * Math.cos(omega * t), { noise: 0.2, seed: 11 }),
      'sinusoidal',
    );
    assert.ok(r !== null);
    assert.ok(Math.abs(r.params['omega']! - omega) < 0.01 * omega, `omega ${r.params['omega']} vs ${omega}`);
    assert.ok(Math.abs(r.params['amplitude']! - 2) < 0.05);
    assert.ok(r.params['amplitude']! >= 0 && Math.abs(r.params['phase']!) <= Math.PI);
  }
});

test('a falling logistic and a decaying exponential are fitted too', () => {
  const falling = fitRegression(
    synthetic((t) => 5 + 40 / (1 + Math.exp(1.5 * (t - 20)))),
    'logistic',
  );
  assert.ok(falling !== null && falling.r2 > 1 - 1e-9);
  for (let d = 0; d < 30; d += 3) {
    assert.ok(Math.abs(predict(falling, ORIGIN + d * DAY) - (5 + 40 / (1 + Math.exp(1.5 * (d - 20))))) < 1e-6);
  }
  const decay = fitRegression(
    synthetic((t) => 1000 * Math.exp(-0.2 * t)),
    'exponential',
  );
  assert.ok(decay !== null && Math.abs(decay.params['rate']! + 0.2) < 1e-9);
});

test('degenerate input is a null fit, not a throw', () => {
  const at = (i: number) => ORIGIN + i * HOUR;
  const cases: [string, { t: number; y: number }[], FitModel | 'auto'][] = [];
  for (const model of [...FIT_MODELS, 'auto'] as const) {
    cases.push([`${model}: no points`, [], model]);
    cases.push([`${model}: one point`, [{ t: at(0), y: 1 }], model]);
    cases.push([
      `${model}: two points`,
      [
        { t: at(0), y: 1 },
        { t: at(1), y: 2 },
      ],
      model,
    ]);
    cases.push([`${model}: every point at one time`, [1, 2, 3, 4, 5, 6, 7, 8, 9].map((y) => ({ t: at(0), y })), model]);
    cases.push([
      `${model}: non-finite values leave two`,
      [1, NaN, Infinity, 2, -Infinity].map((y, i) => ({ t: at(i), y })),
      model,
    ]);
  }
  cases.push(['exponential: a zero', [1, 2, 0, 4].map((y, i) => ({ t: at(i), y })), 'exponential']);
  cases.push(['exponential: a negative', [1, 2, -3, 4].map((y, i) => ({ t: at(i), y })), 'exponential']);
  cases.push(['logistic: constant', new Array(20).fill(0).map((_, i) => ({ t: at(i), y: 7 })), 'logistic']);
  cases.push(['sinusoidal: constant', new Array(20).fill(0).map((_, i) => ({ t: at(i), y: 7 })), 'sinusoidal']);
  cases.push(['logistic: too few for four parameters', [1, 2, 3, 4].map((y, i) => ({ t: at(i), y })), 'logistic']);
  cases.push(['unknown model', [1, 2, 3, 4].map((y, i) => ({ t: at(i), y })), 'quadratic' as FitModel]);
  for (const [label, points, model] of cases) assert.equal(fitRegression(points, model), null, label);
});

test('a constant series: a flat line with r2 = 1 for the models that can draw one', () => {
  const points = new Array(48).fill(0).map((_, i) => ({ t: ORIGIN + i * HOUR, y: 42 }));
  for (const model of ['linear', 'exponential', 'logarithmic'] as const) {
    const r = fitRegression(points, model);
    assert.ok(r !== null, model);
    assert.equal(r.r2, 1, model);
    assert.ok(Math.abs(predict(r, ORIGIN + 100 * DAY) - 42) < 1e-9, model);
  }
});

test('random series: every fit is null or entirely finite', () => {
  for (let seed = 1; seed <= 40; seed++) {
    const random = mulberry32(seed);
    const n = 3 + Math.floor(random() * 60);
    const magnitude = 10 ** Math.floor(random() * 12 - 3);
    const points = new Array(n).fill(0).map((_, i) => ({
      t: ORIGIN + Math.floor(i * (1 + random() * 3)) * 60_000,
      y: (random() < 0.5 ? Math.abs(normal(random)) : normal(random)) * magnitude,
    }));
    for (const model of [...FIT_MODELS, 'auto'] as const) {
      const r = fitRegression(points, model);
      if (r === null) continue;
      const numbers = [r.r2, r.rmse, r.points, ...Object.values(r.params), ...(r.criterion ? [r.criterion.value] : [])];
      assert.ok(numbers.every(Number.isFinite), `seed ${seed} ${model}: ${JSON.stringify(r)}`);
      assert.ok(!r.formula.includes('NaN') && !r.formula.includes('Infinity'), r.formula);
    }
  }
});
