/**
 * The e2e benchmark's knobs, read once from the environment (and `--view`, `--metric` from the command line).
 * A value that does not parse stops the run with a message naming the variable and what it takes:
 * a typo must not fall back to a default and measure something else.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { flagKnob, integerKnob, listKnob, OptionError, refuseOptions } from '../knobs.js';

export const INPUTS = ['flat', 'nested', 'mixed'] as const;
export type InputName = (typeof INPUTS)[number];

export interface E2eOptions {
  inputs: InputName[];
  flatRecords: number;
  nestedRecords: number;
  /** Records per NDJSON body. */
  batch: number;
  connections: number;
  /** SLUICE_WORKERS of each server run, in order. */
  workers: number[];
  /** Also run every scenario with one view on the collection. */
  view: boolean;
  /** Also run every scenario with one view and one metric on it (implies `view`). */
  metric: boolean;
  /** Percent of a scenario's bodies sent (and drained) before timing. */
  warmupPercent: number;
  /** Times the warm-up bodies are sent (and drained) per worker; 0: once whatever the workers. */
  warmupRounds: number;
  /** Times every scenario runs, in rounds (each round runs them all once); figures are medians. */
  repeats: number;
  /** Distinct key orders in the nested records (producers). */
  keyOrders: number;
  /** Another build's `src/main.js`: every scenario also runs on it, side by side (null: this build only). */
  baseline: string | null;
  /** The baseline build's Node options (null: the same as this build's). */
  baselineNodeFlags: string[] | null;
}

/** Every knob with its default and meaning, for the refusal message and the docs. */
export const KNOBS: Record<string, string> = {
  BENCH_INPUTS: `comma-separated, of ${INPUTS.join(', ')} (default: all)`,
  BENCH_FLAT_RECORDS: 'flat records per scenario (default 3,000,000)',
  BENCH_NESTED_RECORDS: 'nested records per scenario (default 100,000)',
  BENCH_BATCH: 'records per NDJSON body (default 500)',
  BENCH_CONNECTIONS: 'concurrent HTTP connections (default 4)',
  BENCH_WORKERS: `comma-separated SLUICE_WORKERS values (default 1,${availableParallelism()})`,
  BENCH_VIEW: '1 to also run each scenario with a view on the collection (or --view; default 0)',
  BENCH_METRIC:
    '1 to also run each scenario with a view and one metric on it, beside the view alone (or --metric; default 0)',
  BENCH_WARMUP_PERCENT: 'share of the bodies sent and drained before timing, 0 to 50 (default 10)',
  BENCH_WARMUP_ROUNDS:
    'times the warm-up bodies are sent and drained, per worker, 0 to 10 (default 2; 0: once, as before)',
  BENCH_REPEATS:
    'times every scenario runs, in rounds of all scenarios, 1 to 10: records/s are medians and the view ratios are given per round (default 1)',
  BENCH_KEY_ORDERS: 'key orders (producers) in the nested records, 1 to 8 (default 3)',
  BENCH_BASELINE:
    "another build's output directory (holding src/main.js, e.g. a copy of dist/ from main): each scenario also runs on it, before this build's run (default: none)",
  BENCH_BASELINE_NODE_FLAGS:
    "the baseline build's Node options, space-separated (default: the same as this build's; for a baseline whose npm start had other flags)",
};

function baselineMain(): string | null {
  const raw = process.env.BENCH_BASELINE;
  if (raw === undefined || raw === '') return null;
  const main = join(resolve(raw), 'src', 'main.js');
  if (!existsSync(main))
    throw new OptionError(`BENCH_BASELINE="${raw}": ${main} does not exist — ${KNOBS.BENCH_BASELINE}`);
  return main;
}

/** The options, or a message and exit code 2 when one is wrong. */
export function readOptions(argv: readonly string[] = process.argv.slice(2)): E2eOptions {
  const integer = (name: string, fallback: number, min: number, max: number) =>
    integerKnob(KNOBS, name, fallback, min, max);
  try {
    for (const arg of argv)
      if (arg !== '--view' && arg !== '--metric')
        throw new OptionError(`unknown argument "${arg}" (the flags are --view and --metric)`);
    const metric = flagKnob(KNOBS, 'BENCH_METRIC') || argv.includes('--metric');
    return {
      inputs: listKnob<InputName>(KNOBS, 'BENCH_INPUTS', [...INPUTS], (s) =>
        (INPUTS as readonly string[]).includes(s) ? (s as InputName) : undefined,
      ),
      flatRecords: integer('BENCH_FLAT_RECORDS', 3_000_000, 1, 100_000_000),
      nestedRecords: integer('BENCH_NESTED_RECORDS', 100_000, 1, 10_000_000),
      batch: integer('BENCH_BATCH', 500, 1, 100_000),
      connections: integer('BENCH_CONNECTIONS', 4, 1, 256),
      workers: listKnob(KNOBS, 'BENCH_WORKERS', [1, availableParallelism()], (s) =>
        /^\d+$/.test(s) && Number(s) >= 1 && Number(s) <= 64 ? Number(s) : undefined,
      ),
      // A metric sits on a view: asking for one brings the view runs with it.
      view: flagKnob(KNOBS, 'BENCH_VIEW') || argv.includes('--view') || metric,
      metric,
      warmupPercent: integer('BENCH_WARMUP_PERCENT', 10, 0, 50),
      warmupRounds: integer('BENCH_WARMUP_ROUNDS', 2, 0, 10),
      repeats: integer('BENCH_REPEATS', 1, 1, 10),
      keyOrders: integer('BENCH_KEY_ORDERS', 3, 1, 8),
      baseline: baselineMain(),
      baselineNodeFlags:
        process.env.BENCH_BASELINE_NODE_FLAGS === undefined
          ? null
          : process.env.BENCH_BASELINE_NODE_FLAGS.split(' ').filter(Boolean),
    };
  } catch (err) {
    return refuseOptions('e2e bench', KNOBS, err);
  }
}
