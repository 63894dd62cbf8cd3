/**
 * Pulls and checks under load on one node: BENCH_CHECKS checks (default 1,000) and BENCH_PULLS pulls
 * (default 200), every minute, against a local HTTPS server, for BENCH_MINUTES full minutes
 * (default 3). Targets: no slot missed or doubled, start jitter p99 < 2 s after the slot, and ingest
 * throughput beside them ≥ 0.9× the throughput without them.
 *
 * The server is a real Sluice process (BenchServer, `npm start`'s Node flags) trusting the bench's
 * test CA (NODE_EXTRA_CA_CERTS) with SLUICE_ALLOW_PRIVATE_TARGETS=1. The local HTTPS server notes
 * when each request arrives: the jitter of a run is its arrival after its minute's start (it
 * includes the documented spread, SLUICE_FETCH_SPREAD_MS, default 1 s). Ingest throughput is the
 * same NDJSON load (BENCH_INGEST_BODIES bodies of 1,000 records) sent once before the jobs exist
 * and once while they run.
 *
 * Run: npm run build && node dist/bench/pull/schedule-load.bench.js
 */
import { testCa, startHttpsServer } from '../../test/helpers/test-ca.js';
import { BenchServer } from '../e2e/sluice-server.js';
import { sendNdjson } from '../e2e/send-ndjson.js';

const CHECKS = Number(process.env.BENCH_CHECKS ?? 1000);
const PULLS = Number(process.env.BENCH_PULLS ?? 200);
const MINUTES = Number(process.env.BENCH_MINUTES ?? 3);
const INGEST_BODIES = Number(process.env.BENCH_INGEST_BODIES ?? 200);
const MINUTE = 60_000;

// Inherited by the Sluice child (startChild passes process.env on).
process.env.NODE_EXTRA_CA_CERTS = testCa().caPath;
process.env.SLUICE_ALLOW_PRIVATE_TARGETS = '1';

const arrivals = new Map<string, number[]>();
const site = await startHttpsServer((req, res) => {
  const at = Date.now();
  const path = (req.url ?? '/').split('?')[0]!;
  let list = arrivals.get(path);
  if (!list) arrivals.set(path, (list = []));
  list.push(at);
  if (path.startsWith('/p/')) {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(Array.from({ length: 5 }, (_, i) => ({ i, host: `h${i}`, v: Math.random() }))));
  } else res.end('ok');
});

const server = await BenchServer.start(Number(process.env.BENCH_WORKERS ?? 1));
const bodies = Array.from({ length: INGEST_BODIES }, (_, b) =>
  Buffer.from(
    Array.from({ length: 1000 }, (_, i) =>
      JSON.stringify({ b, i, path: `/api/${i % 50}`, status: 200, ms: i % 97 }),
    ).join('\n'),
  ),
);
const ingest = async () => {
  const r = await sendNdjson({
    port: server.port,
    path: server.ingestPath,
    bodies,
    records: bodies.map(() => 1000),
    connections: 4,
  });
  return r.records / ((r.lastAckAt - r.firstSentAt) / 1000);
};

try {
  const alone = await ingest();
  const project = server.projectId;
  const source = (await server.api('GET', `/v1/projects/${project}/sources`))[0].id as string;
  const make = async (kind: 'checks' | 'pulls', n: number) => {
    for (let i = 0; i < n; i += 20) {
      await Promise.all(
        Array.from({ length: Math.min(20, n - i) }, (_, j) => {
          const k = i + j;
          const body =
            kind === 'checks'
              ? {
                  name: `check ${k}`,
                  source_id: source,
                  collection_slug: 'uptime',
                  endpoint_url: site.url(`/c/${k}`, '127.0.0.1'),
                }
              : {
                  name: `pull ${k}`,
                  source_id: source,
                  endpoint_url: site.url(`/p/${k}`, '127.0.0.1'),
                  collection_slug: 'pulled',
                };
          return server.api('POST', `/v1/projects/${project}/${kind}`, body);
        }),
      );
    }
  };
  await make('checks', CHECKS);
  await make('pulls', PULLS);
  // Measure whole minutes only: from the next minute's start.
  const from = Math.ceil(Date.now() / MINUTE) * MINUTE;
  const to = from + MINUTES * MINUTE;
  await new Promise((r) => setTimeout(r, from - Date.now() + MINUTE / 2));
  const beside = await ingest();
  await new Promise((r) => setTimeout(r, Math.max(0, to - Date.now() + 5_000)));

  const jitters: number[] = [];
  let missed = 0;
  let doubled = 0;
  for (const [kind, n] of [
    ['c', CHECKS],
    ['p', PULLS],
  ] as const) {
    for (let k = 0; k < n; k++) {
      const times = (arrivals.get(`/${kind}/${k}`) ?? []).filter((t) => t >= from && t < to);
      for (let m = from; m < to; m += MINUTE) {
        const inMinute = times.filter((t) => t >= m && t < m + MINUTE);
        if (inMinute.length === 0) missed++;
        if (inMinute.length > 1) doubled++;
        for (const t of inMinute) jitters.push(t - m);
      }
    }
  }
  jitters.sort((a, b) => a - b);
  const q = (p: number) => jitters[Math.min(jitters.length - 1, Math.floor(p * jitters.length))] ?? NaN;
  const counted = (await server.api('GET', `/v1/projects/${project}/checks?limit=200`)) as Array<{
    missed_slot_count: number;
  }>;
  console.table([
    {
      checks: CHECKS,
      pulls: PULLS,
      minutes: MINUTES,
      runs: jitters.length,
      'missed slots': missed,
      'doubled slots': doubled,
      'missed_slot_count (first 200 checks)': counted.reduce((a, c) => a + c.missed_slot_count, 0),
      'jitter p50 ms': q(0.5),
      'jitter p99 ms': q(0.99),
      'jitter max ms': jitters.at(-1),
      'ingest rec/s alone': Math.round(alone),
      'ingest rec/s beside': Math.round(beside),
      ratio: (beside / alone).toFixed(2),
    },
  ]);
} finally {
  await server.stop();
  await site.close();
}
