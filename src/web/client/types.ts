/** The shapes the server sends (src/web/render.ts PageBoot, src/web/page-model.ts CardModel), as the browser reads them. */
export interface CardMetric {
  name: string;
  status: string;
  ui_chart_type: 'line' | 'area' | 'bar' | 'pie' | 'scatter' | 'radar' | 'stat' | 'gauge' | 'calendar' | 'uptime';
  ui_chart_color_mode: 'by_series' | 'by_intensity' | 'by_value';
  ui_chart_color_base: string | null;
  ui_chart_color_rules: Array<{ operator: 'gt' | 'gte' | 'lt' | 'lte' | 'eq'; value: number; color: string }> | null;
  ui_chart_curve: 'linear' | 'step' | 'smooth';
  ui_chart_show_alerts: boolean;
  ui_chart_show_monitors: boolean;
  ui_chart_show_trends: boolean;
  ui_chart_show_forecast: boolean;
  ui_chart_compact_values: boolean;
  ui_chart_y_min: number | null;
  ui_chart_y_max: number | null;
  ui_value_unit: string | null;
  ui_chart_value: string;
  ui_chart_max_series: number;
}

export interface CardSeries {
  hash: string;
  label: string;
  color: string | null;
  values: Array<number | null>;
  trend: Array<number | null> | null;
  forecast: { at: string; value: number; lower?: number; upper?: number } | null;
}

export interface CardData {
  interval: 'minute' | 'hour' | 'day' | 'month';
  start_at: string;
  end_at: string;
  complete_through_at: string | null;
  series_total: number;
  value: string;
  times: number[];
  series: CardSeries[];
}

/** Alert periods and monitor thresholds drawn over a card (src/web/card-markers.ts; docs/pages.md, "Alerts and thresholds"). */
export interface CardMarkers {
  /** Firing periods overlapping the window: start and end (null while firing) in epoch ms; the monitor's name. */
  alerts: Array<{
    start: number;
    end: number | null;
    label: string;
    series_hash: string | null;
    series_label: string | null;
  }>;
  /** Thresholds of the metric's active threshold monitors on the drawn value. */
  thresholds: Array<{ value: number; operator: 'gt' | 'gte' | 'lt' | 'lte' | 'eq' | 'neq'; label: string }>;
}

export interface CardModel {
  id: string;
  size: '1/1' | '1/2';
  sort_index: number;
  metric: CardMetric;
  data: CardData | null;
  error: { code: string; message: string } | null;
  /** Null unless the metric shows alerts or monitors. */
  markers: CardMarkers | null;
}

export interface WindowState {
  time_range: string;
  timezone: string;
  start_at: string | null;
  end_at: string | null;
}

export interface PageBoot {
  slug: string;
  name: string;
  component: string | null;
  window: WindowState;
  defaults: { time_range: string; timezone: string };
  hide: string[];
  width: number;
  cards: CardModel[];
  csrf: string | null;
}

/** What a chart module draws into a card; `hidden` are series hashes not to draw. */
export interface DrawInput {
  el: HTMLElement;
  card: CardModel;
  data: CardData;
  width: number;
  height: number;
  timeZone: string;
  hidden: Set<string>;
  dark: boolean;
}

/** A drawn chart: resize, or remove it before drawing again. */
export interface Drawn {
  destroy(): void;
}
