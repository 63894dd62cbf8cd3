import * as echarts from 'echarts/core';
import { PieChart, RadarChart, GaugeChart, HeatmapChart } from 'echarts/charts';
import { CalendarComponent, TooltipComponent, VisualMapComponent, RadarComponent } from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';
import { cssColor, lastValue, NAMED, ruleColor, seriesColor } from './colors.js';
import { formatValue } from './format.js';
import { reduce } from './reduce.js';
import type { CardData, CardMarkers, CardSeries, DrawInput, Drawn } from './types.js';

// Only the modules these four charts need: this chunk is loaded only for a page that has one.
// Tooltips render as canvas text (richText), so no label is ever parsed as HTML.
echarts.use([
  PieChart,
  RadarChart,
  GaugeChart,
  HeatmapChart,
  CalendarComponent,
  TooltipComponent,
  VisualMapComponent,
  RadarComponent,
  CanvasRenderer,
]);

/** pie, radar, gauge and calendar with Apache ECharts. */
export function drawEcharts(input: DrawInput): Drawn {
  const { el, card, data, hidden } = input;
  const m = card.metric;
  const shown = data.series.filter((s) => !hidden.has(s.hash));
  const holder = document.createElement('div');
  holder.style.width = `${input.width}px`;
  holder.style.height = `${input.height}px`;
  el.append(holder);
  const chart = echarts.init(holder, input.dark ? 'dark' : undefined, {
    renderer: 'canvas',
    width: input.width,
    height: input.height,
  });
  const fmt = (v: unknown) => formatValue(typeof v === 'number' ? v : null, m);
  const colorOf = (s: CardSeries) =>
    seriesColor(m, data.series.indexOf(s), data.series.length, s.color, lastValue(s.values));
  const bg = 'transparent';
  let option: echarts.EChartsCoreOption;
  if (m.ui_chart_type === 'pie') {
    option = {
      backgroundColor: bg,
      animation: false,
      tooltip: { trigger: 'item', valueFormatter: fmt, renderMode: 'richText' },
      series: [
        {
          type: 'pie',
          radius: ['35%', '70%'],
          data: shown.map((s) => ({
            name: s.label,
            value: reduce(data.value, s) ?? 0,
            itemStyle: { color: colorOf(s) },
          })),
          label: { formatter: '{b}' },
        },
      ],
    };
  } else if (m.ui_chart_type === 'radar') {
    const values = shown.map((s) => reduce(data.value, s) ?? 0);
    const max = m.ui_chart_y_max ?? Math.max(1, ...values) * 1.1;
    option = {
      backgroundColor: bg,
      animation: false,
      tooltip: { valueFormatter: fmt, renderMode: 'richText' },
      radar: { indicator: shown.map((s) => ({ name: s.label, max, min: m.ui_chart_y_min ?? 0 })) },
      series: [
        {
          type: 'radar',
          data: [{ name: m.name, value: values, areaStyle: { opacity: 0.2 } }],
          itemStyle: { color: cssColor(m.ui_chart_color_base, NAMED.blue!) },
        },
      ],
    };
  } else if (m.ui_chart_type === 'gauge') {
    const s = shown[0];
    const v = s ? lastValue(s.values) : null;
    const thresholds = m.ui_chart_show_monitors ? (card.markers?.thresholds ?? []) : [];
    const min = m.ui_chart_y_min ?? 0;
    // The dial reaches past every threshold: a threshold off the dial would say nothing.
    const max = m.ui_chart_y_max ?? Math.max(1, (v ?? 0) * 1.5, ...thresholds.map((t) => t.value * 1.1));
    const color = (m.ui_chart_color_mode === 'by_value' ? ruleColor(m, v) : null) ?? (s ? colorOf(s) : NAMED.blue!);
    option = {
      backgroundColor: bg,
      animation: false,
      series: [
        {
          type: 'gauge',
          min,
          max,
          radius: '90%',
          center: ['50%', '58%'],
          splitNumber: 4,
          progress: { show: true, width: 6, itemStyle: { color } },
          axisLine: { lineStyle: { width: 14, color: gaugeBands(thresholds, min, max, input.dark) } },
          axisTick: { show: false },
          splitLine: { length: 6, distance: 2 },
          axisLabel: { distance: 14, fontSize: 10 },
          pointer: { width: 4, length: '55%' },
          title: { offsetCenter: [0, '75%'], fontSize: 11 },
          detail: { formatter: () => fmt(v), fontSize: 18, offsetCenter: [0, '40%'] },
          data: [{ value: v ?? 0, name: s?.label ?? '' }],
        },
      ],
    };
  } else {
    // calendar: one cell per day, the shown series added up per bucket.
    const days = new Map<string, number>();
    const dayOf = new Intl.DateTimeFormat('en-CA', {
      timeZone: input.timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    });
    data.times.forEach((t, i) => {
      let sum: number | null = null;
      for (const s of shown) if (s.values[i] !== null && s.values[i] !== undefined) sum = (sum ?? 0) + s.values[i]!;
      if (sum === null) return;
      const day = dayOf.format(t);
      days.set(day, (days.get(day) ?? 0) + sum);
    });
    const alerted = alertDays(card.metric.ui_chart_show_alerts ? card.markers : null, data, hidden, dayOf);
    el.dataset.alertDays = [...alerted].sort().join(',');
    // A day an alert fired on is outlined in red (the calendar's alert marker).
    const entries = [...days.entries()].map(([day, v]) =>
      alerted.has(day) ? { value: [day, v], itemStyle: { borderColor: '#ef4444', borderWidth: 2 } } : [day, v],
    );
    const max = Math.max(1, ...days.values());
    const keys = [...days.keys()];
    const first = keys[0] ?? new Date(data.times[0] ?? Date.now()).toISOString().slice(0, 10);
    const last = keys[keys.length - 1] ?? first;
    const base = cssColor(m.ui_chart_color_base, NAMED.green!);
    option = {
      backgroundColor: bg,
      animation: false,
      tooltip: { valueFormatter: fmt, renderMode: 'richText' },
      visualMap: { show: false, min: 0, max, inRange: { color: ['#e5e7eb', base] } },
      calendar: {
        range: [first, last],
        cellSize: ['auto', 14],
        left: 30,
        right: 10,
        top: 20,
        dayLabel: { firstDay: 1 },
      },
      series: [{ type: 'heatmap', coordinateSystem: 'calendar', data: entries }],
    };
  }
  chart.setOption(option);
  return {
    destroy: () => {
      chart.dispose();
      holder.remove();
    },
  };
}

/** The days (`YYYY-MM-DD` in the viewer's zone) an alert period of a shown series covers, within the card's window. */
function alertDays(
  markers: CardMarkers | null,
  data: CardData,
  hidden: Set<string>,
  dayOf: Intl.DateTimeFormat,
): Set<string> {
  const out = new Set<string>();
  const windowStart = Date.parse(data.start_at);
  const windowEnd = Date.parse(data.end_at);
  for (const a of markers?.alerts ?? []) {
    if (a.series_hash !== null && hidden.has(a.series_hash)) continue;
    const from = Math.max(a.start, windowStart);
    const to = Math.min(a.end ?? windowEnd, windowEnd);
    // Hour steps reach every day (zones shift by at most a day's fraction); bounded by the window.
    for (let t = from; t <= to && out.size < 400; t += 3_600_000) out.add(dayOf.format(t));
    if (to >= from) out.add(dayOf.format(to));
  }
  return out;
}

const MEETS: Record<string, (v: number, t: number) => boolean> = {
  gt: (v, t) => v > t,
  gte: (v, t) => v >= t,
  lt: (v, t) => v < t,
  lte: (v, t) => v <= t,
  eq: (v, t) => v === t,
  neq: (v, t) => v !== t,
};

/**
 * The gauge's dial colored by the monitor thresholds (`ui_chart_show_monitors`): the stretches of
 * the dial where a value would meet a threshold's condition are red, the rest grey.
 */
function gaugeBands(
  thresholds: CardMarkers['thresholds'],
  min: number,
  max: number,
  dark: boolean,
): Array<[number, string]> {
  const grey = dark ? '#374151' : '#e5e7eb';
  const cuts = [...new Set(thresholds.map((t) => t.value).filter((v) => v > min && v < max))].sort((a, b) => a - b);
  const edges = [min, ...cuts, max];
  const bands: Array<[number, string]> = [];
  for (let i = 1; i < edges.length; i++) {
    const mid = (edges[i - 1]! + edges[i]!) / 2;
    const hot = thresholds.some((t) => t.operator !== 'eq' && MEETS[t.operator]?.(mid, t.value));
    const color = hot ? 'rgba(239, 68, 68, 0.45)' : grey;
    const at = (edges[i]! - min) / (max - min || 1);
    const last = bands[bands.length - 1];
    if (last && last[1] === color) last[0] = at;
    else bands.push([at, color]);
  }
  return bands;
}
