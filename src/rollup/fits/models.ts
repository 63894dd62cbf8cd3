/** Every regression model by name. */
import { exponentialModel } from './exponential-model.js';
import { linearModel } from './linear-model.js';
import { logarithmicModel } from './logarithmic-model.js';
import { logisticModel } from './logistic-model.js';
import { sinusoidalModel } from './sinusoidal-model.js';
import type { FitModel, ModelFitter } from './types.js';

export const MODELS: Readonly<Record<FitModel, ModelFitter>> = {
  linear: linearModel,
  exponential: exponentialModel,
  logarithmic: logarithmicModel,
  logistic: logisticModel,
  sinusoidal: sinusoidalModel,
};

/** The model of a name, or undefined for anything else (names may come from stored settings). */
export function modelOf(name: string): ModelFitter | undefined {
  return Object.hasOwn(MODELS, name) ? MODELS[name as FitModel] : undefined;
}
