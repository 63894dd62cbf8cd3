import { ApiError, invalidField, toApiError, type FieldIssue } from '../errors.js';
import type { ComponentRecord, PageRecord } from '../catalog/pages.js';
import type { MetricRecord } from '../rollup/metric-records.js';
import { isTimeZone } from '../rollup/aggregation/zoned-time.js';
import { timestampMs } from '../timestamp.js';
import { assertValid } from '../http/validation.js';
import type { Services } from '../services.js';
import { cardData, type CardData, type CardWindow, type TimeRange } from './card-data.js';
import { cardMarkers, type CardMarkers } from './card-markers.js';

/** The query a page's URL may carry: its state (docs/pages.md, "The page's address"). Nothing else is answered. */
export interface PageQuery {
  time_range?: TimeRange;
  timezone?: string;
  start_at?: string;
  end_at?: string;
  /** Hidden series, `<component id>:<series hash>` comma-separated: drawn by the browser only. */
  hide?: string;
  /** Data requests: the width of a full-width card in CSS pixels. */
  width?: number;
}

/** The metric settings a card is drawn with: chart settings and the name only — no ids, view, filters or fields. */
export interface CardMetric {
  name: string;
  status: MetricRecord['status'];
  ui_chart_type: MetricRecord['ui_chart_type'];
  ui_chart_color_mode: MetricRecord['ui_chart_color_mode'];
  ui_chart_color_base: MetricRecord['ui_chart_color_base'];
  ui_chart_color_rules: MetricRecord['ui_chart_color_rules'];
  ui_chart_curve: MetricRecord['ui_chart_curve'];
  ui_chart_show_alerts: boolean;
  ui_chart_show_monitors: boolean;
  ui_chart_show_trends: boolean;
  ui_chart_show_forecast: boolean;
  ui_chart_compact_values: boolean;
  ui_chart_y_min: number | null;
  ui_chart_y_max: number | null;
  ui_value_unit: string | null;
  ui_chart_value: MetricRecord['ui_chart_value'];
  ui_chart_max_series: number;
}

export interface CardModel {
  id: string;
  size: ComponentRecord['ui_card_size'];
  sort_index: number;
  metric: CardMetric;
  data: CardData | null;
  /** Why the card has no data (the aggregation's error), else null. */
  error: { code: string; message: string } | null;
  /** Alert periods and monitor thresholds over the data when the metric shows them, else null (card-markers.ts). */
  markers: CardMarkers | null;
}

/** Default drawing width of a full-width card before the browser says its own (the first, inline data). */
export const DEFAULT_WIDTH_PX = 1200;

export function cardMetric(m: MetricRecord): CardMetric {
  return {
    name: m.name,
    status: m.status,
    ui_chart_type: m.ui_chart_type,
    ui_chart_color_mode: m.ui_chart_color_mode,
    ui_chart_color_base: m.ui_chart_color_base,
    ui_chart_color_rules: m.ui_chart_color_rules,
    ui_chart_curve: m.ui_chart_curve,
    ui_chart_show_alerts: m.ui_chart_show_alerts,
    ui_chart_show_monitors: m.ui_chart_show_monitors,
    ui_chart_show_trends: m.ui_chart_show_trends,
    ui_chart_show_forecast: m.ui_chart_show_forecast,
    ui_chart_compact_values: m.ui_chart_compact_values,
    ui_chart_y_min: m.ui_chart_y_min,
    ui_chart_y_max: m.ui_chart_y_max,
    ui_value_unit: m.ui_value_unit,
    ui_chart_value: m.ui_chart_value,
    ui_chart_max_series: m.ui_chart_max_series,
  };
}

/**
 * The viewer's window from the URL, defaults from the page: its range and zone; `custom` takes
 * `start_at` and `end_at` (both) or else the page's saved custom range. 400 naming the parameter.
 */
export function viewerWindow(page: PageRecord, q: PageQuery): Omit<CardWindow, 'widthPx'> {
  const issues: FieldIssue[] = [];
  const timeZone = q.timezone ?? page.timezone;
  if (!isTimeZone(timeZone))
    issues.push({ field: 'query.timezone', message: 'is not an IANA time zone name; use e.g. Europe/Berlin or UTC' });
  const timeRange = q.time_range ?? (page.time_range as TimeRange);
  const w: Omit<CardWindow, 'widthPx'> = { timeRange, timeZone };
  if ((q.start_at === undefined) !== (q.end_at === undefined)) {
    issues.push({
      field: q.start_at === undefined ? 'query.start_at' : 'query.end_at',
      message: 'is required with the other end of the range: send both, with time_range=custom',
    });
  } else if (q.start_at !== undefined && q.end_at !== undefined) {
    const start = timestampMs(q.start_at);
    const end = timestampMs(q.end_at);
    if (timeRange !== 'custom')
      issues.push({ field: 'query.time_range', message: 'must be custom when start_at and end_at are sent' });
    if (!(end > start)) issues.push({ field: 'query.end_at', message: 'must be after start_at' });
    w.customStart = start;
    w.customEnd = end;
  } else if (timeRange === 'custom' && (page.custom_range_start_at === null || page.custom_range_end_at === null)) {
    issues.push({
      field: 'query.time_range',
      message: 'is custom but the page saves no custom range: send start_at and end_at',
    });
  }
  assertValid(issues);
  return w;
}

/**
 * The cards of a page (or the one named), in display order, each with its first data read through
 * the aggregation service for `window` at `widthPx` (a half card gets half). This is the page-scoped
 * read path: only the page's own components, only their metrics' saved settings, only the series the
 * API would show. A card that cannot be read carries its error; the others still draw.
 */
export async function pageCards(
  s: Services,
  page: PageRecord,
  window: Omit<CardWindow, 'widthPx'>,
  widthPx: number,
  only?: string,
): Promise<CardModel[]> {
  const components = s.pages.componentsOf(page.id).filter((c) => only === undefined || c.id === only);
  if (only !== undefined && components.length === 0)
    throw new ApiError('not_found', `Component ${only} is not on this page`);
  const out: CardModel[] = [];
  await Promise.all(
    components.map(async (c, i) => {
      const metric = s.metrics.get(page.project_id, c.metric_id);
      if (!metric || metric.deleted_at) return;
      const px = only !== undefined || c.ui_card_size === '1/1' ? widthPx : widthPx / 2;
      let data: CardData | null = null;
      let error: CardModel['error'] = null;
      try {
        data = await cardData(s, page, metric, { ...window, widthPx: px });
      } catch (err) {
        const e = toApiError(err);
        if (e.status >= 500 && e.code === 'server_error')
          s.log.error({ err, page_id: page.id, component_id: c.id }, 'a page card could not be read');
        error = {
          code: e.code,
          message: e.status >= 500 && e.code === 'server_error' ? 'The data could not be read' : e.message,
        };
      }
      // Read fresh on every ask (not cached with the data): an alert opens or ends between data changes.
      const markers = cardMarkers(s, metric, data);
      out[i] = {
        id: c.id,
        size: c.ui_card_size,
        sort_index: c.ui_sort_index,
        metric: cardMetric(metric),
        data,
        error,
        markers,
      };
    }),
  );
  return out.filter((c) => c !== undefined);
}

/** `width` of a data request: a whole number of pixels in range, else 400. */
export function widthOf(q: PageQuery): number {
  if (q.width === undefined) return DEFAULT_WIDTH_PX;
  if (!Number.isInteger(q.width) || q.width < 50 || q.width > 4096)
    throw invalidField('query.width', 'must be an integer from 50 to 4096 (CSS pixels)');
  return q.width;
}
