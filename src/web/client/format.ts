import type { CardMarkers, CardMetric } from './types.js';

const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });
const plain = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

/** A value as the metric wants it shown: compact notation when asked, and its unit. */
export function formatValue(
  v: number | null | undefined,
  m: Pick<CardMetric, 'ui_chart_compact_values' | 'ui_value_unit'>,
): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const text = m.ui_chart_compact_values ? compact.format(v) : plain.format(v);
  return m.ui_value_unit ? `${text} ${m.ui_value_unit}` : text;
}

/** A bucket start as a viewer in `timeZone` reads it, at the precision of the interval. */
export function formatTime(t: number, interval: string, timeZone: string): string {
  const opts: Intl.DateTimeFormatOptions = { timeZone };
  if (interval === 'month') Object.assign(opts, { year: 'numeric', month: 'short' });
  else if (interval === 'day') Object.assign(opts, { month: 'short', day: 'numeric' });
  else Object.assign(opts, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  return new Intl.DateTimeFormat(undefined, opts).format(t);
}

const OPERATOR_TEXT: Record<string, string> = { gt: '>', gte: '≥', lt: '<', lte: '≤', eq: '=', neq: '≠' };

/** A threshold line's caption: the monitor's name and its condition, e.g. `Slow > 250 ms`. */
export function thresholdText(
  t: CardMarkers['thresholds'][number],
  m: Pick<CardMetric, 'ui_chart_compact_values' | 'ui_value_unit'>,
): string {
  return `${t.label} ${OPERATOR_TEXT[t.operator] ?? t.operator} ${formatValue(t.value, m)}`;
}
