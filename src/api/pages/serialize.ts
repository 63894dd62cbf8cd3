import type { ComponentRecord, PageRecord } from '../../catalog/pages.js';
import type { Services } from '../../services.js';
import { serializeMetric } from '../metrics/serialize.js';

/** Spec: Component — the card with its full Metric. A component whose metric is gone is not shown. */
export function serializeComponent(s: Services, page: PageRecord, c: ComponentRecord) {
  const metric = s.metrics.get(page.project_id, c.metric_id);
  if (!metric) return null;
  return {
    object: 'component',
    id: c.id,
    page_id: c.page_id,
    created_at: c.created_at,
    updated_at: c.updated_at,
    ui_card_size: c.ui_card_size,
    ui_sort_index: c.ui_sort_index,
    metric: serializeMetric(metric),
  };
}

/** The page as the API shows it (docs/pages.md, "The page record"); `components` only on one page's answers. */
export function serializePage(s: Services, p: PageRecord, opts: { components: boolean }) {
  const components = s.pages.componentsOf(p.id);
  return {
    object: 'page',
    id: p.id,
    team_id: p.team_id,
    project_id: p.project_id,
    name: p.name,
    slug: p.slug,
    description: p.description,
    visibility: p.visibility,
    // The short address when the page holds it; else its id address (docs/pages.md, "Slugs and addresses").
    url: `${s.config.publicUrl}/p/${s.pages.holdsSlug(p) ? p.slug : p.id}`,
    time_range: p.time_range,
    custom_range_start_at: p.custom_range_start_at,
    custom_range_end_at: p.custom_range_end_at,
    timezone: p.timezone,
    domain_ids: p.domain_ids,
    component_count: components.length,
    refreshed_at: p.refreshed_at,
    created_at: p.created_at,
    updated_at: p.updated_at,
    ...(opts.components
      ? { components: components.map((c) => serializeComponent(s, p, c)).filter((c) => c !== null) }
      : {}),
  };
}
