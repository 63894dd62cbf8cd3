/**
 * Monitors under ingest (`npm run bench:monitors`; targets of issue 23, docs/benchmarks.md "Monitors"):
 * a child server (SLUICE_ALLOW_PRIVATE_TARGETS=1, a test CA trusted through NODE_EXTRA_CA_CERTS), a
 * metric of `MONITOR_BENCH_SERIES` series (host) over a view of live records, then
 *  1. ingest alone for `MONITOR_BENCH_SECONDS` (records/s);
 *  2. `MONITOR_BENCH_MONITORS` active every-minute monitors — mixed scopes (total, any_series,
 *     each_series), chart values (count, max, p95, average), windows of 1 to 5 minutes, thresholds
 *     spread so some fire — of which `MONITOR_BENCH_PROBES` are probes (max > 2000, a value normal
 *     records never reach, with a webhook channel to a local HTTPS receiver); the same ingest again,
 *     and meanwhile, each minute M:
 *     - when the metric's data became complete through M (`complete_through_at`, polled every 200 ms);
 *     - every other minute a probe record (latency 5000) a few seconds after M: the probes' alert opens
 *       at slot M + 1 (the first slot whose window holds it) and closes at M + 2;
 *     - at M + 50 s every monitor is read: was slot M evaluated within its minute, and when.
 * Measured: ingest ratio (target ≥ 0.9); evaluation lag after the slot (target p99 < 5 s) and after
 * the data completed; evaluations finished within their minute (target: all); alert opened after the
 * first slot that sees complete data (target p99 ≤ 5 s); webhook at the receiver after the alert
 * opened (target ≤ 2 s). It needs real minutes (cron slots are wall-clock minutes): with the defaults
 * about 7 minutes.
 */
import { loadavg } from 'node:os';
import { BenchServer } from '../e2e/sluice-server.js';
import { httpLoad, quantile } from '../ingest/load.js';
import { integerKnob, refuseOptions } from '../knobs.js';
import { startHttpsServer, testCa } from '../../test/helpers/test-ca.js';

const KNOBS = {
  MONITOR_BENCH_MONITORS: 'monitors to create, probes included (default 1000)',
  MONITOR_BENCH_PROBES: 'probe monitors among them, with a webhook channel (default 10)',
  MONITOR_BENCH_SERIES: 'series of the metric (default 10)',
  MONITOR_BENCH_SECONDS:
    'seconds of the ingest phase with monitors (default 180: at least two sampled minutes, one probe)',
  MONITOR_BENCH_ALONE_SECONDS: 'seconds of the ingest phase without monitors (default: MONITOR_BENCH_SECONDS)',
  MONITOR_BENCH_CONNECTIONS: 'ingest connections (default 8)',
  MONITOR_BENCH_WARMUP_SECONDS: 'untimed ingest before the first phase: JIT, worker threads, DuckDB (default 15)',
};
const MIN = 60_000;
/** When in each minute the monitors are read: their slot's evaluation should be long done. */
const SAMPLE_AT_MS = 50_000;
/** When in a minute the probe record is sent (after the slot that closes the previous probe's alert). */
const PROBE_AT_MS = 5_000;
/** A latency value normal records never reach (they are 0–999): only a probe makes the probes fire. */
const PROBE_VALUE = 5000;

let monitors: number;
let probes: number;
let series: number;
let seconds: number;
let aloneSeconds: number;
let connections: number;
let warmup: number;
try {
  monitors = integerKnob(KNOBS, 'MONITOR_BENCH_MONITORS', 1000, 1, 1000);
  probes = integerKnob(KNOBS, 'MONITOR_BENCH_PROBES', Math.min(10, monitors), 0, monitors);
  series = integerKnob(KNOBS, 'MONITOR_BENCH_SERIES', 10, 1, 1000);
  seconds = integerKnob(KNOBS, 'MONITOR_BENCH_SECONDS', 180, 10, 3600);
  aloneSeconds = integerKnob(KNOBS, 'MONITOR_BENCH_ALONE_SECONDS', seconds, 10, 3600);
  connections = integerKnob(KNOBS, 'MONITOR_BENCH_CONNECTIONS', 8, 1, 256);
  warmup = integerKnob(KNOBS, 'MONITOR_BENCH_WARMUP_SECONDS', 15, 0, 600);
} catch (err) {
  refuseOptions('bench:monitors', KNOBS, err);
}
const say = (s: string) => process.stdout.write(`${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const iso = (t: number) => new Date(t).toISOString();
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const body = Buffer.from(
  `${Array.from({ length: 500 }, (_, i) => JSON.stringify({ host: `h${i % series}`, latency: (i * 37) % 1000 })).join('\n')}\n`,
);

/** p50 / p99 / max of samples in ms, as text. */
function summary(samples: number[]): string {
  if (samples.length === 0) return 'no samples';
  const s = Float64Array.from(samples);
  return `p50 ${quantile(s, 0.5).toFixed(0)} ms, p99 ${quantile(s, 0.99).toFixed(0)} ms, max ${Math.max(...samples).toFixed(0)} ms (${samples.length} samples)`;
}

// The child inherits these: webhooks to the local receiver (loopback, a test CA) are allowed.
process.env.SLUICE_ALLOW_PRIVATE_TARGETS = '1';
process.env.NODE_EXTRA_CA_CERTS = testCa().caPath;
/** alert id → when its alert.opened reached the receiver (Date.now()). */
const hooks = new Map<string, number>();
const receiver = await startHttpsServer((req, res) => {
  let text = '';
  req.on('data', (c) => (text += c));
  req.on('end', () => {
    const at = Date.now();
    try {
      const event = JSON.parse(text);
      if (event.type === 'alert.opened') hooks.set(event.data.alert.id, at);
    } catch {
      // not an event of ours: answered anyway
    }
    res.writeHead(204).end();
  });
});
const server = await BenchServer.start(2);
try {
  const p = `/v1/projects/${server.projectId}`;
  const view = await server.api('POST', `${p}/views`, {
    name: 'Latency',
    collection_id: server.collectionId,
    transform_mode: 'manual',
    transform_script: 'function transform(r) { return { host: r.host, latency: r.latency }; }',
    output_schema: [
      { name: 'host', type: 'string' },
      { name: 'latency', type: 'number' },
    ],
  });
  const metricId = await server.createMetric({
    name: 'Latency',
    view_id: view.id,
    group_by: ['host'],
    value_field: 'latency',
  });
  say(
    `load ${load()}; ${monitors} monitors (${probes} probes), ${series} series, ingest ${aloneSeconds} s alone then ${seconds} s with monitors, ${connections} connections`,
  );
  const ingestPhase = async (seconds: number) => {
    const r = await httpLoad({
      port: server.port,
      path: server.ingestPath,
      body,
      contentType: 'application/x-ndjson',
      connections,
      durationMs: seconds * 1000,
    });
    return (r.ok * 500) / r.seconds;
  };
  // Untimed: the first seconds of a fresh server (JIT, worker threads, the view's first files) would
  // count against the phase without monitors only.
  if (warmup > 0) await ingestPhase(warmup);
  const alone = await ingestPhase(aloneSeconds);
  say(`ingest alone: ${Math.round(alone)} records/s`);

  const channel = await server.api('POST', `${p}/notification_channels`, {
    name: 'Bench receiver',
    type: 'webhook',
    url: receiver.url('/hook'),
  });
  const scopes = ['total', 'any_series', 'each_series'] as const;
  const values = ['count', 'max', 'p95', 'average'] as const;
  const bodies = Array.from({ length: monitors }, (_, i) =>
    i < probes
      ? {
          name: `Probe ${i}`,
          chart_value: 'max',
          scope: 'total',
          time_window_minutes: 1,
          operator: 'gt',
          threshold_value: PROBE_VALUE / 2,
          notification_channel_ids: [channel.id],
        }
      : {
          name: `Bench ${i}`,
          chart_value: values[i % values.length],
          scope: scopes[i % scopes.length],
          time_window_minutes: 1 + (i % 5),
          threshold_value: (i * 97) % 1000,
        },
  );
  const ids: string[] = new Array(monitors);
  for (let i = 0; i < monitors; i += 8)
    await Promise.all(
      bodies.slice(i, i + 8).map(async (b, k) => {
        ids[i + k] = (await server.api('POST', `${p}/metrics/${metricId}/monitors`, b)).id;
      }),
    );
  const probeIds = new Set(ids.slice(0, probes));

  /** When the metric's data became complete through `m` (null: not within the minute). */
  const completeAt = new Map<number, number | null>();
  const waitComplete = async (m: number): Promise<number | null> => {
    const path = server.aggregationPath(metricId, {
      start_at: iso(m - MIN),
      end_at: iso(m),
      interval: 'minute',
      values: 'count',
      coverage_mode: 'strict',
    });
    while (Date.now() < m + MIN) {
      const a = await server.api('GET', path);
      if (a.complete_through_at !== null && Date.parse(a.complete_through_at) >= m) return Date.now();
      await sleep(200);
    }
    return null;
  };
  const afterSlot: number[] = [];
  const afterComplete: number[] = [];
  const opened: number[] = [];
  const webhook: number[] = [];
  let sampled = 0;
  let late = 0;
  let probeMisses = 0;
  let hookMisses = 0;
  const completeLags: string[] = [];
  /** Read every monitor (paged list): was slot `m` evaluated, and when. */
  const sample = async (m: number, probed: boolean) => {
    const done = completeAt.get(m) ?? null;
    for (const mon of await server.list(`${p}/metrics/${metricId}/monitors`)) {
      sampled++;
      if (mon.next_evaluation_at !== iso(m + MIN) || mon.last_evaluated_at === null) {
        late++;
        if (probed && probeIds.has(mon.id)) probeMisses++;
        continue;
      }
      const evaluated = Date.parse(mon.last_evaluated_at);
      afterSlot.push(evaluated - m);
      if (done !== null) afterComplete.push(evaluated - Math.max(m, done));
      if (!probed || !probeIds.has(mon.id)) continue;
      const alert = mon.recent_alerts[0];
      if (alert?.created_at !== iso(m) || alert.ended_at !== null || done === null) {
        probeMisses++;
        continue;
      }
      // The slot's transaction opened the alert and set last_evaluated_at.
      opened.push(evaluated - Math.max(m, done));
      const hook = hooks.get(alert.id);
      if (hook === undefined) hookMisses++;
      else webhook.push(hook - evaluated);
    }
  };

  const phaseEnd = Date.now() + seconds * 1000;
  const watch = async () => {
    // The first whole minute after the monitors exist; a minute is sampled only if its read fits in the phase.
    let probeSentFor: number | null = null;
    for (let m = Math.ceil(Date.now() / MIN) * MIN; m + SAMPLE_AT_MS + 2000 <= phaseEnd; m += MIN) {
      await sleep(m - Date.now());
      const complete = waitComplete(m).then((t) => {
        completeAt.set(m, t);
        completeLags.push(t === null ? 'never' : `${((t - m) / 1000).toFixed(1)} s`);
      });
      // A probe every other minute: the previous one's alert closes at this slot.
      const probed = probeSentFor === m - MIN;
      if (probes > 0 && !probed && m + MIN + SAMPLE_AT_MS + 2000 <= phaseEnd) {
        await sleep(m + PROBE_AT_MS - Date.now());
        const res = await fetch(`${server.url}${server.ingestPath}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-ndjson' },
          body: `${JSON.stringify({ host: 'h0', latency: PROBE_VALUE })}\n`,
        });
        if (res.status === 202) probeSentFor = m;
        else say(`probe refused at ${iso(Date.now())}: ${res.status}`);
      }
      await complete;
      await sleep(m + SAMPLE_AT_MS - Date.now());
      await sample(m, probed);
    }
  };
  const [withMonitors] = await Promise.all([ingestPhase(seconds), watch()]);
  say(
    `ingest with ${monitors} monitors: ${Math.round(withMonitors)} records/s (ratio ${(withMonitors / alone).toFixed(3)}, target ≥ 0.9)`,
  );
  say(`data complete through each sampled minute after it: ${completeLags.join(', ') || 'no minute sampled'}`);
  say(`evaluations finished within their minute: ${sampled - late} of ${sampled} (target: all)`);
  say(`evaluation lag after the slot: ${summary(afterSlot)} (target p99 < 5000)`);
  say(`evaluation lag after the data completed: ${summary(afterComplete)}`);
  say(
    `probe → alert opened, after the first slot with complete data: ${summary(opened)} (target p99 ≤ 5000)${probeMisses ? `; ${probeMisses} probe evaluations missed` : ''}`,
  );
  say(
    `alert opened → webhook at the receiver: ${summary(webhook)} (target ≤ 2000)${hookMisses ? `; ${hookMisses} not received by the sample` : ''}`,
  );
  say(`load ${load()}`);
} finally {
  await server.stop();
  await receiver.close();
}
