import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * `npm run bench`: every `*.bench.js` under bench/, one at a time (they compete for the same cores):
 * e2e/e2e.bench.js (HTTP → files through a real server; BENCH_VIEW=1 adds its view runs,
 * BENCH_METRIC=1 its view + metric runs), ingest/, pipeline/, query/query.bench.js (metrics: rollup
 * queries vs raw scans, ingest → counted lag; its default scale 0.05, BENCH_SCALE to change it),
 * transform/. Each reads its own BENCH_* knobs from the environment.
 */
const root = fileURLToPath(new URL('.', import.meta.url));

function* benches(dir: string): Iterable<string> {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* benches(p);
    else if (name.endsWith('.bench.js')) yield p;
  }
}

let failed = 0;
for (const file of benches(root)) {
  process.stdout.write(`\n=== ${file.slice(root.length)} ===\n`);
  const r = spawnSync(process.execPath, [file], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
