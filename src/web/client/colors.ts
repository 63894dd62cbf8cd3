import type { CardMetric } from './types.js';

/** The spec's named colors (ui_chart_color_base and color rules), each as a base hex. */
export const NAMED: Record<string, string> = {
  blue: '#3b82f6',
  red: '#ef4444',
  amber: '#f59e0b',
  green: '#22c55e',
  teal: '#14b8a6',
  purple: '#a855f7',
  pink: '#ec4899',
};

/** `by_series`: one color per series, in order (an override on the series wins). */
const PALETTE = [
  '#3b82f6',
  '#f59e0b',
  '#22c55e',
  '#ef4444',
  '#a855f7',
  '#14b8a6',
  '#ec4899',
  '#64748b',
  '#84cc16',
  '#06b6d4',
  '#f97316',
  '#8b5cf6',
];

/** A named color or `#rrggbb`; anything else falls back (a color never reaches CSS unchecked). */
export function cssColor(name: string | null | undefined, fallback: string): string {
  if (!name) return fallback;
  if (NAMED[name]) return NAMED[name]!;
  return /^#[0-9a-fA-F]{6}$/.test(name) ? name : fallback;
}

function hexToRgb(hex: string): [number, number, number] {
  const n = Number.parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** `hex` mixed towards white (amount > 0) or black (< 0). */
export function shade(hex: string, amount: number): string {
  const [r, g, b] = hexToRgb(hex);
  const mix = (c: number) => Math.round(amount >= 0 ? c + (255 - c) * amount : c * (1 + amount));
  return `#${[mix(r), mix(g), mix(b)].map((c) => c.toString(16).padStart(2, '0')).join('')}`;
}

/** Color of a value under `by_value` rules: the first rule that holds, else null. */
export function ruleColor(m: CardMetric, v: number | null | undefined): string | null {
  if (v === null || v === undefined) return null;
  for (const r of m.ui_chart_color_rules ?? []) {
    const holds =
      r.operator === 'gt'
        ? v > r.value
        : r.operator === 'gte'
          ? v >= r.value
          : r.operator === 'lt'
            ? v < r.value
            : r.operator === 'lte'
              ? v <= r.value
              : v === r.value;
    if (holds) return cssColor(r.color, PALETTE[0]!);
  }
  return null;
}

/**
 * The color of series `i` of `n` (docs/pages.md, "Colors"): `by_series` the palette (or the series'
 * own color); `by_intensity` shades of the base color, strongest first; `by_value` the rule matching
 * the series' latest value (points are colored one by one where the chart can).
 */
export function seriesColor(m: CardMetric, i: number, n: number, own: string | null, last: number | null): string {
  if (m.ui_chart_color_mode === 'by_intensity') {
    const base = cssColor(m.ui_chart_color_base, NAMED.blue!);
    return n <= 1 ? base : shade(base, (i / (n - 1)) * 0.6 - 0.1);
  }
  if (m.ui_chart_color_mode === 'by_value') return ruleColor(m, last) ?? cssColor(own, PALETTE[i % PALETTE.length]!);
  return cssColor(own, PALETTE[i % PALETTE.length]!);
}

/** The last non-null value of a series. */
export function lastValue(values: Array<number | null>): number | null {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null && values[i] !== undefined) return values[i]!;
  return null;
}
