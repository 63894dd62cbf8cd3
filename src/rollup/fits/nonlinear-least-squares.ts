/**
 * Levenberg–Marquardt nonlinear least squares (Marquardt's diagonal scaling, Nielsen's damping
 * update, Madsen–Nielsen–Tingleff stopping rules). Hand-written rather than ml-levenberg-marquardt
 * 5.1: that one stops only when the absolute squared error falls below a tolerance (its issue #41),
 * so on noisy data it always runs every iteration (~0.5 ms each at 1,440 points), and it takes steps
 * that raise the error. This one rejects those, stops when the steps, their gain or the gradient vanish, and costs
 * O(n·p²) per iteration with no allocation per point.
 */
import { CholeskyDecomposition, Matrix } from 'ml-matrix';

export interface CurveProblem {
  readonly x: Float64Array;
  readonly y: Float64Array;
  readonly model: (params: readonly number[], x: number) => number;
  /** Writes ∂model/∂params[j] at x into out[j]. */
  readonly gradient: (params: readonly number[], x: number, out: Float64Array) => void;
  readonly starts: readonly (readonly number[])[];
  /** Box bounds: a step is clamped into them. */
  readonly lower?: readonly number[];
  readonly upper?: readonly number[];
}

export interface CurveFit {
  params: number[];
  sse: number;
}

/** Good starts converge in 5–20; the cap bounds the cost of a model that does not suit the data. */
const MAX_ITERATIONS = 60;
const STEP_TOLERANCE = 1e-10;
const GRADIENT_TOLERANCE = 1e-12;
/** An accepted step that lowers the error by less than this fraction ends the descent (MINPACK's ftol). */
const ERROR_TOLERANCE = 1e-10;

/** Best least-squares parameters over all starts, or null when no start gave finite ones. */
export function fitCurve(problem: CurveProblem): CurveFit | null {
  let best: CurveFit | null = null;
  for (const start of problem.starts) {
    const fit = descend(problem, clamp(problem, [...start]));
    if (fit !== null && (best === null || fit.sse < best.sse)) best = fit;
  }
  return best;
}

export function squaredError(problem: Pick<CurveProblem, 'x' | 'y' | 'model'>, params: readonly number[]): number {
  let sse = 0;
  for (let i = 0; i < problem.x.length; i++) sse += (problem.y[i]! - problem.model(params, problem.x[i]!)) ** 2;
  return sse;
}

function descend(problem: CurveProblem, start: number[]): CurveFit | null {
  let params = start;
  let sse = squaredError(problem, params);
  if (!Number.isFinite(sse)) return null;
  // Relative to diag(JᵀJ) (Marquardt), so one start value suits every problem's scale.
  let damping = 1e-3;
  let growth = 2;
  for (let iteration = 0; iteration < MAX_ITERATIONS && sse > 0; iteration++) {
    const { normal, gradient } = normalEquations(problem, params);
    if (!gradient.every(Number.isFinite)) return null;
    const scale = normal.diag().map((d) => (d > 0 ? d : 1));
    if (Math.max(...gradient.map(Math.abs)) <= GRADIENT_TOLERANCE * Math.max(sse, 1e-300)) break;
    // Retry with more damping until a step lowers the error (or the damping is hopeless).
    for (;;) {
      const step = solveDamped(normal, scale, damping, gradient);
      if (step === null) return { params, sse };
      const candidate = clamp(
        problem,
        params.map((v, j) => v + step[j]!),
      );
      const candidateSse = squaredError(problem, candidate);
      const predicted = step.reduce((sum, s, j) => sum + s * (damping * scale[j]! * s + gradient[j]!), 0);
      const gain = (sse - candidateSse) / predicted;
      if (Number.isFinite(candidateSse) && candidateSse < sse && gain > 0) {
        const moved = Math.hypot(...candidate.map((v, j) => v - params[j]!));
        const settled = sse - candidateSse <= ERROR_TOLERANCE * sse;
        params = candidate;
        sse = candidateSse;
        damping *= Math.max(1 / 3, 1 - (2 * gain - 1) ** 3);
        growth = 2;
        if (settled || moved <= STEP_TOLERANCE * (Math.hypot(...params) + STEP_TOLERANCE)) return { params, sse };
        break;
      }
      damping *= growth;
      growth *= 2;
      if (damping > 1e16) return { params, sse };
    }
  }
  return { params, sse };
}

/** JᵀJ and Jᵀr, J the model's gradient at each x and r the residuals. */
function normalEquations(problem: CurveProblem, params: readonly number[]): { normal: Matrix; gradient: number[] } {
  const p = params.length;
  const row = new Float64Array(p);
  const sums = new Float64Array(p * p);
  const gradient = new Array<number>(p).fill(0);
  for (let i = 0; i < problem.x.length; i++) {
    const x = problem.x[i]!;
    const residual = problem.y[i]! - problem.model(params, x);
    problem.gradient(params, x, row);
    for (let j = 0; j < p; j++) {
      gradient[j]! += row[j]! * residual;
      for (let k = 0; k <= j; k++) sums[j * p + k]! += row[j]! * row[k]!;
    }
  }
  const normal = new Matrix(p, p);
  for (let j = 0; j < p; j++) {
    for (let k = 0; k <= j; k++) {
      normal.set(j, k, sums[j * p + k]!);
      normal.set(k, j, sums[j * p + k]!);
    }
  }
  return { normal, gradient };
}

/** (JᵀJ + λ·diag(JᵀJ))·δ = Jᵀr, or null when it has no finite solution. */
function solveDamped(normal: Matrix, scale: number[], damping: number, gradient: number[]): number[] | null {
  const damped = normal.clone();
  for (let j = 0; j < scale.length; j++) damped.set(j, j, damped.get(j, j) + damping * scale[j]!);
  const cholesky = new CholeskyDecomposition(damped);
  if (!cholesky.isPositiveDefinite()) return null;
  const step = cholesky.solve(Matrix.columnVector(gradient)).getColumn(0);
  return step.every(Number.isFinite) ? step : null;
}

function clamp(problem: CurveProblem, params: number[]): number[] {
  return params.map((v, j) => Math.min(problem.upper?.[j] ?? Infinity, Math.max(problem.lower?.[j] ?? -Infinity, v)));
}
