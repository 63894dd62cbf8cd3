/**
 * Parsing a 10 MB Prometheus text exposition into records (src/pull/formats/metrics-text.ts), one
 * core. Target: ≥ 100 MB/s. Side by side: the same text split into lines and fields only (the floor
 * of any line parser in JavaScript), and the OpenMetrics dialect of the same samples.
 *
 * Run: npm run bench:pulls (BENCH_PROM_MB, default 10).
 */
import { Bench } from 'tinybench';
import { metricsRecords } from '../../src/pull/formats/metrics-text.js';

const MB = Number(process.env.BENCH_PROM_MB ?? 10);

function exposition(bytes: number, openMetrics: boolean): string {
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

const prom = exposition(MB * 1024 * 1024, false);
const om = exposition(MB * 1024 * 1024, true);
const bench = new Bench({ warmupIterations: 2, iterations: 10, time: 0 });
bench
  .add('prometheus 0.0.4 → records', () => void metricsRecords(prom, 'prometheus'))
  .add('openmetrics 1.0 → records', () => void metricsRecords(om, 'openmetrics'))
  .add('floor: split lines and fields', () => {
    let n = 0;
    for (const line of prom.split('\n')) n += line.split(' ').length;
    return void n;
  });
await bench.run();
console.table(
  bench.tasks.map((t) => {
    const ms = t.result && 'latency' in t.result ? (t.result.latency as { mean: number }).mean : NaN;
    const mbs = prom.length / 1048576 / (ms / 1000);
    // Issue #24's target is for the Prometheus dialect: ≥ 100 MB/s on one core.
    const target = t.name.startsWith('prometheus') ? (mbs >= 100 ? 'met (≥ 100)' : 'NOT met (≥ 100)') : '';
    return { task: t.name, 'mean ms': ms.toFixed(1), 'MB/s': mbs.toFixed(1), target };
  }),
);
