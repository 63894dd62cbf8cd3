/**
 * DistinctSketch's accuracy at one cardinality (docs/benchmarks.md, bench:query "Distinct counts"):
 * SKETCHES sketches of DISTINCT values each, their relative errors against the exact count beside
 * the theory (standard error 1.04/√16384 = 0.8125 %, normal tails). SOURCE says what is counted:
 *   pool     (default) random subsets of the bench's own user ids u0…u{POOL−1} (POOL 1,000,000: the
 *            ids of scale 0.05), as one day's `__other__` draws from them; the subsets share the pool
 *            (whose hashes are fixed), so their errors are correlated
 *   disjoint ids of the bench's format, sketch s counting u{s·DISTINCT}…: independent sets
 *   random   uniformly random 64-bit hashes (no hash function: the estimator alone)
 * `node dist/bench/query/distinct-study.js` (SEED seeds the subsets, default 7).
 */
import { randomBytes } from 'node:crypto';
import { DistinctSketch, loadHasher } from '../../src/rollup/hll.js';
import { mulberry32 } from '../../test/helpers/seeded-random.js';

const sketches = Number(process.env.SKETCHES ?? 400);
const distinct = Number(process.env.DISTINCT ?? 150_000);
const pool = Number(process.env.POOL ?? 1_000_000);
const source = process.env.SOURCE ?? 'pool';
const SIGMA = 1.04 / 128;

async function main(): Promise<void> {
  if (!['pool', 'disjoint', 'random'].includes(source)) throw new Error(`SOURCE="${source}": pool, disjoint or random`);
  if (source === 'pool' && distinct > pool) throw new Error('DISTINCT must not exceed POOL');
  await loadHasher();
  const rand = mulberry32(Number(process.env.SEED ?? 7));
  const ids = source === 'pool' ? new Int32Array(pool).map((_, i) => i) : null;
  const errs: number[] = [];
  const t0 = performance.now();
  for (let s = 0; s < sketches; s++) {
    const sk = new DistinctSketch();
    if (ids !== null) {
      // Partial Fisher–Yates: the first `distinct` of a fresh shuffle.
      for (let i = 0; i < distinct; i++) {
        const j = i + Math.floor(rand() * (pool - i));
        const t = ids[i]!;
        ids[i] = ids[j]!;
        ids[j] = t;
        sk.add(`u${ids[i]}`);
      }
    } else if (source === 'disjoint') {
      for (let i = 0; i < distinct; i++) sk.add(`u${s * distinct + i}`);
    } else {
      const buf = randomBytes(8 * distinct);
      for (let i = 0; i < distinct; i++) sk.addHash(buf.readBigUInt64LE(8 * i));
    }
    errs.push(sk.estimate() / distinct - 1);
  }
  const n = errs.length;
  const mean = errs.reduce((a, e) => a + e, 0) / n;
  const sd = Math.sqrt(errs.reduce((a, e) => a + (e - mean) ** 2, 0) / (n - 1));
  const rms = Math.sqrt(errs.reduce((a, e) => a + e * e, 0) / n);
  const abs = errs.map(Math.abs).sort((a, b) => a - b);
  const over = (x: number) => abs.filter((e) => e > x).length;
  const pct = (x: number) => `${(100 * x).toFixed(3)} %`;
  const normal = (x: number) => erfc(x / SIGMA / Math.SQRT2);
  const what =
    source === 'pool'
      ? `random subsets of u0…u${pool - 1}`
      : source === 'disjoint'
        ? 'disjoint sets of ids u…'
        : 'random 64-bit hashes';
  process.stdout.write(
    `${n} sketches of ${distinct} distinct values, ${what} (${((performance.now() - t0) / 1000).toFixed(1)} s)\n` +
      `mean error ${pct(mean)} (± ${pct(sd / Math.sqrt(n))}), sd ${pct(sd)}, RMS ${pct(rms)} (theory ${pct(SIGMA)}); |e| median ${pct(abs[n >> 1]!)}, p99 ${pct(abs[Math.floor(0.99 * n)]!)}, max ${pct(abs[n - 1]!)}\n` +
      [0.015, 0.02, 0.025, 0.03]
        .map((x) => `|e| > ${100 * x} %: ${over(x)} (${pct(over(x) / n)}; normal ${pct(normal(x))})`)
        .join('; ') +
      '\n',
  );
}

/** Complementary error function (Numerical Recipes' erfcc, |error| < 1.2e-7). */
function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
