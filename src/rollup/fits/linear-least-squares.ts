/** Ordinary least squares over a few basis functions, solved by SVD (ml-matrix). */
import { Matrix, SingularValueDecomposition } from 'ml-matrix';

/**
 * Coefficients β minimising Σ (y_i − Σ_j β_j·basis_j(x_i))²; null when the design is rank-deficient
 * (e.g. fewer distinct x than basis functions) or the answer is not finite. SVD rather than the
 * normal equations: it sees rank deficiency instead of returning huge, meaningless coefficients.
 */
export function leastSquares(
  x: Float64Array,
  y: Float64Array,
  basis: readonly ((x: number) => number)[],
): number[] | null {
  if (x.length < basis.length) return null;
  const design = new Matrix(x.length, basis.length);
  for (let i = 0; i < x.length; i++) {
    for (let j = 0; j < basis.length; j++) design.set(i, j, basis[j]!(x[i]!));
  }
  const svd = new SingularValueDecomposition(design, { autoTranspose: true });
  if (svd.rank < basis.length) return null;
  const beta = svd.solve(Matrix.columnVector(Array.from(y))).getColumn(0);
  return beta.every(Number.isFinite) ? beta : null;
}
