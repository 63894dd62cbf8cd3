/**
 * Regression fits over a metric's time series and forecasts from them (spec: Aggregation series
 * `regression` and `forecast`, Metric `ui_chart_forecast_model` and `ui_chart_forecast_horizon`).
 * Pure: no I/O, no clock. The objects' structure, each model's formula and parameters and the `auto`
 * criterion are documented in docs/metrics-fits.md.
 */
export type { FitModel, FitPoint, Forecast, Regression } from './types.js';
export { FIT_MODELS } from './types.js';
export { AICC_TIE, fitRegression, predict } from './fit-regression.js';
export { forecastAt } from './forecast.js';
export { horizonTime, type ForecastHorizon } from './horizon.js';
