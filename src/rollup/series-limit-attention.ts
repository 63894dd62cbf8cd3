import type { MetricCatalog } from './metric-catalog.js';
import type { MetricRecord } from './metric-records.js';
import { seriesCountOf, seriesLimitOf } from './series-limit.js';

/** A live metric folding new series into `__other__` now, and which limit it is at. */
export interface MetricAtSeriesLimit {
  metric: MetricRecord;
  /** Series registered. */
  count: number;
  /** `series_limit`: its own limit; `project_series_limit`: the project's. */
  limit: 'series_limit' | 'project_series_limit';
}

/**
 * The live metrics of a project that folded in their current revision (`series_limit_reached_at`)
 * and still would: their own limit reached, or the project's (docs/metrics.md, "Series limits").
 * A metric whose limit was raised above its count, in a project with room, is not one. What the
 * attention provider of `metric_error` items reads (src/attention/metric-series-limit.ts).
 */
export function metricsAtSeriesLimit(metrics: MetricCatalog, projectId: string): MetricAtSeriesLimit[] {
  const all = metrics.list(projectId);
  const counts = new Map(all.map((m) => [m.id, seriesCountOf(metrics.store, m)]));
  let projectCount = 0;
  for (const n of counts.values()) projectCount += n;
  const projectFull = projectCount >= metrics.seriesLimits.perProject;
  const out: MetricAtSeriesLimit[] = [];
  for (const m of all) {
    if (m.deleted_at !== null || m.series_limit_reached_at == null) continue;
    const count = counts.get(m.id)!;
    const own = count >= seriesLimitOf(m, metrics.seriesLimits);
    if (own || projectFull) out.push({ metric: m, count, limit: own ? 'series_limit' : 'project_series_limit' });
  }
  return out;
}
