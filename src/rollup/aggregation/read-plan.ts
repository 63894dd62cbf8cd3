import type { ChartValue } from '../metric-records.js';
import { TOTAL_SERIES } from '../rollup-types.js';
import { PERCENTILE_VALUES, type NullHandling } from './chart-values.js';
import type { SeriesSelection } from './series-selection.js';
import type { CoverageMode } from './series-records.js';
import { coalesce, isSingleRow, tileBucket, type ReadSpan } from './tiling.js';

/**
 * How `__other__` is made. `subtract`: the total pseudo-series minus the kept series (count, sum,
 * average, min, max, percentiles and the running totals: cost independent of the tail's size).
 * `merge`: the tail's rows merged (`last` and `count_unique`, which cannot be subtracted; tail-union.ts).
 */
export type OtherMethod = 'none' | 'subtract' | 'merge';

/** The stored reads an answer needs. */
export interface ReadPlan {
  spans: ReadSpan[];
  /** The series to read (RollupReader `series`). */
  series: string[];
  other: OtherMethod;
  /** `merge`: whether the merged tail needs the rows' states (percentiles, distinct counts). */
  tailSketches: boolean;
}

/** The last boundary the answer may reach: strict answers stop at the last final bucket. */
export function answerEnd(
  boundaries: readonly number[],
  coverage: CoverageMode,
  completeThrough: number | null,
): number {
  const end = boundaries[boundaries.length - 1]!;
  if (coverage === 'observed') return end;
  if (completeThrough === null) return boundaries[0]!;
  let last = boundaries[0]!;
  for (const b of boundaries) if (b <= completeThrough) last = b;
  return last;
}

/**
 * The reads that find which series have data in the answered window (for ranking, `__other__` and
 * `series_total`): the window as a whole in the coarsest tiers, figures only.
 */
export function scanSpans(
  boundaries: readonly number[],
  coverage: CoverageMode,
  completeThrough: number | null,
): ReadSpan[] {
  const end = answerEnd(boundaries, coverage, completeThrough);
  return coalesce(tileBucket(boundaries[0]!, end, completeThrough).map((t) => ({ ...t, sketches: false })));
}

export interface ReadPlanInput {
  boundaries: readonly number[];
  completeThrough: number | null;
  coverage: CoverageMode;
  selection: SeriesSelection;
  values: readonly ChartValue[];
  nullHandling: NullHandling;
}

/**
 * Tiles every answered bucket with stored rows and decides, per bucket, whether sketches are
 * decoded: only when a percentile or distinct count must be merged from several rows — or for
 * `count_as_zero` percentiles (zeros join the sketch) and an `__other__` that needs them.
 */
export function planReads(input: ReadPlanInput): ReadPlan {
  const { boundaries, completeThrough, selection, values } = input;
  const has = (set: ReadonlySet<ChartValue>): boolean => values.some((v) => set.has(v));
  const percentiles = has(PERCENTILE_VALUES);
  const other: OtherMethod = !selection.folds
    ? 'none'
    : values.includes('last') || values.includes('count_unique')
      ? 'merge'
      : 'subtract';
  const mergedNeedsSketch = percentiles || values.includes('count_unique');
  // A merged tail is read on its own (tail-union.ts): the kept series need no states for it.
  const alwaysSketch =
    (percentiles && input.nullHandling === 'count_as_zero') ||
    (other === 'subtract' && (percentiles || values.includes('min') || values.includes('max')));
  const end = answerEnd(boundaries, input.coverage, completeThrough);
  const spans: ReadSpan[] = [];
  for (let k = 0; k + 1 < boundaries.length && boundaries[k + 1]! <= end; k++) {
    const tiles = tileBucket(boundaries[k]!, boundaries[k + 1]!, completeThrough);
    const sketches = alwaysSketch || (mergedNeedsSketch && !isSingleRow(tiles));
    for (const t of tiles) {
      // Joined to the previous span when adjacent (a by-minute day is then one span, not 1,440 for coalesce).
      const prev = spans[spans.length - 1];
      if (prev !== undefined && prev.tier === t.tier && prev.sketches === sketches && prev.to === t.from)
        prev.to = t.to;
      else spans.push({ tier: t.tier, from: t.from, to: t.to, sketches });
    }
  }
  const kept = selection.kept.map((s) => s.hash);
  return {
    spans: coalesce(spans),
    // With a tail the total is read too: subtracted from, or versioning the cached merged tail.
    series: other === 'none' ? kept : [...kept, TOTAL_SERIES],
    other,
    tailSketches: other === 'merge' && mergedNeedsSketch,
  };
}
