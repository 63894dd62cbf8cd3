/** Seeded synthetic series for the fits tests: known curves, hourly points, optional noise and gaps. */
import type { FitPoint } from '../../src/rollup/fits/index.js';
import { mulberry32, normal } from '../helpers/seeded-random.js';

export const ORIGIN = Date.UTC(2025, 0, 1);
export const HOUR = 3_600_000;
export const DAY = 86_400_000;

export interface SeriesOptions {
  /** Points, one per hour from ORIGIN. */
  n?: number;
  /** Standard deviation of additive Gaussian noise. */
  noise?: number;
  /** Fraction of points dropped at random (missing buckets); never the first, which fixes the origin. */
  gaps?: number;
  seed?: number;
}

/** y = curve(t in days since ORIGIN) at each kept hour, plus noise. */
export function synthetic(curve: (days: number) => number, options: SeriesOptions = {}): FitPoint[] {
  const { n = 720, noise = 0, gaps = 0, seed = 1 } = options;
  const random = mulberry32(seed);
  const points: FitPoint[] = [];
  for (let i = 0; i < n; i++) {
    const drop = random() < gaps && i > 0;
    const y = curve(i / 24) + noise * normal(random);
    if (!drop) points.push({ t: ORIGIN + i * HOUR, y });
  }
  return points;
}

/** The generating curves of the tests, with their parameters as the fits name them. */
export const CURVES = {
  linear: { params: { intercept: 3, slope: 0.5 }, curve: (t: number) => 3 + 0.5 * t, noise: 0.3 },
  exponential: { params: { scale: 2, rate: 0.1 }, curve: (t: number) => 2 * Math.exp(0.1 * t), noise: 0.3 },
  // shift = the median spacing of the points (one hour), as the model fixes it.
  logarithmic: {
    params: { intercept: 5, slope: 3, shift: 1 / 24 },
    curve: (t: number) => 5 + 3 * Math.log(t + 1 / 24),
    noise: 0.1,
  },
  logistic: {
    params: { capacity: 100, rate: 0.8, midpoint: 15, offset: 10 },
    curve: (t: number) => 10 + 100 / (1 + Math.exp(-0.8 * (t - 15))),
    noise: 1,
  },
  sinusoidal: {
    params: { offset: 50, amplitude: 10, omega: (2 * Math.PI) / 7, phase: 0.7 },
    curve: (t: number) => 50 + 10 * Math.sin(((2 * Math.PI) / 7) * t + 0.7),
    noise: 1,
  },
} as const;
