import { cssColor, ruleColor } from './colors.js';
import { formatTime, formatValue } from './format.js';
import { reduce } from './reduce.js';
import type { DrawInput, Drawn } from './types.js';

function node<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** `stat`: each shown series' number (the window's total for count and sum, else the latest value), large, colored by the value rules in `by_value` mode. Text only (textContent). */
export function drawStat(input: DrawInput): Drawn {
  const { el, card, data, hidden } = input;
  const box = node('div', 'stat');
  for (const s of data.series) {
    if (hidden.has(s.hash)) continue;
    const v = reduce(data.value, s);
    const row = node('div', 'stat-row');
    const value = node('span', 'stat-value', formatValue(v, card.metric));
    const color =
      card.metric.ui_chart_color_mode === 'by_value'
        ? ruleColor(card.metric, v)
        : card.metric.ui_chart_color_mode === 'by_intensity'
          ? cssColor(card.metric.ui_chart_color_base, '')
          : null;
    if (color) value.style.color = color;
    row.append(value);
    if (data.series.length > 1) row.append(node('span', 'stat-label', s.label));
    box.append(row);
  }
  el.append(box);
  return { destroy: () => box.remove() };
}

/**
 * `uptime`: a strip of buckets for checks (docs/pages.md, "Uptime"). The metric's value per bucket is
 * read as availability (1 up, 0 down, e.g. the average of a check's `ok`): all up is green, partly
 * up amber, down red, no observation grey (the metric should use `empty_bucket_handling: gaps`, or
 * an empty bucket reads 0: down); the share of up time over the buckets with data is shown beside it.
 */
export function drawUptime(input: DrawInput): Drawn {
  const { el, card, data, hidden } = input;
  const box = node('div', 'uptime');
  for (const s of data.series) {
    if (hidden.has(s.hash)) continue;
    const row = node('div', 'uptime-row');
    const strip = node('div', 'uptime-strip');
    let sum = 0;
    let seen = 0;
    s.values.forEach((v, i) => {
      const state = v === null ? 'none' : v >= 0.999 ? 'up' : v > 0 ? 'partial' : 'down';
      if (v !== null) {
        sum += Math.min(1, Math.max(0, v));
        seen++;
      }
      const cell = node('span', `uptime-cell uptime-${state}`);
      cell.title = `${formatTime(data.times[i]!, data.interval, input.timeZone)}: ${v === null ? 'no data' : formatValue(v, card.metric)}`;
      strip.append(cell);
    });
    const pct = seen === 0 ? '–' : `${((sum / seen) * 100).toFixed(2)}%`;
    if (data.series.length > 1) row.append(node('span', 'uptime-label', s.label));
    row.append(strip, node('span', 'uptime-pct', pct));
    if (data.series.length === 1) row.classList.add('uptime-single');
    box.append(row);
  }
  el.append(box);
  return { destroy: () => box.remove() };
}
