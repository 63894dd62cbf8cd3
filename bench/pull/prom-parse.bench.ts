/**
 * Parsing a 10 MB Prometheus text exposition into records (src/pull/formats/metrics-text.ts), one
 * core. Target (issue #24): ≥ 100 MB/s. The parser runs side by side with a baseline in the same
 * process, alternating runs (which goes first alternates too), so that a shared machine's noise
 * falls on both: read the ratio. The baseline is the parser as it was before the offset-scanning
 * rewrite (test/pull/prom-parse-reference.ts), or with BENCH_BASELINE=<a built tree, e.g. main's>
 * that tree's `dist/src/pull/formats/metrics-text.js`.
 *
 * Expositions: `counters` (the target's: 50 counter samples per family, four labels, ms timestamps;
 * the families repeat the same 50 label sets), its OpenMetrics twin, and `histograms` (every
 * series distinct: 12 buckets, _sum and _count per handler × instance), where whole label sets do
 * not repeat. Also the floor: the same text split into lines and fields only.
 *
 * Run: npm run bench:pulls, or node dist/bench/pull/prom-parse.bench.js. Knobs: BENCH_PROM_MB (10),
 * BENCH_PROM_ROUNDS (9 timed rounds per parser, after 2 warm-up rounds), BENCH_BASELINE.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { metricsRecords, type MetricsDialect } from '../../src/pull/formats/metrics-text.js';
import { metricsRecords as referenceRecords } from '../../test/pull/prom-parse-reference.js';

const MB = Number(process.env.BENCH_PROM_MB ?? 10);
const ROUNDS = Number(process.env.BENCH_PROM_ROUNDS ?? 9);
const WARMUP = 2;
const BASELINE = process.env.BENCH_BASELINE || null;

type Parse = (text: string, dialect: MetricsDialect) => unknown[];

async function baselineParser(): Promise<{ name: string; parse: Parse }> {
  if (!BASELINE) return { name: 'reference copy', parse: referenceRecords };
  const root = resolve(BASELINE);
  const file = [
    join(root, 'dist/src/pull/formats/metrics-text.js'),
    join(root, 'src/pull/formats/metrics-text.js'),
  ].find((f) => existsSync(f));
  if (!file) throw new Error(`BENCH_BASELINE=${BASELINE}: no dist/src/pull/formats/metrics-text.js there (build it)`);
  const mod = (await import(pathToFileURL(file).href)) as { metricsRecords: Parse };
  return { name: file, parse: mod.metricsRecords };
}

function counters(bytes: number, openMetrics: boolean): string {
  const parts: string[] = [];
  let size = 0;
  for (let f = 0; size < bytes; f++) {
    const name = `app_requests_${f}`;
    const head = `# HELP ${name} Requests handled.\n# TYPE ${name} counter\n`;
    parts.push(head);
    size += head.length;
    for (let i = 0; i < 50 && size < bytes; i++) {
      const ts = openMetrics ? ' 1700000000.123' : ' 1700000000123';
      const line = `${name}_total{method="${i % 2 ? 'GET' : 'POST'}",code="${200 + (i % 5)}",path="/api/v1/items/${i}",instance="10.0.0.${i % 250}:9100"} ${f * 50 + i}${ts}\n`;
      parts.push(line);
      size += line.length;
    }
  }
  if (openMetrics) parts.push('# EOF\n');
  return parts.join('');
}

const LE = ['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf'];

function histograms(bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let f = 0; size < bytes; f++) {
    const name = `http_request_duration_seconds_${f}`;
    const head = `# HELP ${name} Request latency.\n# TYPE ${name} histogram\n`;
    parts.push(head);
    size += head.length;
    for (let s = 0; s < 20 && size < bytes; s++) {
      const labels = `handler="/api/v1/things/${s}",method="${s % 3 ? 'GET' : 'PUT'}",instance="10.1.${f % 200}.${s}:8080"`;
      let count = 0;
      for (const le of LE) {
        count += (s * 7 + le.length) % 13;
        const line = `${name}_bucket{${labels},le="${le}"} ${count}\n`;
        parts.push(line);
        size += line.length;
      }
      const tail = `${name}_sum{${labels}} ${(count * 0.173).toFixed(3)}\n${name}_count{${labels}} ${count}\n`;
      parts.push(tail);
      size += tail.length;
    }
  }
  return parts.join('');
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const bytes = MB * 1024 * 1024;
const cases: Array<{ name: string; text: string; dialect: MetricsDialect; target: boolean }> = [
  { name: 'counters, prometheus 0.0.4', text: counters(bytes, false), dialect: 'prometheus', target: true },
  { name: 'counters, openmetrics 1.0', text: counters(bytes, true), dialect: 'openmetrics', target: false },
  { name: 'histograms, prometheus 0.0.4', text: histograms(bytes), dialect: 'prometheus', target: false },
];
const baseline = await baselineParser();
const mbs = (len: number, ms: number) => len / 1048576 / (ms / 1000);
const rows: Array<Record<string, string>> = [];

for (const c of cases) {
  const times: Record<'new' | 'base', number[]> = { new: [], base: [] };
  const run = (which: 'new' | 'base', timed: boolean) => {
    const t0 = performance.now();
    const n = (which === 'new' ? metricsRecords : baseline.parse)(c.text, c.dialect).length;
    const ms = performance.now() - t0;
    if (n === 0) throw new Error(`${c.name}: no records`);
    if (timed) times[which].push(ms);
  };
  for (let r = 0; r < WARMUP + ROUNDS; r++) {
    const first = r % 2 === 0 ? 'new' : 'base';
    run(first, r >= WARMUP);
    run(first === 'new' ? 'base' : 'new', r >= WARMUP);
  }
  // Noise only ever adds time: the fastest run is the nearest to a quiet core, and the ratio is the
  // median of each round's pair (both ran back to back), so drifting load cancels out.
  const a = Math.min(...times.new);
  const rate = mbs(c.text.length, a);
  const ratios = times.new.map((t, k) => times.base[k]! / t);
  rows.push({
    exposition: c.name,
    'MB/s (this build)': rate.toFixed(1),
    'MB/s (baseline)': mbs(c.text.length, Math.min(...times.base)).toFixed(1),
    ratio: `${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
    // Issue #24's target is for the Prometheus dialect: ≥ 100 MB/s on one core.
    target: c.target ? (rate >= 100 ? 'met (≥ 100)' : 'NOT met (≥ 100)') : '',
  });
}

// The floor: any line parser in JavaScript at least splits lines and fields.
const prom = cases[0]!.text;
const floor: number[] = [];
for (let r = 0; r < WARMUP + ROUNDS; r++) {
  const t0 = performance.now();
  let n = 0;
  for (const line of prom.split('\n')) n += line.split(' ').length;
  if (n === 0) throw new Error('floor: nothing split');
  if (r >= WARMUP) floor.push(performance.now() - t0);
}
rows.push({
  exposition: 'floor: split lines and fields',
  'MB/s (this build)': mbs(prom.length, Math.min(...floor)).toFixed(1),
});

console.log(
  `prom parse: ${MB} MB each, ${ROUNDS} alternating rounds; MB/s of the fastest run; ratio: baseline ms / this build's ms, median (min–max) over the rounds; baseline: ${baseline.name}`,
);
console.table(rows);
