/**
 * Pulls and checks under load on one node: BENCH_CHECKS checks (default 1,000) and BENCH_PULLS pulls
 * (default 200), every minute, against a local HTTPS server, for BENCH_MINUTES full minutes
 * (default 3). Targets (issue #24): no slot missed or doubled, start jitter p99 < 2 s after the
 * slot, and ingest throughput beside them ≥ 0.9× the throughput without them.
 *
 * The server is a real Sluice process (BenchServer, `npm start`'s Node flags) trusting the bench's
 * test CA (NODE_EXTRA_CA_CERTS) with SLUICE_ALLOW_PRIVATE_TARGETS=1. The local HTTPS server notes
 * when each request arrives: the jitter of a run is its arrival after its minute's start (it
 * includes the documented spread, SLUICE_FETCH_SPREAD_MS, default 1 s).
 *
 * Ingest throughput: the same NDJSON load (bodies of 1,000 records, sent again and again for
 * BENCH_INGEST_SECONDS, default 15 s) measured BENCH_MINUTES times before the jobs exist, and then
 * once in every measured minute from 2 s before its start — across the seconds where the minute's
 * runs fire and their records are written, the worst part of the minute for ingest. Each
 * measurement starts with the queue drained. Ratio of medians.
 *
 * Run: npm run bench:pulls (small: BENCH_CHECKS=50 BENCH_PULLS=10 BENCH_MINUTES=1).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { testCa } from '../../test/helpers/test-ca.js';
import { integerKnob, OptionError } from '../knobs.js';
import { BenchServer } from '../e2e/sluice-server.js';
import { drained } from '../e2e/drain.js';
import { sendNdjson } from '../e2e/send-ndjson.js';

const KNOBS = {
  BENCH_CHECKS: 'checks, every minute (default 1,000)',
  BENCH_PULLS: 'pulls, every minute (default 200)',
  BENCH_MINUTES: 'whole minutes measured (default 3)',
  BENCH_INGEST_SECONDS: 'length of one ingest measurement, 1 to 50 s (default 15)',
  BENCH_WORKERS: 'SLUICE_WORKERS of the server (default 1)',
};
let CHECKS: number;
let PULLS: number;
let MINUTES: number;
let INGEST_MS: number;
let WORKERS: number;
try {
  CHECKS = integerKnob(KNOBS, 'BENCH_CHECKS', 1000, 0, 100_000);
  PULLS = integerKnob(KNOBS, 'BENCH_PULLS', 200, 0, 100_000);
  MINUTES = integerKnob(KNOBS, 'BENCH_MINUTES', 3, 1, 60);
  INGEST_MS = integerKnob(KNOBS, 'BENCH_INGEST_SECONDS', 15, 1, 50) * 1000;
  WORKERS = integerKnob(KNOBS, 'BENCH_WORKERS', 1, 1, 64);
} catch (err) {
  if (err instanceof OptionError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
  throw err;
}
const MINUTE = 60_000;
/** An ingest measurement beside the jobs starts this long before a minute's start. */
const LEAD_MS = 2_000;

// Inherited by the Sluice child (startChild passes process.env on).
process.env.NODE_EXTRA_CA_CERTS = testCa().caPath;
process.env.SLUICE_ALLOW_PRIVATE_TARGETS = '1';

// The endpoint runs in its own process (target-server.ts), so its arrival times are not held up
// by this process sending the ingest load.
const target = fork(fileURLToPath(new URL('./target-server.js', import.meta.url)), [], {
  stdio: 'inherit',
  env: { ...process.env, BENCH_TARGET_CERT: testCa().cert, BENCH_TARGET_KEY: testCa().key },
});
const targetPort = await new Promise<number>((resolve, reject) => {
  target.once('message', (m) => resolve((m as { port: number }).port));
  target.once('exit', (code) => reject(new Error(`the target server exited (${code}) before listening`)));
});
const site = { url: (path: string, host: string) => `https://${host}:${targetPort}${path}` };
async function arrivalsOf(): Promise<Map<string, number[]>> {
  const reply = new Promise<Map<string, number[]>>((resolve) =>
    target.once('message', (m) => resolve(new Map((m as { arrivals: Array<[string, number[]]> }).arrivals))),
  );
  target.send('arrivals');
  return reply;
}

const server = await BenchServer.start(WORKERS);
const bodies = Array.from({ length: 50 }, (_, b) =>
  Buffer.from(
    Array.from({ length: 1000 }, (_, i) =>
      JSON.stringify({ b, i, path: `/api/${i % 50}`, status: 200, ms: i % 97 }),
    ).join('\n'),
  ),
);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
/** Records/s of the NDJSON load sent over and over (4 connections) for INGEST_MS. */
const ingest = async () => {
  const started = performance.now();
  let records = 0;
  while (performance.now() - started < INGEST_MS) {
    const r = await sendNdjson({
      port: server.port,
      path: server.ingestPath,
      bodies,
      records: bodies.map(() => 1000),
      connections: 4,
    });
    records += r.records;
  }
  return records / ((performance.now() - started) / 1000);
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

try {
  const aloneRuns: number[] = [];
  // Each measurement starts with an empty queue (the one before has drained), alone and beside alike.
  for (let i = 0; i < MINUTES; i++) {
    await drained(server);
    aloneRuns.push(await ingest());
  }
  const alone = median(aloneRuns);
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
  const besideRuns: number[] = [];
  for (let m = from; m < to; m += MINUTE) {
    await drained(server);
    await sleep(m - LEAD_MS - Date.now());
    besideRuns.push(await ingest());
  }
  const beside = median(besideRuns);
  await sleep(to - Date.now() + 5_000);

  const arrivals = await arrivalsOf();
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
  // The service's own count of missed slots, over every check and pull (paged).
  let countedMissed = 0;
  for (const kind of ['checks', 'pulls']) {
    let after: string | null = null;
    do {
      const res = await fetch(
        `${server.url}/v1/projects/${project}/${kind}?limit=200${after ? `&after=${after}` : ''}`,
        { headers: { authorization: `Bearer ${server.bootstrapKey}` } },
      );
      const page = (await res.json()) as {
        data: Array<{ missed_slot_count: number }>;
        pagination: { next_cursor: string | null };
      };
      for (const j of page.data) countedMissed += j.missed_slot_count;
      after = page.pagination.next_cursor;
    } while (after);
  }
  console.table([
    {
      checks: CHECKS,
      pulls: PULLS,
      minutes: MINUTES,
      runs: jitters.length,
      'missed slots': missed,
      'doubled slots': doubled,
      missed_slot_count: countedMissed,
      'jitter p50 ms': q(0.5),
      'jitter p99 ms': q(0.99),
      'jitter max ms': jitters.at(-1),
      'ingest rec/s alone': Math.round(alone),
      'ingest rec/s beside': Math.round(beside),
      ratio: (beside / alone).toFixed(2),
    },
  ]);
  const p99 = q(0.99);
  console.table([
    { target: 'no slot missed or doubled', met: missed === 0 && doubled === 0 && countedMissed === 0 },
    { target: 'start jitter p99 < 2 s', value: `${p99} ms`, met: p99 < 2000 },
    { target: 'ingest beside ≥ 0.9× alone', value: (beside / alone).toFixed(2), met: beside / alone >= 0.9 },
  ]);
} finally {
  await server.stop();
  target.disconnect();
}
