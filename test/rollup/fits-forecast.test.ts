/** Forecasts are the regression at the horizon; horizons end quarters and years in UTC. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FIT_MODELS, fitRegression, forecastAt, horizonTime, predict } from '../../src/rollup/fits/index.js';
import { CURVES, DAY, ORIGIN, synthetic } from './fits-series.js';

const iso = (s: string) => Date.parse(s);

test('horizonTime: next N days, quarter and year ends in UTC, across year boundaries', () => {
  const cases: [Parameters<typeof horizonTime>[0], string, string][] = [
    ['next_7_days', '2024-12-28T10:00:00.000Z', '2025-01-04T10:00:00.000Z'],
    ['next_30_days', '2024-12-15T00:00:00.000Z', '2025-01-14T00:00:00.000Z'],
    ['next_90_days', '2025-11-01T06:30:00.000Z', '2026-01-30T06:30:00.000Z'],
    ['end_of_quarter', '2024-11-15T12:00:00.000Z', '2024-12-31T23:59:59.999Z'],
    ['end_of_quarter', '2024-12-31T23:59:59.999Z', '2024-12-31T23:59:59.999Z'],
    ['end_of_quarter', '2025-01-01T00:00:00.000Z', '2025-03-31T23:59:59.999Z'],
    ['end_of_quarter', '2025-04-01T00:00:00.000Z', '2025-06-30T23:59:59.999Z'],
    ['end_of_quarter', '2025-09-30T23:00:00.000Z', '2025-09-30T23:59:59.999Z'],
    ['end_of_quarter', '2025-10-01T00:00:00.000Z', '2025-12-31T23:59:59.999Z'],
    ['end_of_year', '2024-12-31T23:59:59.999Z', '2024-12-31T23:59:59.999Z'],
    ['end_of_year', '2025-01-01T00:00:00.000Z', '2025-12-31T23:59:59.999Z'],
    ['end_of_year', '2025-06-15T08:00:00.000Z', '2025-12-31T23:59:59.999Z'],
    ['next_year', '2025-06-15T08:00:00.000Z', '2026-06-15T08:00:00.000Z'],
    ['next_year', '2024-12-31T23:30:00.000Z', '2025-12-31T23:30:00.000Z'],
    ['next_year', '2024-02-29T12:00:00.000Z', '2025-02-28T12:00:00.000Z'],
  ];
  for (const [horizon, now, expected] of cases) {
    assert.equal(new Date(horizonTime(horizon, iso(now))).toISOString(), expected, `${horizon} from ${now}`);
  }
});

test('a forecast is the regression at the horizon, with a band around it', () => {
  const now = ORIGIN + 30 * DAY;
  for (const model of FIT_MODELS) {
    const { curve, noise } = CURVES[model];
    const points = synthetic(curve, { noise, seed: 3 });
    const r = fitRegression(points, model)!;
    for (const horizon of ['next_7_days', 'end_of_quarter'] as const) {
      const at = horizonTime(horizon, now);
      const f = forecastAt(points, r, at);
      assert.equal(f.value, predict(r, at), `${model} ${horizon}`);
      assert.equal(f.at, new Date(at).toISOString());
      assert.equal(f.model, model);
      assert.ok(f.lower !== undefined && f.upper !== undefined, `${model} ${horizon}: a band`);
      assert.ok(f.lower < f.value && f.value < f.upper, `${model} ${horizon}: ${JSON.stringify(f)}`);
      // No narrower than the noise itself: a band for one new observation.
      assert.ok(f.upper - f.lower > 3.5 * noise, `${model} ${horizon}: ${JSON.stringify(f)}`);
    }
  }
});

test('the band is the linear prediction interval where that has a closed form', () => {
  const { curve, noise } = CURVES.linear;
  const points = synthetic(curve, { noise, seed: 4 });
  const r = fitRegression(points, 'linear')!;
  const at = ORIGIN + 60 * DAY;
  const f = forecastAt(points, r, at);
  const days = points.map((p) => (p.t - ORIGIN) / DAY);
  const mean = days.reduce((a, b) => a + b, 0) / days.length;
  const sxx = days.reduce((a, d) => a + (d - mean) ** 2, 0);
  const s2 = (r.rmse ** 2 * points.length) / (points.length - 2);
  const half = 1.959964 * Math.sqrt(s2 * (1 + 1 / points.length + (60 - mean) ** 2 / sxx));
  assert.ok(Math.abs(f.upper! - f.value - half) < 1e-6 * half, `${f.upper! - f.value} vs ${half}`);
});

test('a forecast beyond float range is held at Number.MAX_VALUE, without a band', () => {
  const points = synthetic((t) => Math.exp(2 * t), { n: 240 });
  const r = fitRegression(points, 'exponential')!;
  const f = forecastAt(points, r, horizonTime('next_year', ORIGIN + 10 * DAY));
  assert.equal(f.value, Number.MAX_VALUE);
  assert.equal(f.lower, undefined);
  assert.equal(f.upper, undefined);
  assert.equal(JSON.parse(JSON.stringify(f)).value, Number.MAX_VALUE);
});

test('a noiseless fit forecasts the generating curve, with a band of zero width', () => {
  const points = synthetic(CURVES.logistic.curve);
  const r = fitRegression(points, 'logistic')!;
  const f = forecastAt(points, r, ORIGIN + 40 * DAY);
  assert.ok(Math.abs(f.value - CURVES.logistic.curve(40)) < 1e-6);
  assert.ok(f.upper! - f.lower! < 1e-6);
});
