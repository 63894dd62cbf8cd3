import type { AttentionItem, AttentionProvider } from '../attention/types.js';
import type { MetricCatalog } from './metric-catalog.js';
import { seriesCountOf, seriesLimitOf } from './series-limit.js';

/** An AttentionProvider whose items are computed synchronously. */
export interface SeriesLimitProvider extends AttentionProvider {
  items(projectId: string, now?: number): AttentionItem[];
}

/**
 * Attention items of type `metric_error` for metrics folding new series into `__other__`
 * (docs/metrics.md, "Series limits"): one per live metric that has folded in its current revision
 * (`series_limit_reached_at`) and still would — its own limit reached (`detail: series_limit`) or the
 * project's (`detail: project_series_limit`). Tier `suspended`: the service stopped tracking new
 * series one by one until the limit is raised. `count` is the metric's registered series, `since`
 * when it first folded. A metric whose limit was raised above its count (in a project with room)
 * has no item. Register it with the attention registry (`register(seriesLimitAttention(metrics))`).
 */
export function seriesLimitAttention(metrics: MetricCatalog): SeriesLimitProvider {
  return {
    name: 'metric series limits',
    items(projectId: string): AttentionItem[] {
      const all = metrics.list(projectId);
      const counts = new Map(all.map((m) => [m.id, seriesCountOf(metrics.store, m)]));
      let projectCount = 0;
      for (const n of counts.values()) projectCount += n;
      const projectFull = projectCount >= metrics.seriesLimits.perProject;
      const items: AttentionItem[] = [];
      for (const m of all) {
        if (m.deleted_at !== null || m.series_limit_reached_at == null) continue;
        const count = counts.get(m.id)!;
        const own = count >= seriesLimitOf(m, metrics.seriesLimits);
        if (!own && !projectFull) continue;
        items.push({
          type: 'metric_error',
          tier: 'suspended',
          resource_id: m.id,
          resource_name: m.name,
          count,
          since: m.series_limit_reached_at,
          ended_at: null,
          detail: own ? 'series_limit' : 'project_series_limit',
        });
      }
      return items;
    },
  };
}
