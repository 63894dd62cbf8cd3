/**
 * Monitors under ingest (`npm run bench:monitors`; targets in docs/monitors.md, issue 23): a child
 * server, a metric of `MONITOR_BENCH_SERIES` series (host) over a view of live records, then
 *  1. ingest alone for `MONITOR_BENCH_SECONDS` (records/s),
 *  2. `MONITOR_BENCH_MONITORS` active monitors (mixed scopes total / any_series / each_series, every
 *     minute, thresholds spread so some fire) and the same ingest again (records/s, ratio to 1.),
 *  3. the evaluation lag of every monitor's last slot: `last_evaluated_at` less the minute it
 *     evaluated (p50, p99, max), read from the monitors list.
 * Targets: ratio ≥ 0.9, lag p99 < 5 s. Written with the feature; the shared development machine of
 * this session did not allow running it, so no figures are recorded yet.
 */
import { loadavg } from 'node:os';
import { BenchServer } from '../e2e/sluice-server.js';
import { httpLoad, quantile } from '../ingest/load.js';
import { integerKnob } from '../knobs.js';

const KNOBS = {
  MONITOR_BENCH_MONITORS: 'monitors to create (default 1000)',
  MONITOR_BENCH_SERIES: 'series of the metric (default 10)',
  MONITOR_BENCH_SECONDS: 'seconds of each ingest phase (default 150: at least two minute slots)',
  MONITOR_BENCH_CONNECTIONS: 'ingest connections (default 8)',
};
const monitors = integerKnob(KNOBS, 'MONITOR_BENCH_MONITORS', 1000, 1, 10_000);
const series = integerKnob(KNOBS, 'MONITOR_BENCH_SERIES', 10, 1, 1000);
const seconds = integerKnob(KNOBS, 'MONITOR_BENCH_SECONDS', 150, 10, 3600);
const connections = integerKnob(KNOBS, 'MONITOR_BENCH_CONNECTIONS', 8, 1, 256);
const say = (s: string) => process.stdout.write(`${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const body = Buffer.from(
  Array.from({ length: 500 }, (_, i) => JSON.stringify({ host: `h${i % series}`, latency: (i * 37) % 1000 })).join(
    '\n',
  ) + '\n',
);

async function ingestPhase(server: BenchServer): Promise<number> {
  const r = await httpLoad({
    port: server.port,
    path: server.ingestPath,
    body,
    contentType: 'application/x-ndjson',
    connections,
    durationMs: seconds * 1000,
  });
  return (r.ok * 500) / r.seconds;
}

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
    `load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${monitors} monitors, ${series} series, ${seconds} s per phase`,
  );
  const alone = await ingestPhase(server);
  say(`ingest alone: ${Math.round(alone)} records/s`);

  const scopes = ['total', 'any_series', 'each_series'] as const;
  const ids: string[] = [];
  for (let i = 0; i < monitors; i++) {
    const m = await server.api('POST', `${p}/metrics/${metricId}/monitors`, {
      name: `Bench ${i}`,
      chart_value: i % 2 ? 'max' : 'count',
      scope: scopes[i % 3],
      time_window_minutes: 1 + (i % 5),
      threshold_value: (i * 97) % 1000,
    });
    ids.push(m.id);
  }
  const withMonitors = await ingestPhase(server);
  say(
    `ingest with ${monitors} monitors: ${Math.round(withMonitors)} records/s (ratio ${(withMonitors / alone).toFixed(3)}, target ≥ 0.9)`,
  );

  // Let the slots of the last minute finish, then read every monitor's last evaluation.
  await sleep(10_000);
  const lags: number[] = [];
  for (const id of ids) {
    const m = await server.api('GET', `${p}/metrics/${metricId}/monitors/${id}`);
    if (!m.last_evaluated_at) continue;
    const t = Date.parse(m.last_evaluated_at);
    lags.push(t - Math.floor(t / 60_000) * 60_000);
  }
  const sorted = Float64Array.from(lags).sort();
  say(
    `evaluated: ${lags.length} of ${monitors}; lag p50 ${quantile(sorted, 0.5).toFixed(0)} ms, p99 ${quantile(sorted, 0.99).toFixed(0)} ms, max ${sorted.at(-1)?.toFixed(0)} ms (target p99 < 5000)`,
  );
} finally {
  await server.stop();
}
