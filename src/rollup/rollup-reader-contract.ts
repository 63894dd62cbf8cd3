import type { SealedCells } from './aggregation/sealed-cells.js';
import type { ColumnFigure, StoredBucket, StoredColumns, Tier } from './rollup-types.js';

/**
 * The read side of the rollup store as the aggregation sees it (its own module: it names the
 * sealed-cell cache of the aggregation, which itself reads rollup-types).
 */
export interface RollupReadQuery {
  metricId: string;
  revision: number;
  tier: Tier;
  from: number;
  to: number;
  series: readonly string[] | null;
  sketches: boolean;
  /** The figures wanted (default every one): the others read as null (NaN in columns), neither fetched nor converted. */
  figures?: ReadonlySet<ColumnFigure>;
  /**
   * An answer that may be partial (`coverage_mode=observed`): when more than `rows` partials wait in
   * the read's range (a compaction backlog), only those of minutes from `keepFrom` on are merged,
   * and the columns say how many were left out (`StoredColumns.leftOut`). Absent: every partial is
   * merged (exact).
   */
  partialBudget?: { rows: number; keepFrom: number };
}

/** The read side of the rollup store. */
export interface RollupReader {
  /**
   * Rows of `tier` for one metric revision with `from <= start < to`, ordered by series then start.
   * `series`: only these hashes (TOTAL_SERIES included when listed); null: every series except
   * TOTAL_SERIES. `sketches`: decode the states (needed to merge percentiles and distinct counts).
   */
  read(q: RollupReadQuery): Promise<StoredBucket[]>;
  /** `read` column-wise, rows in the same order (stored-columns.ts adapts a reader without it). */
  readColumns?(q: RollupReadQuery): Promise<StoredColumns>;
  /**
   * The series (TOTAL_SERIES among them when it has data) with records in rows of these spans
   * (`from <= start < to` in each span's tier) or in partials not folded yet within them: which
   * series an answer could show, without reading their rows.
   */
  seriesWithData(q: {
    metricId: string;
    revision: number;
    spans: ReadonlyArray<{ tier: Tier; from: number; to: number }>;
  }): Promise<string[]>;
  /**
   * Everything of this metric before this time (epoch ms, a minute boundary) is final in every
   * tier; later buckets are provisional. null: no statement can be made (nothing stored yet).
   */
  completeThrough(metricId: string): number | null;
  /** Sealed buckets' answered cells kept between answers (absent: every answer reads everything). */
  readonly sealed?: SealedCells;
}
