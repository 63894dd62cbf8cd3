/**
 * Fingerprinting alone: records/s per thread for 10-field records over 10 shapes (target ≥ 1M/s).
 * Side by side: Sluice's allocation-free walk vs a naive sorted-keys signature string.
 * Run: npx tsc -p . && node dist/bench/pipeline/fingerprint.bench.js
 */
import { Bench } from 'tinybench';
import { Fingerprinter } from '../../src/schema/fingerprint.js';
import { makeRecords } from './records.js';

const RECORDS = 10_000;

function naiveSignature(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `[${[...new Set(v.map(naiveSignature))].sort().join('|')}]`;
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${k}:${naiveSignature(o[k])}`)
      .join(',')}}`;
  }
  return typeof v;
}

const records = makeRecords(RECORDS);
const fp = new Fingerprinter({ opaquePaths: [], trackedPaths: [], maxDepth: 6 });
let sink = 0;
const bench = new Bench({
  name: `fingerprint ${RECORDS} records per op (10 fields, 10 shapes)`,
  time: 2000,
  warmupTime: 500,
});
bench
  .add('sluice Fingerprinter.fingerprint', () => {
    for (let i = 0; i < RECORDS; i++) sink += fp.fingerprint(records[i]);
  })
  .add('naive sorted-keys signature + Map', () => {
    const m = new Map<string, number>();
    for (let i = 0; i < RECORDS; i++) {
      const s = naiveSignature(records[i]);
      m.set(s, (m.get(s) ?? 0) + 1);
    }
    sink += m.size;
  });
await bench.run();
console.log(bench.name);
console.table(
  bench.tasks.map((t) => {
    const r = t.result as unknown as { throughput?: { mean: number }; latency?: { mean: number } };
    const opsPerSec = r.throughput?.mean ?? 0;
    return {
      task: t.name,
      'records/s': Math.round(opsPerSec * RECORDS).toLocaleString('en-US'),
      'ms per 10k': (r.latency?.mean ?? 0).toFixed(3),
    };
  }),
);
if (sink === 42) console.log('');
