/** Fits one model, or every model and picks one by AICc (`auto`), and evaluates a fitted regression. */
import { aicc, goodness } from './goodness.js';
import { MODELS, modelOf } from './models.js';
import { DAY_MS, toSeries } from './series.js';
import { FIT_MODELS, type FitModel, type FitPoint, type ModelFitter, type Regression, type Series } from './types.js';

/** `auto` prefers a model with fewer parameters unless a richer one's AICc is lower by more than this. */
export const AICC_TIE = 2;

/**
 * The least-squares fit of `model` to the points (non-finite points are ignored), or with `auto` the
 * model chosen by AICc. Null when it cannot be fitted: too few points, fewer than two distinct times,
 * y ≤ 0 for exponential, a flat series for logistic or sinusoidal, no convergence, or any
 * non-finite parameter or statistic.
 */
export function fitRegression(points: readonly FitPoint[], model: FitModel | 'auto'): Regression | null {
  const series = toSeries(points);
  if (series === null) return null;
  if (model === 'auto') return fitAuto(series);
  const fitter = modelOf(model);
  return fitter === undefined ? null : (fitWith(series, fitter)?.regression ?? null);
}

/** The regression's value at epoch ms `t`. NaN only where the model is undefined (logarithmic before its pole). */
export function predict(r: Regression, t: number): number {
  const fitter = modelOf(r.model);
  if (fitter === undefined) return Number.NaN;
  return fitter.evaluate(r.params, (t - Date.parse(r.origin_at)) / DAY_MS);
}

interface Fitted {
  regression: Regression;
  sse: number;
}

function fitWith(series: Series, fitter: ModelFitter): Fitted | null {
  if (series.y.length < fitter.minPoints) return null;
  const params = fitter.fit(series);
  if (params === null || !Object.values(params).every(Number.isFinite)) return null;
  const fit = goodness(series, (days) => fitter.evaluate(params, days));
  if (fit === null) return null;
  const regression: Regression = {
    model: fitter.model,
    params,
    origin_at: new Date(series.originMs).toISOString(),
    t_unit: 'day',
    formula: fitter.formula(params),
    r2: fit.r2,
    rmse: fit.rmse,
    points: series.y.length,
  };
  return Number.isFinite(fit.r2) && Number.isFinite(fit.rmse) ? { regression, sse: fit.sse } : null;
}

/**
 * Every model that fits, has an AICc (n ≥ parameters + 3) and passes its own significance check (a
 * sinusoid must stand out of the noise) competes. Among those within AICC_TIE of the lowest AICc,
 * the one with the fewest parameters wins, then the first in FIT_MODELS order (linear first): a
 * difference under 2 is no evidence for the other model (Burnham & Anderson).
 */
function fitAuto(series: Series): Regression | null {
  const scored: { regression: Regression; score: number; size: number; order: number }[] = [];
  FIT_MODELS.forEach((name, order) => {
    const fitter = MODELS[name];
    const fitted = fitWith(series, fitter);
    if (fitted === null || fitter.significant?.(series, fitted.sse) === false) return;
    const score = aicc(series, fitted.sse, fitter.fitted.length);
    if (score !== null && Number.isFinite(score)) {
      scored.push({ regression: fitted.regression, score, size: fitter.fitted.length, order });
    }
  });
  if (scored.length === 0) return null;
  const lowest = Math.min(...scored.map((s) => s.score));
  const [winner] = scored
    .filter((s) => s.score <= lowest + AICC_TIE)
    .sort((a, b) => a.size - b.size || a.order - b.order);
  return { ...winner!.regression, criterion: { name: 'AICc', value: winner!.score } };
}
