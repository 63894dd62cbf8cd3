import { iso } from '../clock.js';
import { newId } from '../ids.js';
import type { MetricSeriesRecord } from './metric-records.js';
import type { MetricStore } from './metric-store.js';
import { TOTAL_SERIES, type SeenSeries } from './rollup-types.js';

/**
 * Inside a transaction: register the series a batch (or a backfilled file) saw. A new series is
 * stamped `first_seen_at` = `last_seen_at` = now (spec: stamped at registration, not a recency
 * signal); a known one takes the newer `last_value` (ranking) and display values. TOTAL_SERIES is
 * not a series of the registry. Returns how many series were new.
 */
export function stageSeenSeries(store: MetricStore, metricId: string, seen: readonly SeenSeries[], now: number): number {
  let added = 0;
  for (const s of seen) {
    if (s.hash === TOTAL_SERIES) continue;
    const cur = store.seriesByHash(metricId, s.hash);
    if (cur === undefined) {
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
    store.stageSeries(next);
  }
  return added;
}

/** The display values joined (", "), null without display fields. */
function labelOf(display: Record<string, unknown> | null): string | null {
  if (display === null) return null;
  const parts = Object.values(display).filter((v) => v !== null && v !== undefined).map(String);
  return parts.length ? parts.join(', ') : null;
}
