import { iso } from '../clock.js';
import { newId } from '../ids.js';
import type { MetricRecord, MetricSeriesRecord } from './metric-records.js';
import type { MetricStore } from './metric-store.js';
import type { SeenSeries } from './rollup-types.js';
import { countedFields, isRegistrable, seriesCountOf, seriesLimitOf, type SeriesBudget } from './series-limit.js';

/** What a registration did: series added, and the indexes (into `seen`) of new series folded into `__other__`. */
export interface SeenOutcome {
  added: number;
  folded: Set<number>;
}

/**
 * Inside a transaction: register the series a batch (or a backfilled file) saw. A new series is
 * stamped `first_seen_at` = `last_seen_at` = now (spec: stamped at registration, not a recency
 * signal); a known one takes the newer `last_value` (ranking) and display values. TOTAL_SERIES is
 * not a series of the registry. A new series past the metric's `series_limit` or the project's
 * limit (series-limit.ts) is not registered: it is answered in `folded`, and the caller counts its
 * partials under `__other__` (foldPartials) in the same transaction, so the decision and the rows
 * it shapes commit together. The metric's `series_count` and `series_limit_reached_at` follow.
 */
export function stageSeenSeries(
  store: MetricStore,
  metric: MetricRecord,
  seen: readonly SeenSeries[],
  now: number,
  budget: SeriesBudget,
): SeenOutcome {
  const metricId = metric.id;
  const count = seriesCountOf(store, metric);
  const metricRoom = seriesLimitOf(metric, budget.limits) - count;
  // The project's count is read only when a series is new (most batches bring none).
  let projectRoom: number | null = null;
  let added = 0;
  const folded = new Set<number>();
  for (let i = 0; i < seen.length; i++) {
    const s = seen[i]!;
    if (!isRegistrable(s)) continue;
    const cur = store.seriesByHash(metricId, s.hash);
    if (cur === undefined) {
      projectRoom ??= budget.limits.perProject - budget.projectCount(metric.project_id);
      if (added >= metricRoom || added >= projectRoom) {
        folded.add(i);
        continue;
      }
      const at = iso(now);
      store.stageSeries({
        id: newId('metricSeries'),
        metric_id: metricId,
        hash: s.hash,
        dimensions: s.dimensions,
        display_values: s.display,
        display_label: labelOf(s.display),
        first_seen_at: at,
        last_seen_at: at,
        last_value: s.last,
        last_value_at: s.lastAt === null ? null : iso(s.lastAt),
        color: null,
        pinned_at: null,
      });
      added++;
      continue;
    }
    if (s.lastAt === null || (cur.last_value_at !== null && Date.parse(cur.last_value_at) > s.lastAt)) continue;
    const next: MetricSeriesRecord = { ...cur, last_value: s.last, last_value_at: iso(s.lastAt) };
    if (s.display) {
      next.display_values = s.display;
      next.display_label = labelOf(s.display);
    }
    store.stageSeries(next, true);
  }
  if (added > 0) budget.add(metric.project_id, added);
  const fields = countedFields(metric, count, added, folded.size, now);
  // updated_at is left as it is: the counts are kept by the service, like the progress fields.
  if (fields !== null) store.stageMetric({ ...metric, ...fields });
  return { added, folded };
}

/** The display values joined (", "), null without display fields. */
function labelOf(display: Record<string, unknown> | null): string | null {
  if (display === null) return null;
  const parts = Object.values(display)
    .filter((v) => v !== null && v !== undefined)
    .map(String);
  return parts.length ? parts.join(', ') : null;
}
