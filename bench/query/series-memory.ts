/**
 * Ad-hoc measure (not part of bench:query) of memory per series (issue 22, item 3): the heap a
 * batch's partials hold per (series, minute) — the states `buildPartials` returns for a batch of
 * `--series` series over `--minutes` minutes, one record per series-minute (values and distinct
 * sketches on) —, the peak resident memory the build itself took per series-minute (maxRSS before
 * and after, so one build per process), and the heap of the series registry in memory per series
 * (MetricSeriesView, what SeriesCache holds). `--builder reference` runs the per-metric builder of
 * before the fused pass (test/rollup/reference-partials.ts) instead, for comparison. Run on a quiet
 * machine, with the GC exposed:
 *
 *   node --expose-gc dist/bench/query/series-memory.js --series 20000 --minutes 10 [--builder reference]
 */
import { loadHasher } from '../../src/rollup/hll.js';
import type { MetricSeriesRecord } from '../../src/rollup/metric-records.js';
import type { MetricTask } from '../../src/rollup/metric-task.js';
import { buildPartials } from '../../src/rollup/partials.js';
import { referencePartials } from '../../test/rollup/reference-partials.js';
import type { MetricPartials } from '../../src/rollup/rollup-types.js';
import { MetricSeriesView } from '../../src/rollup/series-cache.js';
import type { OutputColumn, OutputField } from '../../src/transform/output-schema.js';

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : def;
};
const seriesN = Number(arg('--series', '20000'));
const minutes = Number(arg('--minutes', '10'));
const builder = arg('--builder', 'fused');
if (builder !== 'fused' && builder !== 'reference') throw new Error('--builder: fused or reference');
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

/** Heap and array buffers in use after a full GC. */
function used(): number {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

const FIELDS: OutputField[] = [
  { name: 'user', type: 'string' },
  { name: 'latency', type: 'number' },
  { name: 'session', type: 'string' },
];

function batch(): { ts: Float64Array; columns: OutputColumn[] } {
  const n = seriesN * minutes;
  const ts = new Float64Array(n);
  const user: string[] = new Array(n);
  const latency: number[] = new Array(n);
  const session: string[] = new Array(n);
  const t0 = Date.UTC(2026, 0, 1);
  for (let i = 0; i < n; i++) {
    ts[i] = t0 + Math.floor(i / seriesN) * 60_000 + (i % 60) * 1_000;
    user[i] = `user-${i % seriesN}`;
    latency[i] = (i * 7919) % 1000;
    session[i] = `s${i % 5000}`;
  }
  return {
    ts,
    columns: [
      { name: 'user', type: 'string', values: user },
      { name: 'latency', type: 'number', values: latency },
      { name: 'session', type: 'string', values: session },
    ] as OutputColumn[],
  };
}

async function main(): Promise<void> {
  await loadHasher();
  const task: MetricTask = {
    metricId: 'met_bench',
    revision: 1,
    groupBy: ['user'],
    filters: '',
    fields: FIELDS,
    timestampField: '__ts',
    valueField: 'latency',
    uniqueField: 'session',
    displayFields: null,
  };
  const { ts, columns } = batch();

  const before = used();
  const rssBefore = process.resourceUsage().maxRSS * 1024;
  const kept: MetricPartials[] = [(builder === 'fused' ? buildPartials : referencePartials)(task, ts, columns)];
  const rssPeak = process.resourceUsage().maxRSS * 1024;
  const afterPartials = used();
  const p = kept[0]!;
  const cells = p.partials.length;
  const stateBytes = p.partials.reduce((s, x) => s + x.state.byteLength, 0);

  // The registry's records as LMDB hands them over (fresh objects), then the view over them.
  const seen = p.series.slice(1).map((s) => [s.hash, s.last] as const);
  kept.length = 0;
  const beforeView = used();
  const records: MetricSeriesRecord[] = seen.map(([hash, last], i) => ({
    id: `mse_${String(i).padStart(20, '0')}`,
    metric_id: 'met_bench',
    hash: `${hash}`,
    dimensions: { user: `user-${i}` },
    display_values: null,
    display_label: null,
    first_seen_at: '2026-01-01T00:00:00.000Z',
    last_seen_at: '2026-01-01T00:00:00.000Z',
    last_value: last,
    last_value_at: '2026-01-01T00:00:00.000Z',
    color: null,
    pinned_at: null,
  }));
  const view = new MetricSeriesView(1, records);
  const afterView = used();

  const out = {
    builder,
    series: seriesN,
    minutes,
    series_minutes: cells,
    partials_bytes_per_series_minute: Math.round((afterPartials - before) / cells),
    build_peak_rss_bytes_per_series_minute: Math.round((rssPeak - rssBefore) / cells),
    encoded_state_bytes_per_series_minute: Math.round(stateBytes / cells),
    registry_bytes_per_series: Math.round((afterView - beforeView) / view.size),
  };
  console.log(JSON.stringify(out, null, 2));
}

await main();
