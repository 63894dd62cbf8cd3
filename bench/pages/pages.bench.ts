/**
 * The dashboard (`npm run bench:pages`; targets in issue 25, figures in docs/benchmarks.md "Pages"):
 * a child server with `PAGES_BENCH_DAYS` days of history (records of three paths each minute) and
 * live records arriving all along, seven metrics on it (line, area, bar, scatter, stat, uptime, pie)
 * and a public page of `PAGES_BENCH_CARDS` cards cycling through them over `last_7_days`. Then
 *  1. the server's answer for the page (HTML with every card's data inline, gzip like a browser):
 *     p50/p99 over `PAGES_BENCH_REQUESTS` requests one after another (the many-viewers case: card
 *     answers reused within the minute), and over `PAGES_BENCH_COLD` requests that each name another
 *     time zone (nothing reusable: every card aggregated);
 *  2. first paint in headless Chromium (playwright-core, /usr/bin/chromium or SLUICE_CHROMIUM): from
 *     navigation start to the page's `data-ready-ms` marker (set once every card has drawn), each of
 *     `PAGES_BENCH_PAINTS` loads in a fresh browser context (empty cache);
 *  3. refresh traffic of one open page: every byte the browser receives (SSE stream and the data
 *     reads it triggers, headers included; Chrome DevTools Protocol network events) over
 *     `PAGES_BENCH_REFRESH_SECONDS`, scaled to a minute.
 * Targets: p50 ≤ 50 ms, first paint ≤ 1 s, ≤ 50 KB/min. The server's data dir is removed at the end.
 */
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { request } from 'node:http';
import { chromium } from 'playwright-core';
import { BenchServer } from '../e2e/sluice-server.js';
import { quantile } from '../ingest/load.js';
import { integerKnob } from '../knobs.js';

const KNOBS = {
  PAGES_BENCH_DAYS: 'days of history before now (default 7: the whole last_7_days window)',
  PAGES_BENCH_PER_MINUTE: 'history records per minute (default 3, one per path)',
  PAGES_BENCH_LIVE_PER_SECOND: 'live records sent each second during the measurements (default 5)',
  PAGES_BENCH_CARDS: 'cards on the page (default 12)',
  PAGES_BENCH_REQUESTS: 'sequential requests for the page answer (default 200)',
  PAGES_BENCH_COLD: 'requests each in another time zone, nothing cached (default 20)',
  PAGES_BENCH_PAINTS: 'page loads in Chromium for first paint (default 5)',
  PAGES_BENCH_REFRESH_SECONDS: 'seconds one open page is watched for refresh traffic (default 60)',
};
const days = integerKnob(KNOBS, 'PAGES_BENCH_DAYS', 7, 1, 90);
const perMinute = integerKnob(KNOBS, 'PAGES_BENCH_PER_MINUTE', 3, 1, 1000);
const livePerSecond = integerKnob(KNOBS, 'PAGES_BENCH_LIVE_PER_SECOND', 5, 0, 10_000);
const cardCount = integerKnob(KNOBS, 'PAGES_BENCH_CARDS', 12, 1, 24);
const requests = integerKnob(KNOBS, 'PAGES_BENCH_REQUESTS', 200, 1, 100_000);
const cold = integerKnob(KNOBS, 'PAGES_BENCH_COLD', 20, 0, 24);
const paints = integerKnob(KNOBS, 'PAGES_BENCH_PAINTS', 5, 1, 100);
const refreshSeconds = integerKnob(KNOBS, 'PAGES_BENCH_REFRESH_SECONDS', 60, 1, 3600);
const CHROMIUM = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'];
const PATHS = ['/', '/checkout', '/search'];
const MIN = 60_000;

const say = (s: string) => process.stdout.write(`${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const ms = (v: number) => `${v.toFixed(1)} ms`;

/** POST NDJSON records to the ingest endpoint; throws unless 202. */
async function send(server: BenchServer, records: object[]): Promise<void> {
  const res = await fetch(`${server.url}${server.ingestPath}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson' },
    body: `${records.map((r) => JSON.stringify(r)).join('\n')}\n`,
  });
  await res.body?.cancel();
  if (res.status !== 202) throw new Error(`ingest answered ${res.status}`);
}

async function until(what: string, check: () => Promise<boolean>, limitMs = 300_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (Date.now() < end) {
    if (await check()) return;
    await sleep(250);
  }
  throw new Error(`timed out waiting: ${what}`);
}

/** One GET with `accept-encoding: gzip`, timed to the last byte: [ms, bytes on the wire]. */
function timedGet(url: string): Promise<[number, number]> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    request(url, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
      let n = 0;
      res.on('data', (c: Buffer) => (n += c.length));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve([performance.now() - t, n])
          : reject(new Error(`${url} answered ${res.statusCode}`)),
      );
    })
      .on('error', reject)
      .end();
  });
}

function record(t: number, i: number): object {
  const path = PATHS[i % PATHS.length]!;
  return {
    path,
    duration: 20 + ((t / MIN + i * 7) % 60),
    ok: (t / MIN + i) % 97 === 0 ? 0 : 1,
    ...(t ? { timestamp: new Date(t).toISOString() } : {}),
  };
}

if (!existsSync(CHROMIUM)) {
  say(`pages bench: no browser at ${CHROMIUM} (apt-get install -y chromium, or SLUICE_CHROMIUM): not run`);
  process.exit(1);
}

const server = await BenchServer.start(2);
let live: NodeJS.Timeout | undefined;
const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
try {
  const p = `/v1/projects/${server.projectId}`;
  const view = await server.api('POST', `${p}/views`, {
    name: 'Requests',
    collection_id: server.collectionId,
    transform_mode: 'manual',
    transform_script: 'function transform(r) { return { path: r.path, duration: r.duration, ok: r.ok }; }',
    output_schema: [
      { name: 'path', type: 'string' },
      { name: 'duration', type: 'number' },
      { name: 'ok', type: 'number' },
    ],
  });

  // History first (no metric yet, so nothing is late: each metric's backfill counts all of it).
  const now = Date.now();
  const from = Math.floor((now - days * 24 * 60 * MIN) / MIN) * MIN;
  const t0 = performance.now();
  let batch: object[] = [];
  let sent = 0;
  for (let t = from; t < now - 2 * MIN; t += MIN) {
    for (let i = 0; i < perMinute; i++) batch.push(record(t + i * 100, i));
    if (batch.length >= 5000) {
      await send(server, batch);
      sent += batch.length;
      batch = [];
    }
  }
  if (batch.length) await send(server, batch);
  sent += batch.length;
  await until('the history is processed', async () => {
    const q = await server.queue();
    return q.pending === 0 && q.processing === 0;
  });
  say(`load ${load()}; ${sent} history records over ${days} days in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const metrics = [
    { name: 'Requests by path', group_by: ['path'], ui_chart_type: 'line' },
    {
      name: 'Latency',
      value_field: 'duration',
      ui_chart_value: 'average',
      ui_chart_type: 'area',
      ui_value_unit: 'ms',
      ui_chart_show_trends: true,
    },
    { name: 'Requests', ui_chart_type: 'bar' },
    { name: 'Slowest', value_field: 'duration', ui_chart_value: 'max', ui_chart_type: 'scatter' },
    { name: 'Total', ui_chart_type: 'stat', ui_chart_compact_values: true },
    {
      name: 'Uptime',
      value_field: 'ok',
      ui_chart_value: 'average',
      ui_chart_type: 'uptime',
      empty_bucket_handling: 'gaps',
    },
    { name: 'Share by path', group_by: ['path'], ui_chart_type: 'pie' },
  ];
  const ids: string[] = [];
  for (const m of metrics) ids.push(await server.createMetric({ view_id: view.id, ...m }));
  await server.api('POST', `${p}/metrics/${ids[1]}/monitors`, {
    name: 'Slow',
    chart_value: 'average',
    threshold_value: 70,
  });
  await until('every metric is backfilled', async () => {
    for (const id of ids) {
      const m = await server.metric(id);
      if (m.status !== 'active' || m.backfill_completed_at === null) return false;
    }
    return true;
  });
  say(`metrics backfilled ${((performance.now() - t0) / 1000).toFixed(1)} s after the start`);

  // Live records from now on: the page's data keeps moving, as on a real dashboard.
  if (livePerSecond > 0) {
    let n = 0;
    live = setInterval(() => {
      const records = Array.from({ length: livePerSecond }, () => record(0, n++));
      send(server, records).catch((err) => say(`live ingest failed: ${(err as Error).message}`));
    }, 1000);
  }

  const page = await server.api('POST', `${p}/pages`, {
    name: 'Bench',
    slug: 'bench',
    visibility: 'public',
    time_range: 'last_7_days',
  });
  for (let i = 0; i < cardCount; i++)
    await server.api('POST', `${p}/pages/${page.id}/components`, {
      metric_id: ids[i % ids.length],
      ui_card_size: i % 3 === 0 ? '1/1' : '1/2',
    });
  const pageUrl = `${server.url}/p/bench`;

  // 1. The server's answer.
  for (let i = 0; i < 5; i++) await timedGet(pageUrl);
  const times = new Float64Array(requests);
  let bytes = 0;
  for (let i = 0; i < requests; i++) [times[i], bytes] = await timedGet(pageUrl);
  say(
    `server answer, ${cardCount} cards over last_7_days (${(bytes / 1024).toFixed(1)} KB gzip), ${requests} requests: ` +
      `p50 ${ms(quantile(times, 0.5))}, p99 ${ms(quantile(times, 0.99))}, max ${ms(quantile(times, 1))} (target p50 ≤ 50 ms)`,
  );
  if (cold > 0) {
    const coldTimes = new Float64Array(cold);
    // Etc/GMT±n: a zone no request asked before, so no card answer can be reused.
    for (let i = 0; i < cold; i++)
      [coldTimes[i]] = await timedGet(
        `${pageUrl}?timezone=${encodeURIComponent(`Etc/GMT${i < 12 ? '-' : '+'}${(i % 12) + 1}`)}`,
      );
    say(
      `server answer, nothing reused (each request in another time zone), ${cold} requests: ` +
        `p50 ${ms(quantile(coldTimes, 0.5))}, p99 ${ms(quantile(coldTimes, 0.99))}, max ${ms(quantile(coldTimes, 1))}`,
    );
  }

  // 2. First paint, each load in a fresh context (nothing cached in the browser).
  const readies = new Float64Array(paints);
  for (let i = 0; i < paints; i++) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const tab = await ctx.newPage();
    await tab.goto(pageUrl);
    await tab.waitForSelector('body[data-state="ready"]', { timeout: 30_000 });
    readies[i] = Number(await tab.evaluate(() => (globalThis as any).document.body.dataset.readyMs));
    const drawn = await tab.$$eval('section.card[data-state="drawn"]', (els) => els.length);
    if (drawn !== cardCount) throw new Error(`${drawn} of ${cardCount} cards drew`);
    await ctx.close();
  }
  say(
    `first paint, every card drawn (ms from navigation start), ${paints} loads: ` +
      `median ${ms(quantile(readies, 0.5))}, max ${ms(quantile(readies, 1))} [${[...readies].map((v) => v.toFixed(0)).join(', ')}] (target ≤ 1000 ms)`,
  );

  // 3. Refresh traffic of one open page: network events from before navigation, counted from the
  // moment every card drew and the stream was live.
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const tab = await ctx.newPage();
  const cdp = await ctx.newCDPSession(tab);
  await cdp.send('Network.enable');
  let counting = false;
  const streamed = new Map<string, number>();
  const finished = new Map<string, number>();
  const urls = new Map<string, string>();
  cdp.on('Network.requestWillBeSent', (e) => urls.set(e.requestId, new URL(e.request.url).pathname));
  // A chunk of a response (the open SSE stream never finishes): its wire size, or its size when the
  // browser reports no wire size for it (an uncompressed stream: the same).
  cdp.on('Network.dataReceived', (e) => {
    if (counting) streamed.set(e.requestId, (streamed.get(e.requestId) ?? 0) + (e.encodedDataLength || e.dataLength));
  });
  // A finished response: its whole wire size, headers included.
  cdp.on('Network.loadingFinished', (e) => {
    if (counting) finished.set(e.requestId, e.encodedDataLength);
  });
  await tab.goto(pageUrl);
  await tab.waitForSelector('body[data-state="ready"]', { timeout: 30_000 });
  await tab.waitForSelector('#live[data-live="sse"]', { timeout: 10_000 });
  const before = new Set(urls.keys());
  counting = true;
  const start = performance.now();
  await sleep(refreshSeconds * 1000);
  counting = false;
  const seconds = (performance.now() - start) / 1000;
  let total = 0;
  let sse = 0;
  for (const [id, n] of streamed) {
    if (finished.has(id)) continue;
    total += n;
    if (urls.get(id)?.endsWith('/events')) sse += n;
  }
  for (const [id, n] of finished) if (!before.has(id)) total += n;
  const reads = [...urls.entries()].filter(([id, u]) => !before.has(id) && u.endsWith('/data')).length;
  say(
    `refresh traffic of one open page over ${seconds.toFixed(0)} s: ${(total / 1024).toFixed(1)} KB ` +
      `(${reads} data reads, ${(sse / 1024).toFixed(2)} KB on the SSE stream) = ${((total * 60) / seconds / 1024).toFixed(1)} KB/min (target ≤ 50 KB/min)`,
  );
  await ctx.close();
  say(`load at the end ${load()}`);
} finally {
  if (live) clearInterval(live);
  await browser.close();
  await server.stop();
}
