import { escapeHtml, jsonForScript } from '../api/http/html.js';
import type { PageRecord } from '../catalog/pages.js';
import { TIME_RANGES } from '../rollup/metric-records.js';
import type { CardModel } from './page-model.js';
import type { CardWindow } from './card-data.js';

/** What the browser code reads from `<script id="sluice-page" type="application/json">`. */
export interface PageBoot {
  /** The page's address in `/p/<…>`: the slug of its short address, or its id. */
  slug: string;
  name: string;
  /** A single card for an iframe (`/p/<slug>/c/<component id>`), else null. */
  component: string | null;
  window: { time_range: string; timezone: string; start_at: string | null; end_at: string | null };
  /** The page's own defaults: a URL that repeats them leaves them out. */
  defaults: { time_range: string; timezone: string };
  hide: string[];
  /** The drawing width the inline data was read at. */
  width: number;
  cards: CardModel[];
  /** Pass to writes made with the session cookie (X-Sluice-CSRF); null when not signed in. */
  csrf: string | null;
}

type Entry = { js: string; css: string | null; preload: string[] } | null;

const RANGE_LABELS: Record<string, string> = {
  last_hour: 'Last hour',
  last_6_hours: 'Last 6 hours',
  today: 'Today',
  last_24_hours: 'Last 24 hours',
  yesterday: 'Yesterday',
  this_week: 'This week',
  last_week: 'Last week',
  this_month: 'This month',
  last_month: 'Last month',
  this_quarter: 'This quarter',
  last_quarter: 'Last quarter',
  this_year: 'This year',
  last_year: 'Last year',
  last_7_days: 'Last 7 days',
  last_30_days: 'Last 30 days',
  last_90_days: 'Last 90 days',
  last_365_days: 'Last 365 days',
  all_time: 'All time',
  custom: 'Custom…',
  next_7_days: 'Next 7 days',
  next_30_days: 'Next 30 days',
  next_90_days: 'Next 90 days',
};

function head(title: string, entry: Entry): string {
  const css = entry?.css ? `<link rel="stylesheet" href="${escapeHtml(entry.css)}">` : '';
  const preload = (entry?.preload ?? []).map((p) => `<link rel="modulepreload" href="${escapeHtml(p)}">`).join('');
  const js = entry ? `<script type="module" src="${escapeHtml(entry.js)}"></script>` : '';
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
    '<meta name="color-scheme" content="light dark"><meta name="referrer" content="same-origin">' +
    `<title>${escapeHtml(title)}</title>${css}${preload}${js}</head>`
  );
}

function card(c: CardModel, embed: boolean): string {
  const size = c.size === '1/2' && !embed ? 'half' : 'full';
  const error = c.error
    ? `<p class="card-error" data-error-code="${escapeHtml(c.error.code)}">${escapeHtml(c.error.message)}</p>`
    : '';
  const unit = c.metric.ui_value_unit ? ` <span class="unit">(${escapeHtml(c.metric.ui_value_unit)})</span>` : '';
  return (
    `<section class="card card-${size}" id="card-${escapeHtml(c.id)}" data-component-id="${escapeHtml(c.id)}" data-chart-type="${escapeHtml(c.metric.ui_chart_type)}" data-state="pending">` +
    `<h2 class="card-title">${escapeHtml(c.metric.name)}${unit}</h2>${error}<div class="chart" role="img" aria-label="${escapeHtml(c.metric.name)}"></div><ul class="legend"></ul></section>`
  );
}

/**
 * A page (or one card of it) as HTML with its first data inline, so every card draws without a
 * request of its own (docs/pages.md, "The dashboard"). Every text from the page or its metrics is
 * escaped here, and the inline data is JSON that no value can break out of.
 */
export function renderPage(page: PageRecord, boot: PageBoot, entry: Entry): string {
  const embed = boot.component !== null;
  const ranges = TIME_RANGES.map(
    (r) =>
      `<option value="${r}"${r === boot.window.time_range ? ' selected' : ''}>${escapeHtml(RANGE_LABELS[r] ?? r)}</option>`,
  ).join('');
  const controls = embed
    ? ''
    : '<form class="controls" id="controls">' +
      `<label>Range <select name="time_range" id="range">${ranges}</select></label>` +
      `<span class="custom" id="custom"${boot.window.time_range === 'custom' ? '' : ' hidden'}><label>From <input type="datetime-local" id="start" step="60"></label><label>To <input type="datetime-local" id="end" step="60"></label><button type="button" id="apply">Apply</button></span>` +
      `<label>Time zone <select name="timezone" id="timezone"><option value="${escapeHtml(boot.window.timezone)}" selected>${escapeHtml(boot.window.timezone)}</option></select></label>` +
      '<span class="live" id="live" data-live="off" title="Live refresh">●</span></form>';
  const header = embed
    ? ''
    : `<header class="page-head"><h1>${escapeHtml(page.name)}</h1>${page.description ? `<p class="description">${escapeHtml(page.description)}</p>` : ''}${controls}</header>`;
  const empty = boot.cards.length === 0 ? '<p class="empty">This page has no cards yet.</p>' : '';
  const noBuild = entry
    ? ''
    : '<p class="card-error">The page scripts are not built on this server (npm run build).</p>';
  return (
    head(page.name, entry) +
    `<body class="${embed ? 'embed' : 'page'}">${header}${noBuild}<main class="grid" id="grid">${empty}${boot.cards.map((c) => card(c, embed)).join('')}</main>` +
    `<script type="application/json" id="sluice-page">${jsonForScript(boot)}</script></body></html>`
  );
}

/** A private page's answer without a session: a sign-in form (docs/pages.md, "Access"). */
export function renderSignIn(slug: string, entry: Entry): string {
  return (
    head('Sign in', entry) +
    '<body class="sign-in"><main class="sign-in-box"><h1>Sign in</h1><p>This page is private. Sign in with an account of its team.</p>' +
    '<form id="sign-in" method="post"><label>Email <input type="email" name="email" autocomplete="username" required></label>' +
    '<label>Password <input type="password" name="password" autocomplete="current-password" required></label>' +
    '<button type="submit">Sign in</button><p class="card-error" id="sign-in-error" hidden></p></form></main>' +
    `<script type="application/json" id="sluice-sign-in">${jsonForScript({ slug })}</script></body></html>`
  );
}

/** The viewer's window as the boot data carries it. */
export function bootWindow(w: Omit<CardWindow, 'widthPx'>) {
  return {
    time_range: w.timeRange,
    timezone: w.timeZone,
    start_at: w.customStart !== undefined ? new Date(w.customStart).toISOString() : null,
    end_at: w.customEnd !== undefined ? new Date(w.customEnd).toISOString() : null,
  };
}
