import { readFileSync } from 'node:fs';

/**
 * The Node options `npm start` runs Sluice with, read from package.json's `start` script (one
 * source of truth), so a bench measures the server users run: `--max-semi-space-size=64` keeps
 * requests awaiting their commit, and a batch's short-lived records, in the young generation
 * (docs/ingest.md, docs/benchmarks.md). `BENCH_SLUICE_NODE_FLAGS` replaces them ('' runs without).
 */
export function sluiceNodeFlags(): string[] {
  const override = process.env.BENCH_SLUICE_NODE_FLAGS;
  if (override !== undefined) return override.split(' ').filter(Boolean);
  // dist/bench/sluice-node-flags.js → the repository's package.json.
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts?: { start?: string };
  };
  const start = pkg.scripts?.start ?? '';
  const m = /\bnode((?:\s+--[^\s]+)*)\s+dist\/src\/main\.js/.exec(start);
  if (!m) throw new Error(`package.json's start script does not run "node … dist/src/main.js": ${start}`);
  return m[1]!.split(/\s+/).filter(Boolean);
}
