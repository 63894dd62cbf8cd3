/**
 * `auto` picks the model that made clearly-shaped data, by AICc, and breaks ties towards the model
 * with fewer parameters.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AICC_TIE, FIT_MODELS, fitRegression } from '../../src/rollup/fits/index.js';
import { CURVES, HOUR, ORIGIN, synthetic } from './fits-series.js';

for (const model of FIT_MODELS) {
  const { curve, noise } = CURVES[model];
  for (const seed of [1, 2, 3]) {
    test(`auto picks ${model} on noisy ${model} data (seed ${seed})`, () => {
      const r = fitRegression(synthetic(curve, { noise, seed }), 'auto');
      assert.equal(r?.model, model);
      assert.equal(r.criterion?.name, 'AICc');
      assert.ok(Number.isFinite(r.criterion.value));
    });
  }
  test(`auto picks ${model} on noiseless ${model} data`, () => {
    assert.equal(fitRegression(synthetic(curve), 'auto')?.model, model);
  });
}

test('auto returns the same fit as the chosen model alone, plus its criterion', () => {
  const points = synthetic(CURVES.logistic.curve, { noise: 1, seed: 5 });
  const { criterion, ...chosen } = fitRegression(points, 'auto')!;
  assert.deepEqual(chosen, fitRegression(points, 'logistic'));
  assert.ok(criterion !== undefined);
});

test('ties go to the simpler model: a constant series is a flat line', () => {
  const points = new Array(48).fill(0).map((_, i) => ({ t: ORIGIN + i * HOUR, y: 5 }));
  const r = fitRegression(points, 'auto');
  assert.equal(r?.model, 'linear');
  assert.ok(Math.abs(r.params['slope']!) < 1e-12);
});

test('a weak trend in strong noise stays linear: no sinusoid is read into the noise', () => {
  assert.equal(AICC_TIE, 2);
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    assert.equal(
      fitRegression(
        synthetic((t) => 100 + 0.01 * t, { noise: 2, seed }),
        'auto',
      )?.model,
      'linear',
      `seed ${seed}`,
    );
  }
});

test('auto skips models with too few points for AICc and still answers', () => {
  // 5 points: AICc needs n ≥ parameters + 3, so only the two-parameter models compete.
  const points = [1, 2, 4, 8, 16].map((y, i) => ({ t: ORIGIN + i * HOUR, y }));
  assert.equal(fitRegression(points, 'auto')?.model, 'exponential');
});
