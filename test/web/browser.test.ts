/**
 * The dashboard in a real browser (docs/pages.md): headless Chromium (Debian's `chromium`, driven by
 * playwright-core) loads a page of several chart types after real ingest, and what each card drew —
 * read back from its `data-series` attribute — equals the aggregation API; switching the range
 * redraws from the server; a label carrying `<script>` is drawn as text; a private page refuses
 * without a session and opens after signing in through its form. Screenshots go to test/artifacts/.
 * Skipped, loudly, only when no browser can be had.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { request } from 'node:http';
import { chromium, type Browser, type Page } from 'playwright-core';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';

const CHROMIUM = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../../../test/artifacts/', import.meta.url));
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];
const EVIL = '<script>window.__pwned=1</script>';

const noBrowser = existsSync(CHROMIUM)
  ? false
  : `NO BROWSER: ${CHROMIUM} is missing (apt-get install -y chromium); the browser tests of the dashboard did not run`;
if (noBrowser) console.warn(`\n${'!'.repeat(100)}\n!!! ${noBrowser}\n${'!'.repeat(100)}\n`);

interface DrawnCard {
  id: string;
  type: string;
  state: string;
  interval: string;
  startAt: string;
  endAt: string;
  series: Array<{ hash: string; label: string; hidden: boolean; points: Array<[number, number | null]> }>;
}

async function drawnCards(page: Page): Promise<DrawnCard[]> {
  return page.$$eval('section.card', (els) =>
    els.map((el) => {
      const d = (el as any).dataset;
      return {
        id: d.componentId!,
        type: d.chartType!,
        state: d.state!,
        interval: d.interval ?? '',
        startAt: d.startAt ?? '',
        endAt: d.endAt ?? '',
        series: d.series ? JSON.parse(d.series) : [],
      };
    }),
  );
}

describe('dashboard in headless Chromium', { skip: noBrowser }, () => {
  let srv: TestServer;
  let browser: Browser;
  let metricsPath: string;
  const metrics: Record<string, any> = {};
  let pagesPath: string;
  let projectId: string;

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    srv = await TestServer.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
    const fx = await createIngestKey(srv, 'browser');
    projectId = fx.projectId;
    const q = `key=${fx.secret}&collection=requests`;
    // Three paths (one of them a script), one record each a minute over the last three hours.
    const now = Date.now();
    const start = now - 3 * 3_600_000;
    const paths = ['/a', '/b', EVIL];
    const records = Array.from({ length: 180 * 3 }, (_, i) => ({
      path: paths[i % 3],
      duration: 10 + (i % 50),
      ok: i % 17 === 0 ? 0 : 1,
      timestamp: new Date(start + Math.floor(i / 3) * 60_000 + (i % 3) * 1000).toISOString(),
    }));
    assert.equal(
      (await ingest(srv.url, q, ndjson(records.slice(0, 1)), { 'content-type': 'application/x-ndjson' })).status,
      202,
    );
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    const [collection] = ok(await srv.get(`/v1/projects/${projectId}/collections`));
    const view = ok(
      await srv.post(`/v1/projects/${projectId}/views`, {
        name: 'Requests',
        collection_id: collection.id,
        transform_mode: 'manual',
        transform_script: 'function transform(r) { return { path: r.path, duration: r.duration, ok: r.ok }; }',
        output_schema: [
          { name: 'path', type: 'string' },
          { name: 'duration', type: 'number' },
          { name: 'ok', type: 'number' },
        ],
      }),
      201,
    );
    metricsPath = `/v1/projects/${projectId}/metrics`;
    const make = async (key: string, body: Record<string, unknown>) =>
      (metrics[key] = ok(await srv.post(metricsPath, { view_id: view.id, ...body }), 201));
    await make('line', {
      name: 'Requests by path',
      group_by: ['path'],
      ui_chart_type: 'line',
      ui_chart_show_trends: true,
      ui_chart_show_forecast: true,
    });
    await make('area', {
      name: 'Latency',
      value_field: 'duration',
      ui_chart_value: 'average',
      ui_chart_type: 'area',
      ui_chart_curve: 'smooth',
      ui_value_unit: 'ms',
      ui_chart_y_min: 0,
    });
    await make('bar', {
      name: 'Requests',
      ui_chart_type: 'bar',
      ui_chart_color_mode: 'by_intensity',
      ui_chart_color_base: 'teal',
    });
    await make('pie', { name: 'Share by path', group_by: ['path'], ui_chart_type: 'pie' });
    await make('stat', { name: 'Total', ui_chart_type: 'stat', ui_chart_compact_values: true });
    await make('uptime', {
      name: 'Uptime',
      value_field: 'ok',
      ui_chart_value: 'average',
      ui_chart_type: 'uptime',
      empty_bucket_handling: 'gaps',
    });
    for (let i = 1; i < records.length; i += 100) {
      assert.equal(
        (await ingest(srv.url, q, ndjson(records.slice(i, i + 100)), { 'content-type': 'application/x-ndjson' }))
          .status,
        202,
      );
    }
    assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
    // Wait until every record is counted (bounded).
    const total = `${metricsPath}/${metrics.bar.id}/aggregation?coverage_mode=observed&time_range=last_6_hours&interval=hour`;
    for (let attempt = 0; attempt < 150; attempt++) {
      const a = ok(await srv.get(total));
      const n = Object.values(a.series[0].records as Record<string, number[]>).reduce((s, r) => s + (r[0] ?? 0), 0);
      if (n === records.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    pagesPath = `/v1/projects/${projectId}/pages`;
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
  });

  test('a public page draws every card from the aggregation service; the range switch redraws; <script> labels are text', async () => {
    const page = ok(
      await srv.post(pagesPath, {
        name: `Ops ${EVIL}`,
        slug: 'ops',
        visibility: 'public',
        time_range: 'last_6_hours',
        description: `All of it ${EVIL}`,
      }),
      201,
    );
    const order = ['line', 'area', 'bar', 'pie', 'stat', 'uptime'];
    for (const [i, key] of order.entries())
      ok(
        await srv.post(`${pagesPath}/${page.id}/components`, {
          metric_id: metrics[key].id,
          ui_card_size: i === 0 ? '1/1' : '1/2',
        }),
        201,
      );

    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      await (await fetch(`${srv.url}/p/ops`)).text();
      times.push(Math.round(performance.now() - t));
    }
    console.log(
      `browser: the server's answer for the page (HTML with inline data of ${order.length} cards): ${times.join(', ')} ms`,
    );
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const tab = await ctx.newPage();
    const requested: string[] = [];
    tab.on('request', (r) => requested.push(new URL(r.url()).pathname));
    const errors: string[] = [];
    tab.on('pageerror', (e) => errors.push(String(e)));
    const t0 = Date.now();
    const res = await tab.goto(`${srv.url}/p/ops`);
    assert.equal(res?.status(), 200);
    await tab.waitForSelector('body[data-state="ready"]', { timeout: 15_000 });
    const firstPaintMs = Date.now() - t0;
    const timing = await tab.evaluate(() => {
      const nav = (globalThis as any).performance.getEntriesByType('navigation')[0];
      return {
        ttfb: Math.round(nav.responseStart),
        html: Math.round(nav.responseEnd),
        domReady: Math.round(nav.domContentLoadedEventEnd),
        ready: Number((globalThis as any).document.body.dataset.readyMs),
      };
    });
    console.log(
      `browser: every card drawn ${timing.ready} ms after navigation (server's first byte ${timing.ttfb} ms, HTML ${timing.html} ms, DOM ready ${timing.domReady} ms; ${firstPaintMs} ms seen by the test)`,
    );
    await tab.screenshot({ path: `${ARTIFACTS}page-last_6_hours.png`, fullPage: true });
    assert.deepEqual(errors, []);
    assert.equal(await tab.evaluate(() => (globalThis as any).__pwned), undefined, 'no injected script ran');
    assert.ok(
      requested.every((p) => p.startsWith('/p/ops') || p.startsWith('/assets/')),
      `only Sluice was asked: ${requested.join(', ')}`,
    );
    assert.ok(
      requested.some((p) => p.startsWith('/assets/chart-echarts-')),
      'the pie card loaded ECharts',
    );

    const cards = await drawnCards(tab);
    assert.deepEqual(
      cards.map((c) => c.type),
      order.map((k) => metrics[k].ui_chart_type),
    );
    for (const [i, card] of cards.entries()) {
      assert.equal(card.state, 'drawn', `${card.type} drew`);
      const metric = metrics[order[i]!];
      // The same window and interval asked of the API give exactly the points drawn.
      const api = ok(
        await srv.get(
          `${metricsPath}/${metric.id}/aggregation?start_at=${card.startAt}&end_at=${card.endAt}&interval=${card.interval}`,
        ),
      );
      assert.equal(card.series.length, api.series.length, `${card.type}: series`);
      for (const s of api.series) {
        const drawn = card.series.find((d) => d.hash === s.details.hash);
        assert.ok(drawn, `${card.type}: series ${s.details.label} drawn`);
        assert.equal(drawn.label, s.details.label);
        // Strict coverage answers final buckets only; a minute passing since the page read can make one more final (empty) bucket.
        const last = drawn.points[drawn.points.length - 1]?.[0] ?? Infinity;
        const all = Object.entries(s.records as Record<string, Array<number | null>>).map(
          ([k, v]) => [Date.parse(k), v[0]] as [number, number | null],
        );
        const expected = all.filter(([t]) => t <= last);
        assert.ok(all.length - expected.length <= 1, `${card.type}: at most one bucket became final meanwhile`);
        assert.deepEqual(drawn.points, expected, `${card.type} ${s.details.label}: points`);
      }
      const chartWidth = await tab.$eval(`#card-${card.id} .chart`, (el: any) => el.clientWidth);
      assert.ok(
        card.series[0]!.points.length <= chartWidth,
        `${card.type}: ${card.series[0]!.points.length} points in ${chartWidth} px`,
      );
    }
    const lineCard = cards[0]!;
    assert.ok(
      lineCard.series.some((s) => s.label === EVIL),
      'the <script> path is a series',
    );
    const legendTexts = await tab.$$eval(`#card-${lineCard.id} .legend-item`, (els) => els.map((e) => e.textContent));
    assert.ok(legendTexts.includes(EVIL), 'drawn as text in the legend');
    assert.equal(await tab.$$eval('script', (els) => els.length), 2, 'no script element came from a label');
    assert.equal(lineCard.interval, 'minute', 'six hours in minutes fit the card width');
    // Tooltips show labels too: hover every chart.
    for (const card of cards) {
      const box = await tab.$eval(`#card-${card.id} .chart`, (el: any) => {
        const r = el.getBoundingClientRect();
        return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
      });
      await tab.mouse.move(box.x, box.y);
      await tab.mouse.move(box.x + 20, box.y - 10);
    }
    assert.equal(await tab.evaluate(() => (globalThis as any).__pwned), undefined, 'no tooltip ran a label');
    assert.equal(await tab.$$eval('script', (els) => els.length), 2);

    // Hide a series: kept in the URL.
    await tab.click(`#card-${lineCard.id} .legend-item >> nth=0`);
    assert.match(tab.url(), /hide=comp_/);

    // Switch the range: the cards are read again and redrawn; the URL carries it.
    await tab.selectOption('#range', 'last_7_days');
    await tab.waitForSelector('body[data-time-range="last_7_days"][data-state="ready"]', { timeout: 15_000 });
    await tab.waitForFunction(
      () => (globalThis as any).document.querySelector('section.card')?.getAttribute('data-interval') === 'hour',
      undefined,
      { timeout: 15_000 },
    );
    assert.match(tab.url(), /time_range=last_7_days/);
    const week = await drawnCards(tab);
    const api = ok(
      await srv.get(
        `${metricsPath}/${metrics.line.id}/aggregation?start_at=${week[0]!.startAt}&end_at=${week[0]!.endAt}&interval=hour`,
      ),
    );
    const sum = (pts: Array<[number, number | null]>) => pts.reduce((n, [, v]) => n + (v ?? 0), 0);
    assert.equal(
      week[0]!.series.reduce((n, s) => n + sum(s.points), 0),
      api.series.reduce(
        (n: number, s: any) =>
          n + Object.values(s.records as Record<string, number[]>).reduce((m, r) => m + (r[0] ?? 0), 0),
        0,
      ),
    );
    assert.ok(
      week[0]!.series.find((s) => s.hidden),
      'the hidden series stays hidden',
    );
    await tab.screenshot({ path: `${ARTIFACTS}page-last_7_days.png`, fullPage: true });

    // Switch the zone: buckets follow it (Iran is UTC+3:30, so its hours start at :30 UTC).
    await tab.selectOption('#timezone', 'Asia/Tehran');
    await tab.waitForFunction(
      () =>
        (globalThis as any).document
          .querySelector('section.card')
          ?.getAttribute('data-start-at')
          ?.endsWith(':30:00.000Z'),
      undefined,
      { timeout: 15_000 },
    );
    await tab.waitForSelector('body[data-timezone="Asia/Tehran"][data-state="ready"]');
    assert.match(tab.url(), /timezone=Asia%2FTehran/);
    const zoned = (await drawnCards(tab))[0]!;
    const zonedApi = ok(
      await srv.get(
        `${metricsPath}/${metrics.line.id}/aggregation?start_at=${zoned.startAt}&end_at=${zoned.endAt}&interval=hour&timezone=Asia/Tehran`,
      ),
    );
    assert.deepEqual(
      zoned.series.map((s) => s.points.length).sort(),
      zonedApi.series.map((s: any) => Object.keys(s.records).length).sort(),
    );

    // The link shows what its sender saw.
    const shared = await ctx.newPage();
    await shared.goto(tab.url());
    await shared.waitForSelector('body[data-state="ready"]');
    assert.equal(await shared.$eval('#range', (el: any) => el.value), 'last_7_days');
    assert.equal((await drawnCards(shared))[0]!.series.filter((s) => s.hidden).length, 1);

    // What one redraw costs on the wire (a live page redraws at most once per page-watch interval, 15 s).
    const bytes = await new Promise<number>((resolve, reject) => {
      request(
        `${srv.url}/p/ops/data?time_range=last_7_days&width=1200`,
        { headers: { 'accept-encoding': 'gzip' } },
        (res) => {
          let n = 0;
          res.on('data', (c: Buffer) => (n += c.length));
          res.on('end', () => resolve(n));
        },
      )
        .on('error', reject)
        .end();
    });
    console.log(
      `browser: one redraw of ${order.length} cards over last_7_days reads ${(bytes / 1024).toFixed(1)} KB gzip; at most 4 a minute: ${((4 * bytes) / 1024).toFixed(1)} KB/min`,
    );

    // A phone: the cards stack.
    await tab.setViewportSize({ width: 390, height: 844 });
    await tab.waitForTimeout(300);
    const xs = await tab.$$eval('section.card', (els) => els.map((e) => Math.round(e.getBoundingClientRect().left)));
    assert.equal(new Set(xs).size, 1, 'one column on a phone');
    assert.ok(
      await tab.evaluate(() => (globalThis as any).document.documentElement.scrollWidth <= 390),
      'nothing wider than the phone',
    );
    await tab.screenshot({ path: `${ARTIFACTS}page-phone.png`, fullPage: true });
    await ctx.close();
  });

  test('alert periods, monitor thresholds, trends and forecast are drawn; a <script> monitor name is text', async () => {
    const s = srv.sluice.services;
    const monitor = ok(
      await srv.post(`${metricsPath}/${metrics.area.id}/monitors`, {
        name: `Slow ${EVIL}`,
        chart_value: 'average',
        threshold_value: 40,
      }),
      201,
    );
    // One period that ended an hour ago and one still firing, recorded as an evaluation records them.
    const m = s.monitors.get(projectId, monitor.id)!;
    const now = Date.now();
    const opened = (from: number, to: number | null) => ({
      key: '__total__',
      series_hash: '__total__',
      series_label: null,
      created_at: new Date(from).toISOString(),
      ended_at: to === null ? null : new Date(to).toISOString(),
      trigger_value: 41,
    });
    const res = await s.monitors.recordSlot(
      m,
      now,
      {
        states: [],
        removed: [],
        closed: [],
        opened: [opened(now - 2 * 3_600_000, now - 3_600_000), opened(now - 600_000, null)],
      },
      s.metrics.get(projectId, metrics.area.id)!,
    );
    assert.equal(res.applied, true);
    const page = ok(
      await srv.post(pagesPath, { name: 'Marked', slug: 'marked', visibility: 'public', time_range: 'last_6_hours' }),
      201,
    );
    const area = ok(await srv.post(`${pagesPath}/${page.id}/components`, { metric_id: metrics.area.id }), 201);
    // A gauge of the same value: its dial shows the threshold; text lists it (no time axis to draw bands on).
    const gaugeMetric = ok(
      await srv.post(metricsPath, {
        view_id: metrics.area.view_id,
        name: 'Latency now',
        value_field: 'duration',
        ui_chart_value: 'average',
        ui_chart_type: 'gauge',
        ui_chart_show_alerts: false,
      }),
      201,
    );
    ok(
      await srv.post(`${metricsPath}/${gaugeMetric.id}/monitors`, {
        name: `Gauge ${EVIL}`,
        chart_value: 'average',
        operator: 'gte',
        threshold_value: 30,
      }),
      201,
    );
    const gauge = ok(
      await srv.post(`${pagesPath}/${page.id}/components`, { metric_id: gaugeMetric.id, ui_card_size: '1/2' }),
      201,
    );
    // A calendar: the days its alerts fired on are outlined.
    const calendarMetric = ok(
      await srv.post(metricsPath, { view_id: metrics.area.view_id, name: 'Daily', ui_chart_type: 'calendar' }),
      201,
    );
    const calMonitor = ok(
      await srv.post(`${metricsPath}/${calendarMetric.id}/monitors`, {
        name: 'Busy',
        chart_value: 'count',
        threshold_value: 1,
      }),
      201,
    );
    assert.equal(
      (
        await s.monitors.recordSlot(
          s.monitors.get(projectId, calMonitor.id)!,
          now,
          { states: [], removed: [], closed: [], opened: [opened(now - 3_600_000, now - 3_000_000)] },
          s.metrics.get(projectId, calendarMetric.id)!,
        )
      ).applied,
      true,
    );
    const calendar = ok(
      await srv.post(`${pagesPath}/${page.id}/components`, { metric_id: calendarMetric.id, ui_card_size: '1/2' }),
      201,
    );
    const line = ok(await srv.post(`${pagesPath}/${page.id}/components`, { metric_id: metrics.line.id }), 201);
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const tab = await ctx.newPage();
    const errors: string[] = [];
    tab.on('pageerror', (e) => errors.push(String(e)));
    await tab.goto(`${srv.url}/p/marked`);
    await tab.waitForSelector('body[data-state="ready"]');
    assert.deepEqual(errors, []);
    const markers = JSON.parse((await tab.$eval(`#card-${area.id}`, (el: any) => el.dataset.markers)) ?? 'null');
    assert.deepEqual(markers.thresholds, [{ value: 40, operator: 'gt', label: `Slow ${EVIL}` }]);
    assert.deepEqual(
      markers.alerts.map((a: any) => [a.start, a.end]),
      [
        [now - 2 * 3_600_000, now - 3_600_000],
        [now - 600_000, null],
      ],
    );
    const drawn = await tab.$eval(`#card-${area.id} .chart`, (el: any) => ({ ...el.dataset }));
    assert.equal(drawn.drawnAlerts, '2', 'two alert bands on the chart');
    assert.equal(drawn.drawnThresholds, '1', 'one threshold line');
    const note = await tab.$$eval(`#card-${area.id} .card-markers li.firing`, (els) => els.map((e) => e.textContent));
    assert.equal(note.length, 1);
    assert.ok(note[0]!.startsWith(`Firing: Slow ${EVIL}`), note[0]!);
    const gaugeCard = await tab.$eval(`#card-${gauge.id}`, (el: any) => ({
      state: el.dataset.state,
      markers: JSON.parse(el.dataset.markers),
      notes: [...el.querySelectorAll('.card-markers li')].map((li: any) => li.textContent),
    }));
    assert.equal(gaugeCard.state, 'drawn');
    assert.deepEqual(gaugeCard.markers, {
      alerts: [],
      thresholds: [{ value: 30, operator: 'gte', label: `Gauge ${EVIL}` }],
    });
    assert.deepEqual(gaugeCard.notes, [`Threshold: Gauge ${EVIL} ≥ 30`]);
    const alertDay = new Date(now - 3_600_000).toISOString().slice(0, 10);
    assert.equal(
      await tab.$eval(`#card-${calendar.id} .chart`, (el: any) => el.dataset.alertDays),
      [...new Set([alertDay, new Date(now - 3_000_000).toISOString().slice(0, 10)])].join(','),
      'the alert day is outlined',
    );
    assert.equal(await tab.evaluate(() => (globalThis as any).__pwned), undefined, 'no monitor name ran');
    assert.equal(await tab.$$eval('script', (els) => els.length), 2);

    // Trends and forecast: drawn, and equal to what the aggregation service answers.
    const lineDrawn = await tab.$eval(`#card-${line.id} .chart`, (el: any) => ({ ...el.dataset }));
    const lineCard = (await drawnCards(tab)).find((c) => c.id === line.id)! as any;
    assert.equal(lineDrawn.drawnTrends, String(lineCard.series.length), 'a trend per series');
    assert.equal(lineDrawn.drawnForecasts, String(lineCard.series.length), 'a forecast per series');
    const api = ok(
      await srv.get(
        `${metricsPath}/${metrics.line.id}/aggregation?start_at=${lineCard.startAt}&end_at=${lineCard.endAt}&interval=${lineCard.interval}`,
      ),
    );
    for (const s of api.series) {
      const d = lineCard.series.find((x: any) => x.hash === s.details.hash);
      assert.ok(s.regression && d.trend, `${s.details.label}: a trend`);
      assert.equal(d.trend.length, d.points.length);
      const first = d.trend[0]![1];
      assert.ok(Number.isFinite(first), 'the trend has values');
      assert.ok(d.forecast && s.forecast, `${s.details.label}: a forecast`);
      assert.ok(Math.abs(Date.parse(d.forecast.at) - Date.parse(s.forecast.at)) < 120_000, 'the same forecast time');
    }
    await tab.screenshot({ path: `${ARTIFACTS}markers.png`, fullPage: true });
    await ctx.close();
  });

  test('a page of line charts loads no ECharts; a card embeds alone', async () => {
    const page = ok(
      await srv.post(pagesPath, { name: 'Lines', slug: 'lines', visibility: 'public', time_range: 'last_6_hours' }),
      201,
    );
    const c = ok(await srv.post(`${pagesPath}/${page.id}/components`, { metric_id: metrics.line.id }), 201);
    ok(await srv.post(`${pagesPath}/${page.id}/components`, { metric_id: metrics.area.id }), 201);
    const ctx = await browser.newContext({ colorScheme: 'dark' });
    const tab = await ctx.newPage();
    const requested: string[] = [];
    tab.on('request', (r) => requested.push(new URL(r.url()).pathname));
    await tab.goto(`${srv.url}/p/lines`);
    await tab.waitForSelector('body[data-state="ready"]');
    assert.ok(!requested.some((p) => p.includes('echarts')), requested.join(', '));
    const bg = await tab.evaluate(
      () => (globalThis as any).getComputedStyle((globalThis as any).document.body).backgroundColor,
    );
    assert.equal(bg, 'rgb(11, 15, 23)', 'dark mode follows prefers-color-scheme');
    await tab.screenshot({ path: `${ARTIFACTS}lines-dark.png`, fullPage: true });
    await tab.goto(`${srv.url}/p/lines/c/${c.id}`);
    await tab.waitForSelector('body[data-state="ready"]');
    assert.equal((await drawnCards(tab)).length, 1);
    assert.equal(await tab.$('#controls'), null, 'an embedded card has no page controls');
    await tab.screenshot({ path: `${ARTIFACTS}embed.png` });
    await ctx.close();
  });

  test('a private page refuses without a session and opens after signing in on it', async () => {
    const page = ok(await srv.post(pagesPath, { name: 'Private', slug: 'private', time_range: 'last_6_hours' }), 201);
    ok(await srv.post(`${pagesPath}/${page.id}/components`, { metric_id: metrics.bar.id }), 201);
    const ctx = await browser.newContext();
    const tab = await ctx.newPage();
    const res = await tab.goto(`${srv.url}/p/private`);
    assert.equal(res?.status(), 401);
    assert.equal(await tab.$('section.card'), null, 'nothing of the page without a session');
    await tab.fill('input[name="email"]', 'admin@localhost');
    await tab.fill('input[name="password"]', 'wrong');
    await tab.click('button[type="submit"]');
    await tab.waitForSelector('#sign-in-error:not([hidden])');
    await tab.fill('input[name="password"]', 'admin-password');
    await Promise.all([tab.waitForNavigation(), tab.click('button[type="submit"]')]);
    await tab.waitForSelector('body[data-state="ready"]');
    assert.equal((await drawnCards(tab))[0]!.state, 'drawn');
    const cookies = await ctx.cookies();
    const session = cookies.find((c) => c.name === 'sluice_session');
    assert.ok(session?.httpOnly, 'the session cookie is HttpOnly');
    assert.equal(session.sameSite, 'Lax');
    assert.equal(await tab.evaluate(() => (globalThis as any).document.cookie), '', 'page scripts cannot read it');
    await tab.screenshot({ path: `${ARTIFACTS}private-signed-in.png` });
    await ctx.close();
  });
});
