/** 1/(1 + e^(−u)) without overflow for large |u| (e^(−u) is never taken of a large positive −u). */
export function sigmoid(u: number): number {
  if (u >= 0) return 1 / (1 + Math.exp(-u));
  const e = Math.exp(u);
  return e / (1 + e);
}
