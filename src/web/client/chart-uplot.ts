import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { seriesColor, lastValue } from './colors.js';
import { formatTime, formatValue, thresholdText } from './format.js';
import type { CardMarkers, CardMetric, DrawInput, Drawn } from './types.js';

/**
 * line, area, bar and scatter with uPlot (docs/pages.md, "Charts"): the metric's curve, y bounds,
 * colors, unit and compact values; trends as dashed lines and the forecast as a dashed step past
 * the last bucket when the metric asks for them. One x per bucket: never more points than pixels.
 */
export function drawUplot(input: DrawInput): Drawn {
  const { card, data, el, hidden } = input;
  const m = card.metric;
  const type = m.ui_chart_type;
  const n = data.series.length;
  const xs: number[] = data.times.map((t) => t / 1000);
  const ys: Array<Array<number | null>> = [];
  const series: uPlot.Series[] = [
    { label: 'time', value: (_u, v) => (v === null ? '' : formatTime(v * 1000, data.interval, input.timeZone)) },
  ];
  const forecasts: Array<{ from: number | null; at: number; value: number; color: string; show: boolean }> = [];

  const paths =
    type === 'bar'
      ? uPlot.paths.bars!({ size: [0.7, 64], gap: 1 })
      : m.ui_chart_curve === 'step'
        ? uPlot.paths.stepped!({ align: 1 })
        : m.ui_chart_curve === 'smooth'
          ? uPlot.paths.spline!()
          : uPlot.paths.linear!();

  data.series.forEach((s, i) => {
    const color = seriesColor(m, i, n, s.color, lastValue(s.values));
    const show = !hidden.has(s.hash);
    ys.push(s.values);
    series.push({
      label: s.label,
      stroke: color,
      width: type === 'scatter' ? 0 : 1.5,
      fill: type === 'area' ? `${color}33` : type === 'bar' ? `${color}cc` : undefined,
      paths: type === 'scatter' ? () => null : paths,
      points: type === 'scatter' ? { show: true, size: 5, fill: color, stroke: color } : { show: false },
      spanGaps: false,
      show,
      value: (_u, v) => formatValue(v, m),
    });
    if (m.ui_chart_show_trends && s.trend) {
      ys.push(s.trend);
      series.push({
        label: `${s.label} (trend)`,
        stroke: color,
        width: 1,
        dash: [4, 4],
        points: { show: false },
        show,
        value: (_u, v) => formatValue(v, m),
      });
    }
    if (m.ui_chart_show_forecast && s.forecast) {
      const at = Date.parse(s.forecast.at) / 1000;
      if (at > (xs[xs.length - 1] ?? 0))
        forecasts.push({ from: lastValue(s.values), at, value: s.forecast.value, color, show });
    }
  });

  // A forecast is a dashed segment from the last bucket toward the forecast: one more x, nulls elsewhere.
  // A forecast far past the window (a 7-day horizon on a 6-hour chart) would squeeze the data into a
  // sliver: the segment then stops a quarter of the window past its end, at the value on its way.
  if (forecasts.length > 0) {
    const first = xs[0] ?? 0;
    const last = xs[xs.length - 1] ?? 0;
    const limit = last + Math.max(60, (last - first) / 4);
    const at = Math.min(limit, Math.max(...forecasts.map((f) => f.at)));
    xs.push(at);
    for (const y of ys) y.push(null);
    for (const f of forecasts) {
      const line: Array<number | null> = xs.map(() => null);
      line[xs.length - 2] = f.from;
      line[xs.length - 1] =
        f.from === null || f.at <= at ? f.value : f.from + ((f.value - f.from) * (at - last)) / (f.at - last);
      ys.push(line);
      series.push({
        label: 'forecast',
        stroke: f.color,
        width: 1.5,
        dash: [2, 4],
        points: { show: true, size: 4 },
        show: f.show,
        spanGaps: true,
        value: (_u, v) => formatValue(v, m),
      });
    }
  }

  const axisColor = input.dark ? '#9ca3af' : '#4b5563';
  const gridColor = input.dark ? '#374151' : '#e5e7eb';
  const markers = input.card.markers ?? null;
  const thresholds = m.ui_chart_show_monitors ? (markers?.thresholds ?? []) : [];
  // A hidden series hides its alert periods too; a period of the whole metric (no series) always shows.
  const alerts = (m.ui_chart_show_alerts ? (markers?.alerts ?? []) : []).filter(
    (a) => a.series_hash === null || !hidden.has(a.series_hash),
  );
  const yRange: uPlot.Scale.Range = (_u, min, max) => {
    // Thresholds stay in view: a line off the chart would say nothing.
    for (const t of thresholds) {
      min = Math.min(min, t.value);
      max = Math.max(max, t.value);
    }
    const lo = m.ui_chart_y_min ?? (type === 'bar' || type === 'area' ? Math.min(0, min) : min);
    let hi = m.ui_chart_y_max ?? max;
    if (!(hi > lo)) hi = lo + 1;
    return [lo, hi];
  };
  const opts: uPlot.Options = {
    width: input.width,
    height: input.height,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), input.timeZone),
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true }, y: { range: yRange } },
    axes: [
      { stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor } },
      {
        stroke: axisColor,
        grid: { stroke: gridColor, width: 1 },
        ticks: { stroke: gridColor },
        size: 60,
        values: (_u, vals) => vals.map((v) => formatValue(v, { ...m, ui_value_unit: null })),
      },
    ],
    series,
    hooks: { draw: [(u) => drawMarkers(u, alerts, thresholds, m, input.dark)] },
  };
  const plot = new uPlot(opts, [xs, ...ys] as uPlot.AlignedData, el);
  // What was drawn besides the series, for tests and readers (docs/pages.md, "Each drawn card exposes").
  el.dataset.drawnTrends = String(series.filter((s) => s.label?.toString().endsWith(' (trend)')).length);
  el.dataset.drawnForecasts = String(forecasts.length);
  return { destroy: () => plot.destroy() };
}

/** Alert periods as red bands (to the right edge while firing), monitor thresholds as dashed lines. */
function drawMarkers(
  u: uPlot,
  alerts: CardMarkers['alerts'],
  thresholds: CardMarkers['thresholds'],
  m: CardMetric,
  dark: boolean,
): void {
  const el = u.root.parentElement;
  if (el) {
    el.dataset.drawnAlerts = '0';
    el.dataset.drawnThresholds = '0';
  }
  if (alerts.length === 0 && thresholds.length === 0) return;
  const { ctx } = u;
  let bands = 0;
  let lines = 0;
  const { left, top, width, height } = u.bbox;
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, width, height);
  ctx.clip();
  ctx.fillStyle = 'rgba(239, 68, 68, 0.15)';
  for (const a of alerts) {
    const x0 = Math.max(left, u.valToPos(a.start / 1000, 'x', true));
    const x1 = a.end === null ? left + width : Math.min(left + width, u.valToPos(a.end / 1000, 'x', true));
    if (x1 > x0) {
      ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
      bands++;
    }
  }
  ctx.strokeStyle = '#ef4444';
  ctx.fillStyle = dark ? '#fca5a5' : '#b91c1c';
  ctx.setLineDash([6, 4]);
  ctx.lineWidth = 1;
  ctx.font = `${Math.round(11 * uPlot.pxRatio)}px system-ui, sans-serif`;
  // uPlot leaves the alignment of its last axis label set: captions start at the left edge, above their line.
  ctx.textAlign = 'left';
  ctx.textBaseline = 'bottom';
  for (const t of thresholds) {
    const y = Math.round(u.valToPos(t.value, 'y', true)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(left, y);
    ctx.lineTo(left + width, y);
    ctx.stroke();
    // Canvas text: a monitor name is drawn, never parsed.
    ctx.fillText(thresholdText(t, m), left + 4, y - 3);
    lines++;
  }
  ctx.restore();
  if (el) {
    el.dataset.drawnAlerts = String(bands);
    el.dataset.drawnThresholds = String(lines);
  }
}
