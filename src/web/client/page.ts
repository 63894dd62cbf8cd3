import './page.css';
import { cssColor, lastValue, seriesColor } from './colors.js';
import { drawStat, drawUptime } from './chart-html.js';
import { drawUplot } from './chart-uplot.js';
import { formatTime, thresholdText } from './format.js';
import type { CardData, CardModel, Drawn, PageBoot, WindowState } from './types.js';

/**
 * The dashboard in the browser (docs/pages.md, "The dashboard"): draws each card from the data the
 * page carries inline, keeps the viewer's range, zone and hidden series in the URL, and redraws when
 * the server says the data moved (SSE, polling when the stream cannot be had). Every text is set
 * with textContent: labels and names are never parsed as HTML.
 */

const UPLOT = new Set(['line', 'area', 'bar', 'scatter']);
const ECHARTS = new Set(['pie', 'radar', 'gauge', 'calendar']);
/** Polling period when SSE is not available. */
const POLL_MS = 60_000;

type EchartsModule = typeof import('./chart-echarts.js');
let echartsModule: Promise<EchartsModule> | null = null;
/** ECharts is a chunk of its own, loaded the first time a pie, radar, gauge or calendar card draws. */
function loadEcharts(): Promise<EchartsModule> {
  echartsModule ??= import('./chart-echarts.js');
  return echartsModule;
}

const dark = () => window.matchMedia?.('(prefers-color-scheme: dark)').matches ?? false;

function readJson<T>(id: string): T | null {
  const el = document.getElementById(id);
  return el?.textContent ? (JSON.parse(el.textContent) as T) : null;
}

class Page {
  private readonly drawn = new Map<string, Drawn>();
  private readonly hidden: Set<string>;
  private cards: CardModel[];
  private win: WindowState;
  /** Width (px) of a full-width card the current data was read for. */
  private dataWidth: number;
  private loading: Promise<void> | null = null;

  constructor(private readonly boot: PageBoot) {
    this.cards = boot.cards;
    this.win = boot.window;
    this.hidden = new Set(boot.hide);
    this.dataWidth = boot.width;
  }

  async start(): Promise<void> {
    this.controls();
    await this.drawAll();
    // The inline data was read for a default width: a narrower screen reads again so that no card gets more points than pixels.
    const full = this.fullWidth();
    if (full > 0 && full < this.dataWidth * 0.9) await this.reload();
    this.live();
    window.addEventListener(
      'resize',
      debounce(() => void this.drawAll(), 200),
    );
    window.matchMedia?.('(prefers-color-scheme: dark)').addEventListener?.('change', () => void this.drawAll());
  }

  /** CSS width of a full-width card's chart area. */
  private fullWidth(): number {
    const grid = document.getElementById('grid');
    if (!grid) return 0;
    return Math.max(50, Math.floor(grid.clientWidth - 32));
  }

  private async drawAll(): Promise<void> {
    await Promise.all(this.cards.map((c) => this.draw(c)));
    // When every card was first drawn, in ms since navigation started (first paint with data).
    document.body.dataset.readyMs ??= String(Math.round(performance.now()));
    document.body.dataset.state = 'ready';
    document.body.dataset.timeRange = this.win.time_range;
    document.body.dataset.timezone = this.win.timezone;
  }

  private async draw(card: CardModel): Promise<void> {
    const section = document.getElementById(`card-${card.id}`);
    const el = section?.querySelector<HTMLElement>('.chart');
    if (!section || !el) return;
    this.drawn.get(card.id)?.destroy();
    this.drawn.delete(card.id);
    el.textContent = '';
    section.querySelector('.card-error')?.remove();
    section.querySelector('.card-markers')?.remove();
    delete section.dataset.markers;
    const legend = section.querySelector<HTMLElement>('.legend');
    if (legend) legend.textContent = '';
    if (!card.data) {
      section.dataset.state = 'error';
      const p = document.createElement('p');
      p.className = 'card-error';
      p.textContent = card.error?.message ?? 'No data';
      if (card.error) p.dataset.errorCode = card.error.code;
      section.insertBefore(p, el);
      return;
    }
    const data = card.data;
    const hidden = new Set(
      [...this.hidden].filter((h) => h.startsWith(`${card.id}:`)).map((h) => h.slice(card.id.length + 1)),
    );
    const width = Math.max(50, el.clientWidth || section.clientWidth - 24);
    const height = this.boot.component ? Math.max(120, window.innerHeight - 90) : 220;
    const input = { el, card, data, width, height, timeZone: this.win.timezone, hidden, dark: dark() };
    const type = card.metric.ui_chart_type;
    let drawn: Drawn;
    if (UPLOT.has(type)) drawn = drawUplot(input);
    else if (ECHARTS.has(type)) drawn = (await loadEcharts()).drawEcharts(input);
    else if (type === 'uptime') drawn = drawUptime(input);
    else drawn = drawStat(input);
    this.drawn.set(card.id, drawn);
    if (legend) this.legend(legend, card, data);
    const timeAxis = UPLOT.has(type);
    this.markerNote(section, card, hidden, timeAxis);
    // What the card drew, for tests and for anyone reading the page: each series' points as [time ms, value].
    section.dataset.interval = data.interval;
    section.dataset.startAt = data.start_at;
    section.dataset.endAt = data.end_at;
    section.dataset.series = JSON.stringify(
      data.series.map((s) => ({
        hash: s.hash,
        label: s.label,
        hidden: hidden.has(s.hash),
        points: data.times.map((t, i) => [t, s.values[i] ?? null]),
        // The fits drawn (time charts, when the metric shows them): the trend at each bucket, the forecast point.
        trend:
          timeAxis && card.metric.ui_chart_show_trends && s.trend
            ? data.times.map((t, i) => [t, s.trend![i] ?? null])
            : null,
        forecast: timeAxis && card.metric.ui_chart_show_forecast ? s.forecast : null,
      })),
    );
    section.dataset.state = 'drawn';
  }

  /**
   * Alerts firing now, and (on cards without a time axis to draw them on) the thresholds, as text
   * under the chart; what the card shows is also in `data-markers` (JSON) for tests and readers.
   */
  private markerNote(section: HTMLElement, card: CardModel, hidden: Set<string>, timeAxis: boolean): void {
    const m = card.metric;
    const markers = card.markers;
    if (!markers) return;
    const alerts = m.ui_chart_show_alerts
      ? markers.alerts.filter((a) => a.series_hash === null || !hidden.has(a.series_hash))
      : [];
    const thresholds = m.ui_chart_show_monitors ? markers.thresholds : [];
    section.dataset.markers = JSON.stringify({ alerts, thresholds });
    const lines: string[] = [];
    for (const a of alerts) {
      if (a.end !== null) continue;
      const series = a.series_label === null ? '' : ` (${a.series_label})`;
      lines.push(`Firing: ${a.label}${series} since ${formatTime(a.start, 'minute', this.win.timezone)}`);
    }
    if (!timeAxis) for (const t of thresholds) lines.push(`Threshold: ${thresholdText(t, m)}`);
    if (lines.length === 0) return;
    const note = document.createElement('ul');
    note.className = 'card-markers';
    for (const line of lines) {
      const li = document.createElement('li');
      // textContent: a monitor's name or a series label is shown, never parsed.
      li.textContent = line;
      if (line.startsWith('Firing')) li.className = 'firing';
      note.append(li);
    }
    section.querySelector('.chart')?.after(note);
  }

  private legend(ul: HTMLElement, card: CardModel, data: CardData): void {
    if (data.series.length < 2 && card.metric.ui_chart_type !== 'pie') return;
    data.series.forEach((s, i) => {
      const key = `${card.id}:${s.hash}`;
      const li = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.className = this.hidden.has(key) ? 'legend-item off' : 'legend-item';
      button.dataset.series = s.hash;
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = cssColor(
        seriesColor(card.metric, i, data.series.length, s.color, lastValue(s.values)),
        '#888',
      );
      const label = document.createElement('span');
      label.textContent = s.label;
      button.append(swatch, label);
      button.addEventListener('click', () => {
        if (this.hidden.has(key)) this.hidden.delete(key);
        else this.hidden.add(key);
        this.writeUrl();
        void this.draw(card);
      });
      li.append(button);
      ul.append(li);
    });
  }

  /** Read the cards again for the current window and width, then redraw. */
  reload(): Promise<void> {
    this.loading ??= (async () => {
      try {
        const width = this.fullWidth() || this.dataWidth;
        const params = this.stateParams(false);
        params.set('width', String(Math.min(4096, Math.max(50, width))));
        const path = this.boot.component
          ? `/p/${encodeURIComponent(this.boot.slug)}/c/${encodeURIComponent(this.boot.component)}/data`
          : `/p/${encodeURIComponent(this.boot.slug)}/data`;
        const res = await fetch(`${path}?${params}`, {
          credentials: 'same-origin',
          headers: { accept: 'application/json' },
        });
        const body = await res.json();
        if (!res.ok) throw new Error(body?.error?.message ?? `HTTP ${res.status}`);
        this.cards = body.data.cards;
        this.dataWidth = width;
        document.body.dataset.loadError = '';
        await this.drawAll();
      } catch (err) {
        document.body.dataset.loadError = String((err as Error).message);
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  /** The URL's state: what differs from the page's defaults, and the hidden series. */
  private stateParams(withHidden: boolean): URLSearchParams {
    const p = new URLSearchParams();
    if (this.win.time_range !== this.boot.defaults.time_range || this.win.time_range === 'custom')
      p.set('time_range', this.win.time_range);
    if (this.win.timezone !== this.boot.defaults.timezone) p.set('timezone', this.win.timezone);
    if (this.win.time_range === 'custom' && this.win.start_at && this.win.end_at) {
      p.set('start_at', this.win.start_at);
      p.set('end_at', this.win.end_at);
    }
    if (withHidden && this.hidden.size > 0) p.set('hide', [...this.hidden].join(','));
    return p;
  }

  private writeUrl(): void {
    const q = this.stateParams(true).toString();
    history.replaceState(null, '', `${location.pathname}${q ? `?${q}` : ''}`);
  }

  private controls(): void {
    const range = document.getElementById('range') as HTMLSelectElement | null;
    const tz = document.getElementById('timezone') as HTMLSelectElement | null;
    const custom = document.getElementById('custom');
    const start = document.getElementById('start') as HTMLInputElement | null;
    const end = document.getElementById('end') as HTMLInputElement | null;
    document.getElementById('controls')?.addEventListener('submit', (e) => e.preventDefault());
    if (tz) {
      const zones =
        (Intl as unknown as { supportedValuesOf?(k: string): string[] }).supportedValuesOf?.('timeZone') ?? [];
      for (const z of ['UTC', ...zones]) {
        if (z === this.win.timezone) continue;
        const o = document.createElement('option');
        o.value = z;
        o.textContent = z;
        tz.append(o);
      }
      tz.addEventListener('change', () => {
        this.win = { ...this.win, timezone: tz.value };
        this.writeUrl();
        void this.reload();
      });
    }
    if (start && end && this.win.start_at && this.win.end_at) {
      start.value = this.win.start_at.slice(0, 16);
      end.value = this.win.end_at.slice(0, 16);
    }
    range?.addEventListener('change', () => {
      if (range.value === 'custom') {
        custom?.removeAttribute('hidden');
        return;
      }
      custom?.setAttribute('hidden', '');
      this.win = { ...this.win, time_range: range.value, start_at: null, end_at: null };
      this.writeUrl();
      void this.reload();
    });
    document.getElementById('apply')?.addEventListener('click', () => {
      if (!start?.value || !end?.value) return;
      // datetime-local has no zone: read as UTC, like the API's ISO strings without an offset.
      this.win = {
        ...this.win,
        time_range: 'custom',
        start_at: new Date(`${start.value}:00Z`).toISOString(),
        end_at: new Date(`${end.value}:00Z`).toISOString(),
      };
      this.writeUrl();
      void this.reload();
    });
  }

  /** Live refresh: SSE `data` redraws, `page` reloads; polling every minute when the stream fails. */
  private live(): void {
    const dot = document.getElementById('live');
    let poll: number | null = null;
    const startPolling = () => {
      if (poll !== null) return;
      poll = window.setInterval(() => void this.reload(), POLL_MS);
      if (dot) dot.dataset.live = 'polling';
    };
    if (typeof EventSource === 'undefined') return startPolling();
    const es = new EventSource(`/p/${encodeURIComponent(this.boot.slug)}/events`);
    es.addEventListener('hello', () => {
      if (dot) dot.dataset.live = 'sse';
      if (poll !== null) {
        clearInterval(poll);
        poll = null;
      }
    });
    es.addEventListener('data', () => void this.reload());
    es.addEventListener('page', () => location.reload());
    es.addEventListener('error', () => {
      if (es.readyState === EventSource.CLOSED) startPolling();
    });
  }
}

function debounce(fn: () => void, ms: number): () => void {
  let t: number | undefined;
  return () => {
    clearTimeout(t);
    t = window.setTimeout(fn, ms);
  };
}

/** The sign-in form of a private page: POST /web/session sets the HttpOnly cookie, then the page loads again. */
function signIn(): void {
  const form = document.getElementById('sign-in') as HTMLFormElement | null;
  const error = document.getElementById('sign-in-error');
  form?.addEventListener('submit', async (e) => {
    e.preventDefault();
    const fd = new FormData(form);
    const res = await fetch('/web/session', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: fd.get('email'), password: fd.get('password') }),
    });
    if (res.ok) {
      location.reload();
      return;
    }
    const body = await res.json().catch(() => null);
    if (error) {
      error.textContent = body?.error?.message ?? `Sign-in failed (${res.status})`;
      error.removeAttribute('hidden');
    }
  });
}

const boot = readJson<PageBoot>('sluice-page');
if (boot) void new Page(boot).start();
else if (document.getElementById('sign-in')) signIn();
