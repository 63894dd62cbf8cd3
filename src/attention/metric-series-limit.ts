import type { MetricCatalog } from '../rollup/metric-catalog.js';
import { metricsAtSeriesLimit } from '../rollup/series-limit-attention.js';
import type { AttentionItem, AttentionProvider } from './types.js';

/** An AttentionProvider whose items are computed synchronously. */
export interface SeriesLimitProvider extends AttentionProvider {
  items(projectId: string, now?: number): AttentionItem[];
}

/**
 * Attention items of type `metric_error` for metrics folding new series into `__other__`
 * (docs/metrics.md, "Series limits"): one per live metric that has folded in its current revision
 * and still would (src/rollup/series-limit-attention.ts). Tier `suspended`: the service stopped
 * tracking new series one by one until the limit is raised. `count` is the metric's registered
 * series, `since` when it first folded, `detail` `series_limit` (its own limit) or
 * `project_series_limit`. Register it with the attention registry once that exists
 * (`register(seriesLimitAttention(services.metrics))`).
 */
export function seriesLimitAttention(metrics: MetricCatalog): SeriesLimitProvider {
  return {
    name: 'metric series limits',
    items(projectId: string): AttentionItem[] {
      return metricsAtSeriesLimit(metrics, projectId).map(({ metric, count, limit }) => ({
        type: 'metric_error',
        tier: 'suspended',
        resource_id: metric.id,
        resource_name: metric.name,
        count,
        since: metric.series_limit_reached_at ?? null,
        ended_at: null,
        detail: limit,
      }));
    },
  };
}
