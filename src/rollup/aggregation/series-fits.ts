import { fitRegression, forecastAt, type Forecast, type Regression } from '../fits/index.js';
import type { FORECAST_MODELS } from '../metric-records.js';

export type FitModel = (typeof FORECAST_MODELS)[number];

/** What trend and forecast an answer carries (resolved from the query and the metric's settings). */
export interface FitRequest {
  /** `none`, or the model fitted to each series (`auto`: the best fit, fits module). */
  regression: 'none' | FitModel;
  /** Epoch ms to forecast at, or null for no forecast. */
  forecastAt: number | null;
  /** The model a forecast uses when no regression is asked for (the metric's ui_chart_forecast_model). */
  forecastModel: FitModel;
}

/** Spec: Aggregation series `regression` and `forecast`, both null when not asked for or not fittable. */
export interface SeriesFits {
  regression: Regression | null;
  forecast: Forecast | null;
}

/** Fits one series' points (its first value per answered bucket). */
export function fitSeries(points: Array<{ t: number; y: number }>, req: FitRequest): SeriesFits {
  const fit = (model: FitModel): Regression | null => (points.length === 0 ? null : fitRegression(points, model));
  const regression = req.regression === 'none' ? null : fit(req.regression);
  if (req.forecastAt === null) return { regression, forecast: null };
  const model = req.regression === 'none' ? fit(req.forecastModel) : regression;
  return { regression, forecast: model ? forecastOrNull(points, model, req.forecastAt) : null };
}

/** A model undefined at the time asked (a logarithm before its origin) has no forecast there: null, not a 500. */
function forecastOrNull(points: Array<{ t: number; y: number }>, model: Regression, at: number): Forecast | null {
  try {
    return forecastAt(points, model, at);
  } catch (err) {
    if (err instanceof RangeError) return null;
    throw err;
  }
}
