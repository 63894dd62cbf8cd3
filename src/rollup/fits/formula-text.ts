/** Number formatting shared by the models' human-readable formulas. */

/** Four significant digits, trailing zeros dropped: 3.2, 0.5103, 1.235e+21. */
export function num(value: number): string {
  return String(Number(value.toPrecision(4)));
}

/** A following term with its sign as an operator: " + 0.51·t", " − 0.51·t". */
export function term(coefficient: number, suffix: string): string {
  return `${coefficient < 0 ? ' − ' : ' + '}${num(Math.abs(coefficient))}${suffix}`;
}

export const T_NOTE = ' (t in days since origin_at)';
