/**
 * Rollup answers against exact ones, cell by cell. Counts must be equal; every other value is
 * compared by relative error |got − want| ÷ |want| (sums too: float addition in another order
 * differs in the last bits, nothing more).
 */
import type { Cell } from './aggregation.js';

export interface ValueErrors {
  value: string;
  /** Cells compared (present in either answer). */
  cells: number;
  /** Largest relative error (counts: largest absolute difference). */
  max: number;
  /** The cell with that error, for the report. */
  worst: { group: string; bucket: number; got: number | null; want: number | null } | null;
}

const key = (c: Cell) => `${c.group}\u0000${c.bucket}`;

/** Per value of `values`: the errors of `got` (rollups) against `want` (exact). */
export function compareCells(values: readonly string[], got: readonly Cell[], want: readonly Cell[]): ValueErrors[] {
  const g = new Map(got.map((c) => [key(c), c]));
  const w = new Map(want.map((c) => [key(c), c]));
  const keys = new Set([...g.keys(), ...w.keys()]);
  return values.map((value, i) => {
    const out: ValueErrors = { value, cells: 0, max: 0, worst: null };
    for (const k of keys) {
      const a = g.get(k)?.values[i] ?? null;
      const b = w.get(k)?.values[i] ?? null;
      // A bucket neither answer has data in (an empty bucket filled with 0 or null) is no evidence.
      if ((a === null || a === 0) && b === null) continue;
      out.cells++;
      const err = errorOf(value, a, b);
      if (out.worst === null || err > out.max) {
        const c = g.get(k) ?? w.get(k)!;
        out.max = err;
        out.worst = { group: c.group, bucket: c.bucket, got: a, want: b };
      }
    }
    return out;
  });
}

function errorOf(value: string, got: number | null, want: number | null): number {
  if (value === 'count') return Math.abs((got ?? 0) - (want ?? 0));
  if (got === null || want === null) return got === want ? 0 : 1;
  if (want === 0) return got === 0 ? 0 : 1;
  return Math.abs(got - want) / Math.abs(want);
}
