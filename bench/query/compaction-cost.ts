/**
 * Ad-hoc measure of the rollup compactor (not part of bench:query): `--records` traffic records over
 * 30 days in view files, counted into the two bench metrics (by region, by host; latency value, user
 * id distinct) as backfilled partials in a fresh rollups database — the state compaction starts from
 * after bench:query's backfills. Then, for each dist given (`--dist a,b`: compiled trees, e.g. a copy
 * of main's dist and this one), a copy of that database is compacted pass after pass to the end; the
 * wall and CPU time per pass and in all, and a checksum of the tiers (equal across builds) are printed.
 *
 *   node dist/bench/query/compaction-cost.js --records 200000 --days 3 --dist old-dist,dist
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildPartials } from '../../src/rollup/partials.js';
import { loadHasher } from '../../src/rollup/hll.js';
import { RollupStore } from '../../src/rollup/rollup-store.js';
import { readViewFileColumns } from '../../src/rollup/view-file-columns.js';
import type { MetricTask } from '../../src/rollup/metric-task.js';
import { TRAFFIC_VIEW } from './traffic.js';
import { writeTrafficFile } from './traffic-file.js';

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : def;
};
const records = Number(arg('--records', '200000'));
const fileRows = Number(arg('--file-rows', '50000'));
const dists = arg('--dist', 'dist')
  .split(',')
  .map((d) => resolve(d));
/** Partial rows per pass (0: the compactor's default). */
const limit = Number(arg('--limit', '0'));
const DAY = 86_400_000;
/** Days the records span (30 in bench:query; fewer keeps its records per minute with fewer records). */
const days = Number(arg('--days', '30'));

async function seed(dir: string): Promise<string> {
  await loadHasher();
  const fields = TRAFFIC_VIEW.outputSchema;
  const to = Date.UTC(2026, 10, 1);
  const from = to - days * DAY;
  const files = Math.ceil(records / fileRows);
  const store = await RollupStore.open(dir);
  const tasks: MetricTask[] = ['region', 'host'].map((g) => ({
    metricId: `m_${g}`,
    revision: 1,
    groupBy: [g],
    filters: '',
    fields,
    timestampField: '__ts',
    valueField: 'latency',
    uniqueField: 'user_id',
    displayFields: null,
  }));
  let partials = 0;
  for (let k = 0; k < files; k++) {
    const path = join(dir, `f${k}.parquet`);
    const rows = Math.min(fileRows, records - k * fileRows);
    writeTrafficFile({
      path,
      seed: 7 + k,
      rows,
      from: from + (k * (to - from)) / files,
      to: from + ((k + 1) * (to - from)) / files,
      users: Math.max(1000, records / 5),
    });
    const { ts, columns } = await readViewFileColumns(store, path, fields);
    for (const task of tasks) {
      const p = buildPartials(task, ts, columns);
      partials += p.partials.length;
      await store.mergeBackfillFile(task.metricId, 1, `f${k}`, p);
    }
  }
  await store.close();
  console.log(`seeded ${records} records in ${files} files: ${partials} partial rows`);
  return join(dir, 'rollups.duckdb');
}

async function measure(dist: string, seedDb: string): Promise<void> {
  const { RollupStore: Store } = (await import(
    join(dist, 'src/rollup/rollup-store.js')
  )) as typeof import('../../src/rollup/rollup-store.js');
  const { compactPartials } = (await import(
    join(dist, 'src/rollup/compactor.js')
  )) as typeof import('../../src/rollup/compactor.js');
  const dir = mkdtempSync(join(tmpdir(), 'compact-run-'));
  copyFileSync(seedDb, join(dir, 'rollups.duckdb'));
  const store = await Store.open(dir);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let passes = 0;
  let rows = 0;
  const times: number[] = [];
  for (let more = true; more; ) {
    const p0 = performance.now();
    const r = await compactPartials(store, () => 1, limit || undefined);
    times.push(performance.now() - p0);
    more = r.more;
    passes++;
    for (const f of r.folded.values()) rows += f.rows;
  }
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const sums = await store.reader.runAndReadAll(
    `SELECT t, sum(count)::DOUBLE, round(sum(sum), 3), min(min), max(max), round(sum(p95), 3), round(sum(distinct_count), 1), count(*)::DOUBLE FROM (
       SELECT 'minute' t, * FROM rollup_minute UNION ALL SELECT 'hour', * FROM rollup_hour UNION ALL SELECT 'day', * FROM rollup_day UNION ALL SELECT 'month', * FROM rollup_month) GROUP BY t ORDER BY t`,
  );
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  times.sort((a, b) => a - b);
  console.log(
    `${dist}: ${rows} partial rows in ${passes} passes, ${wall.toFixed(1)} s wall, ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s CPU, pass p50 ${times[Math.floor(times.length / 2)]!.toFixed(0)} ms max ${times[times.length - 1]!.toFixed(0)} ms, ${((cpu.user + cpu.system) / rows).toFixed(1)} µs CPU/partial`,
  );
  console.log(
    `  tiers (tier, Σcount, Σsum, min, max, Σp95, Σdistinct, rows): ${JSON.stringify(sums.getRows().map((r) => r.map((v) => (typeof v === 'bigint' ? Number(v) : v))))}`,
  );
}

const dir = mkdtempSync(join(tmpdir(), 'compact-seed-'));
mkdirSync(dir, { recursive: true });
try {
  const seedDb = await seed(dir);
  for (const d of dists) await measure(d, seedDb);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
