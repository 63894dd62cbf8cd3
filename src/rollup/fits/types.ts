/** Public shapes of the regression and forecast objects (docs/metrics-fits.md) and the model contract. */

export type FitModel = 'linear' | 'exponential' | 'logarithmic' | 'logistic' | 'sinusoidal';

/** Declaration order is the tie-break order of `auto` among models with as many parameters. */
export const FIT_MODELS: readonly FitModel[] = ['linear', 'exponential', 'logarithmic', 'logistic', 'sinusoidal'];

export interface FitPoint {
  /** Epoch ms (bucket start). */
  t: number;
  y: number;
}

export interface Regression {
  model: FitModel;
  /** Model parameters by name (per model in docs/metrics-fits.md), with t in days since origin_at. */
  params: Record<string, number>;
  /** Time origin used for t (ISO string): the first point's time. */
  origin_at: string;
  /** The unit of t in the formula (always 'day'; optional so that callers may build a Regression without it). */
  t_unit?: 'day';
  /** Human-readable, e.g. "y = 3.2 + 0.51·t (t in days since origin_at)". */
  formula: string;
  /** Coefficient of determination on the points. */
  r2: number;
  rmse: number;
  /** n used (finite points). */
  points: number;
  /** What `auto` compared (AICc), when the model was chosen by `auto`. */
  criterion?: { name: string; value: number };
}

export interface Forecast {
  at: string;
  value: number;
  model: FitModel;
  /** ≈95% prediction band (delta method), when it can be computed. */
  lower?: number;
  upper?: number;
}

/** Model parameters by name; t is in days since the series' origin. */
export type Params = Record<string, number>;

/** A series made ready for fitting: finite points sorted by time, t in days since the first point. */
export interface Series {
  readonly originMs: number;
  readonly days: Float64Array;
  readonly y: Float64Array;
  /** Last day minus first day (> 0). */
  readonly spanDays: number;
  /** Median positive spacing between consecutive points, in days. */
  readonly stepDays: number;
}

/** One regression model: how to fit it, evaluate it and write it down. */
export interface ModelFitter {
  readonly model: FitModel;
  /** Names of the parameters the fit estimates (the delta-method band perturbs these). */
  readonly fitted: readonly string[];
  /** Fewest points for a fit with at least one residual degree of freedom. */
  readonly minPoints: number;
  fit(series: Series): Params | null;
  /** For `auto`: whether a fit with this squared error is evidence for the model at all (absent: always). */
  significant?(series: Series, sse: number): boolean;
  evaluate(params: Params, days: number): number;
  formula(params: Params): string;
}
