import { iso } from '../clock.js';
import type { MetricRecord } from './metric-records.js';
import type { MetricStore } from './metric-store.js';
import { OTHER_SERIES, TOTAL_SERIES, type MetricPartials, type SeenSeries } from './rollup-types.js';

/**
 * Series limits (docs/metrics.md, "Series limits"): how many series a metric, and all metrics of a
 * project together, may register. Past either, a new series is not registered and its records are
 * counted under the stored series `__other__` (OTHER_SERIES), like Prometheus' `sample_limit` but
 * folding rather than refusing: memory per metric stays bounded and the totals stay exact.
 */
export interface SeriesLimits {
  /** A new metric's `series_limit` when its body sets none (`SLUICE_MAX_SERIES_PER_METRIC`). */
  perMetric: number;
  /** Series registered by every metric of a project together (`SLUICE_MAX_SERIES_PER_PROJECT`). */
  perProject: number;
}

/** The documented bounds: `series_limit` is 1..MAX_SERIES_LIMIT; the defaults when the env sets none. */
export const MAX_SERIES_LIMIT = 100_000;
export const DEFAULT_SERIES_LIMITS: SeriesLimits = { perMetric: 10_000, perProject: 200_000 };

/** The env's limits, each clamped to what the API allows (`perMetric` to 1..MAX_SERIES_LIMIT, `perProject` ≥ 1). */
export function seriesLimitsOf(perMetric: number | undefined, perProject: number | undefined): SeriesLimits {
  const metric =
    perMetric === undefined || perMetric <= 0 ? DEFAULT_SERIES_LIMITS.perMetric : Math.min(perMetric, MAX_SERIES_LIMIT);
  const project = perProject === undefined || perProject <= 0 ? DEFAULT_SERIES_LIMITS.perProject : perProject;
  return { perMetric: metric, perProject: project };
}

/** A metric's limit: its own `series_limit`, else (a metric stored before limits existed) the default. */
export function seriesLimitOf(m: Pick<MetricRecord, 'series_limit'>, limits: SeriesLimits): number {
  return m.series_limit ?? limits.perMetric;
}

/**
 * A metric's registered series count: kept on the record by every registration; a record from
 * before counts were kept is counted once from its registry.
 */
export function seriesCountOf(store: MetricStore, m: MetricRecord): number {
  return m.series_count ?? store.countSeries(m.id);
}

/**
 * The series budget of one write transaction (a batch's commit, a backfilled file's registration):
 * the project's registered total is read once, then kept by the registrations of the transaction.
 */
export class SeriesBudget {
  private readonly projects = new Map<string, number>();

  constructor(
    private readonly store: MetricStore,
    readonly limits: SeriesLimits,
  ) {}

  /** Series registered by every metric of the project now (inside the transaction). */
  projectCount(projectId: string): number {
    let n = this.projects.get(projectId);
    if (n === undefined) {
      n = 0;
      for (const m of this.store.list(projectId)) n += seriesCountOf(this.store, m);
      this.projects.set(projectId, n);
    }
    return n;
  }

  /** Count `added` new series of the project (after the metric's registrations). */
  add(projectId: string, added: number): void {
    this.projects.set(projectId, this.projectCount(projectId) + added);
  }
}

/**
 * The partials with the series at `folded` (indexes into `partials.series`) counted under
 * OTHER_SERIES: every folded series' rows name one `__other__` entry (rows of the same minute stay
 * separate rows; the compactor and reads merge them as they merge any batch's). Exact: a folded
 * record is counted once, in `__other__`, and TOTAL_SERIES is unchanged.
 */
export function foldPartials(partials: MetricPartials, folded: ReadonlySet<number>): MetricPartials {
  if (folded.size === 0) return partials;
  const series: SeenSeries[] = partials.series.slice();
  const other = series.push({ hash: OTHER_SERIES, dimensions: {}, display: null, last: null, lastAt: null }) - 1;
  return {
    ...partials,
    series,
    partials: partials.partials.map((p) => (folded.has(p.series) ? { ...p, series: other } : p)),
  };
}

/** Whether a seen series is one the registry keeps (not the total, not the folded tail). */
export function isRegistrable(s: Pick<SeenSeries, 'hash'>): boolean {
  return s.hash !== TOTAL_SERIES && s.hash !== OTHER_SERIES;
}

/** The metric's fields once `added` series were registered and some were `folded` (null: unchanged). */
export function countedFields(
  m: MetricRecord,
  count: number,
  added: number,
  folded: number,
  now: number,
): Pick<MetricRecord, 'series_count' | 'series_limit_reached_at'> | null {
  const reachedAt = m.series_limit_reached_at ?? null;
  if (added === 0 && m.series_count === count && (folded === 0 || reachedAt !== null)) return null;
  return { series_count: count + added, series_limit_reached_at: folded > 0 ? (reachedAt ?? iso(now)) : reachedAt };
}
