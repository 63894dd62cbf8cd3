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
 *  3. with `MONITOR_BENCH_RATE`, the same again under a paced (open-loop) ingest at that rate.
 * Ingest is closed loop (closed-loop.ts: 503s waited out and resent) but for that paced phase; the
 * queue (oldest spooled entry, spooled records, merge backlog) is sampled from GET /metrics.
 * Measured: ingest ratio (target ≥ 0.9); evaluation lag after the slot (target p99 < 5 s) and after
 * the data completed; evaluations finished within their minute (target: all); alert opened after the
 * first slot that sees complete data (target p99 ≤ 5 s); webhook at the receiver after the alert
 * opened (target ≤ 2 s). It needs real minutes (cron slots are wall-clock minutes): with the defaults
 * about 7 minutes.
 */
import { loadavg } from 'node:os';
import { BenchServer } from '../e2e/sluice-server.js';
import { quantile } from '../ingest/load.js';
import { openLoopLoad } from '../ingest/open-loop.js';
import { closedLoop } from './closed-loop.js';
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
  MONITOR_BENCH_RATE:
    'records/s of a second, paced (open-loop) phase with the monitors after the closed-loop one, for the lag at a steady rate; `half`: half the rate processed alone (default: none, closed loop only)',
  MONITOR_BENCH_MAIN:
    "another build's entry point to run the server from, e.g. /work/wt/base/dist/src/main.js (default: this build's)",
};
/** Records in each ingest body. */
const RECORDS_PER_BODY = 500;
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
let rateKnob: number | 'half' | null;
try {
  monitors = integerKnob(KNOBS, 'MONITOR_BENCH_MONITORS', 1000, 1, 1000);
  probes = integerKnob(KNOBS, 'MONITOR_BENCH_PROBES', Math.min(10, monitors), 0, monitors);
  series = integerKnob(KNOBS, 'MONITOR_BENCH_SERIES', 10, 1, 1000);
  seconds = integerKnob(KNOBS, 'MONITOR_BENCH_SECONDS', 180, 10, 3600);
  aloneSeconds = integerKnob(KNOBS, 'MONITOR_BENCH_ALONE_SECONDS', seconds, 10, 3600);
  connections = integerKnob(KNOBS, 'MONITOR_BENCH_CONNECTIONS', 8, 1, 256);
  warmup = integerKnob(KNOBS, 'MONITOR_BENCH_WARMUP_SECONDS', 15, 0, 600);
  rateKnob =
    process.env.MONITOR_BENCH_RATE === 'half'
      ? 'half'
      : integerKnob(KNOBS, 'MONITOR_BENCH_RATE', 0, 500, 10_000_000) || null;
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
  `${Array.from({ length: RECORDS_PER_BODY }, (_, i) => JSON.stringify({ host: `h${i % series}`, latency: (i * 37) % 1000 })).join('\n')}\n`,
);

/** The p99 of samples in ms, as text. */
function p99(samples: number[]): string {
  return samples.length === 0 ? 'no samples' : `${quantile(Float64Array.from(samples), 0.99).toFixed(0)} ms`;
}

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
const server = await BenchServer.start(2, process.env.MONITOR_BENCH_MAIN || undefined);
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
    `load ${load()}; ${monitors} monitors (${probes} probes), ${series} series, ingest ${aloneSeconds} s alone then ${seconds} s with monitors, ${connections} connections; server ${process.env.MONITOR_BENCH_MAIN || 'this build'}${process.env.SLUICE_MAX_PENDING_AGE_MS ? `, SLUICE_MAX_PENDING_AGE_MS=${process.env.SLUICE_MAX_PENDING_AGE_MS}` : ''}`,
  );
  /** Records in the server's spool now (GET /metrics, sluice_spool_records). */
  const spooled = async (): Promise<number> => {
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${server.bootstrapKey}` } });
    const m = /^sluice_spool_records ([0-9.e+-]+)$/m.exec(await res.text());
    return m ? Number(m[1]) : 0;
  };
  /**
   * The server's queue, sampled once a second from GET /metrics while a phase runs: how old the oldest
   * spooled entry is (sluice_pipeline_lag_seconds), the records waiting, and the committed batches
   * whose partials wait for their DuckDB merge — where a minute's data spends the time until it is
   * complete.
   */
  const sampleQueue = (until: number) => {
    const lag: number[] = [];
    const records: number[] = [];
    const merges: number[] = [];
    const read = (text: string, name: string) => {
      const m = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
      return m ? Number(m[1]) : NaN;
    };
    const done = (async () => {
      while (Date.now() < until) {
        const res = await fetch(`${server.url}/metrics`, {
          headers: { authorization: `Bearer ${server.bootstrapKey}` },
        });
        const text = await res.text();
        if (res.status === 200) {
          lag.push(read(text, 'sluice_pipeline_lag_seconds') * 1000);
          records.push(read(text, 'sluice_spool_records'));
          merges.push(read(text, 'sluice_rollup_merge_backlog_batches'));
        }
        await sleep(1000);
      }
    })();
    return done.then(() => {
      const spread = (xs: number[], unit: string) => {
        if (xs.length === 0) return 'no samples';
        const s = Float64Array.from(xs);
        return `p50 ${quantile(s, 0.5).toFixed(0)}${unit}, max ${Math.max(...xs).toFixed(0)}${unit}`;
      };
      return `oldest spooled entry ${spread(lag, ' ms')}; spooled records ${spread(records, '')}; batches awaiting their rollup merge ${spread(merges, '')} (${lag.length} samples)`;
    });
  };

  /** Closed-loop ingest for `seconds`: records/s acknowledged, and a note of the refusals (503s are waited out and resent). */
  const ingestPhase = async (seconds: number) => {
    const before = await spooled();
    const r = await closedLoop({
      port: server.port,
      path: server.ingestPath,
      body,
      contentType: 'application/x-ndjson',
      connections,
      durationMs: seconds * 1000,
    });
    const grown = (await spooled()) - before;
    const acked = r.ok * RECORDS_PER_BODY;
    const note =
      (r.refused + r.dropped > 0
        ? `; ${r.refused} requests refused 503 (waited out, sent again), ${r.dropped} dropped`
        : '') +
      `; processed ${Math.round((acked - grown) / r.seconds)} records/s (acknowledged less the spool's growth, ${grown})`;
    return { rate: acked / r.seconds, processed: (acked - grown) / r.seconds, note };
  };
  // Untimed: the first seconds of a fresh server (JIT, worker threads, the view's first files) would
  // count against the phase without monitors only.
  if (warmup > 0) await ingestPhase(warmup);
  const aloneEnd = Date.now() + aloneSeconds * 1000;
  const aloneQueue = sampleQueue(aloneEnd);
  const alone = await ingestPhase(aloneSeconds);
  say(`ingest alone: ${Math.round(alone.rate)} records/s${alone.note}`);
  say(`queue without monitors: ${await aloneQueue}`);

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

  /** What one phase with the monitors measured. */
  interface Lags {
    afterSlot: number[];
    afterComplete: number[];
    opened: number[];
    webhook: number[];
    sampled: number;
    late: number;
    probeMisses: number;
    hookMisses: number;
    completeLags: string[];
  }

  /**
   * Watch the minutes of a phase that ends at `phaseEnd`: for each minute M whose sample fits, when
   * its data completed, a probe every other minute, and at M + 50 s every monitor's last evaluation.
   */
  const watch = async (phaseEnd: number): Promise<Lags> => {
    const r: Lags = {
      afterSlot: [],
      afterComplete: [],
      opened: [],
      webhook: [],
      sampled: 0,
      late: 0,
      probeMisses: 0,
      hookMisses: 0,
      completeLags: [],
    };
    const completeAt = new Map<number, number | null>();
    /** Read every monitor (paged list): was slot `m` evaluated, and when. */
    const sample = async (m: number, probed: boolean) => {
      const done = completeAt.get(m) ?? null;
      for (const mon of await server.list(`${p}/metrics/${metricId}/monitors`)) {
        r.sampled++;
        if (mon.next_evaluation_at !== iso(m + MIN) || mon.last_evaluated_at === null) {
          r.late++;
          if (probed && probeIds.has(mon.id)) r.probeMisses++;
          continue;
        }
        const evaluated = Date.parse(mon.last_evaluated_at);
        r.afterSlot.push(evaluated - m);
        if (done !== null) r.afterComplete.push(evaluated - Math.max(m, done));
        if (!probed || !probeIds.has(mon.id)) continue;
        const alert = mon.recent_alerts[0];
        if (alert?.created_at !== iso(m) || alert.ended_at !== null || done === null) {
          r.probeMisses++;
          continue;
        }
        // The slot's transaction opened the alert and set last_evaluated_at.
        r.opened.push(evaluated - Math.max(m, done));
        const hook = hooks.get(alert.id);
        if (hook === undefined) r.hookMisses++;
        else r.webhook.push(hook - evaluated);
      }
    };
    // The first whole minute after the phase began; a minute is sampled only if its read fits in the phase.
    let probeSentFor: number | null = null;
    for (let m = Math.ceil(Date.now() / MIN) * MIN; m + SAMPLE_AT_MS + 2000 <= phaseEnd; m += MIN) {
      await sleep(m - Date.now());
      const complete = waitComplete(m).then((t) => {
        completeAt.set(m, t);
        r.completeLags.push(t === null ? 'never' : `${((t - m) / 1000).toFixed(1)} s`);
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
    return r;
  };
  const report = (title: string, r: Lags) => {
    say(`${title}:`);
    say(`  data complete through each sampled minute after it: ${r.completeLags.join(', ') || 'no minute sampled'}`);
    say(`  evaluations finished within their minute: ${r.sampled - r.late} of ${r.sampled} (target: all)`);
    say(`  evaluation lag after the slot: ${summary(r.afterSlot)} (target p99 < 5000)`);
    say(`  evaluation lag after the data completed: ${summary(r.afterComplete)}`);
    say(
      `  probe → alert opened, after the first slot with complete data: ${summary(r.opened)} (target p99 ≤ 5000)${r.probeMisses ? `; ${r.probeMisses} probe evaluations missed` : ''}`,
    );
    say(
      `  alert opened → webhook at the receiver: ${summary(r.webhook)} (target ≤ 2000)${r.hookMisses ? `; ${r.hookMisses} not received by the sample` : ''}`,
    );
  };

  // Closed loop, as the phase without monitors: the ingest ratio, and the lag under saturated ingest.
  const closedEnd = Date.now() + seconds * 1000;
  const closedQueue = sampleQueue(closedEnd);
  const [withMonitors, closedLags] = await Promise.all([ingestPhase(seconds), watch(closedEnd)]);
  say(
    `ingest with ${monitors} monitors: ${Math.round(withMonitors.rate)} records/s (ratio ${(withMonitors.rate / alone.rate).toFixed(3)}, target ≥ 0.9; processed ratio ${(withMonitors.processed / alone.processed).toFixed(3)})${withMonitors.note}`,
  );
  say(`queue while the monitors ran, closed loop: ${await closedQueue}`);
  report(`closed-loop ingest (${connections} connections, as fast as acknowledged)`, closedLags);

  if (rateKnob !== null) {
    // Paced: the lag at a steady rate the node can sustain (issue 22 reports its lag at half the maximum).
    const rate = rateKnob === 'half' ? Math.round(alone.processed / 2) : rateKnob;
    // What the closed loop left spooled is not the paced phase's: let it drain first (bounded).
    const drainedBy = Date.now() + 120_000;
    while ((await spooled()) > 0 && Date.now() < drainedBy) await sleep(500);
    const pacedEnd = Date.now() + seconds * 1000;
    const pacedQueue = sampleQueue(pacedEnd);
    const [paced, pacedLags] = await Promise.all([
      openLoopLoad({
        port: server.port,
        path: server.ingestPath,
        body,
        contentType: 'application/x-ndjson',
        rate: rate / RECORDS_PER_BODY,
        connections: Math.max(16, connections * 2),
        durationMs: seconds * 1000,
      }),
      watch(pacedEnd),
    ]);
    const answered = Float64Array.from(paced.latencies);
    say(
      `paced ingest with ${monitors} monitors at ${rate} records/s offered${rateKnob === 'half' ? ' (half the rate alone)' : ''}: ${Math.round((paced.ok * RECORDS_PER_BODY) / paced.seconds)} records/s acknowledged, request p99 ${quantile(answered, 0.99).toFixed(0)} ms, ${paced.failed} refused, ${paced.unanswered} unanswered, generator backlog max ${paced.maxBacklog}`,
    );
    say(`queue while the monitors ran, paced: ${await pacedQueue}`);
    report(`paced ingest (${rate} records/s)`, pacedLags);
    say(
      `evaluation lag after the slot, p99: closed loop ${p99(closedLags.afterSlot)}, paced at ${rate} records/s ${p99(pacedLags.afterSlot)} (target < 5000 ms)`,
    );
  }
  say(`load ${load()}`);
} finally {
  await server.stop();
  await receiver.close();
}
