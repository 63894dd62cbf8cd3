/**
 * The query benchmark's knobs: `--scale` on the command line (or BENCH_SCALE), the rest from the
 * environment. A value that does not parse stops the run (exit 2) with the list below.
 */
import { availableParallelism } from 'node:os';
import { integerKnob, listKnob, numberKnob, OptionError, refuseOptions } from '../knobs.js';

/** Records at scale 1: 100 million over 30 days. */
export const FULL_RECORDS = 100_000_000;
export const PARTS = ['import', 'backlog', 'queries', 'lag', 'series', 'many-metrics'] as const;
export type Part = (typeof PARTS)[number];

export interface QueryOptions {
  scale: number;
  records: number;
  fileRows: number;
  /** User-id pool (the distinct-count field's cardinality). */
  users: number;
  seed: number;
  workers: number;
  queryRepeats: number;
  rawRepeats: number;
  coverage: 'strict' | 'observed';
  backlogRounds: number;
  parts: Part[];
  burstRecords: number;
  /** Offered records/s of the lag run; 0: half the measured maximum. */
  lagRate: number;
  lagBatch: number;
  lagSeconds: number;
  /** Another build's entry point to run as the server, or undefined. */
  serverMain: string | undefined;
  /** Another build's entry point whose queries are timed on the same data after this one's, or undefined. */
  compareMain: string | undefined;
  /** Another build's entry point the scenarios of part `series` run on first, in the same run, or undefined. */
  baselineMain: string | undefined;
  /** time_range of the lag run's poll (by minute). */
  lagPollRange: string;
  /** Longest wait for a metric to become active, s. */
  backfillTimeoutS: number;
  /** Part `series`: records over the last hour, and the user-id pools of its many-series scenarios. */
  seriesRecords: number;
  seriesCounts: number[];
  /** Part `many-metrics`: metrics on the view, and records posted. */
  manyMetrics: number;
  manyRecords: number;
  /** Records of the month's import (part `import`). */
  importRecords: number;
  /** Records per NDJSON body of the import. */
  importBody: number;
}

export const KNOBS: Record<string, string> = {
  '--scale': 'share of 100 million records over 30 days (default 0.05; 0.01 = 1M for a quick run; also BENCH_SCALE)',
  BENCH_FILE_ROWS: 'records per generated view file (default 250,000)',
  BENCH_USERS: 'distinct user ids drawn from (default 20% of the records, at least 1,000)',
  BENCH_SEED: 'seed of the generated data (default 1)',
  BENCH_WORKERS: `SLUICE_WORKERS of the server (default ${availableParallelism()})`,
  BENCH_QUERY_REPEATS: 'timed repeats of each aggregation request (default 50)',
  BENCH_RAW_REPEATS: 'timed repeats of each raw DuckDB scan (default 5)',
  BENCH_COVERAGE: 'coverage_mode of the timed queries, strict or observed (default observed)',
  BENCH_BACKLOG_ROUNDS: 'most rounds of the four queries timed while the compaction backlog waits (default 200)',
  BENCH_PARTS: `comma-separated, of ${PARTS.join(', ')} (default: all)`,
  BENCH_BURST_RECORDS: 'records of the closed-loop burst that measures the maximum ingest rate (default 200,000)',
  BENCH_LAG_RATE: "offered records/s of the lag run (default 0: half the burst's rate)",
  BENCH_LAG_BATCH: 'records per request of the lag run (default 20)',
  BENCH_LAG_SECONDS: 'length of the lag run, s (default 20)',
  BENCH_SERVER_MAIN:
    "another build's dist/src/main.js to run as the server (default: this build's; compares builds with one bench client)",
  BENCH_COMPARE_MAIN:
    "another build's dist/src/main.js: after the queries, the server restarts on the same data dir as that build and the queries run again (side by side; default: none)",
  BENCH_BASELINE_MAIN:
    "another build's dist/src/main.js: part series runs every scenario on it first, then on this build, and prints this ÷ base (default: none)",
  BENCH_LAG_POLL_RANGE:
    'time_range the lag run polls by minute (default last_hour; last_24_hours: a 24 h dashboard under live ingest)',
  BENCH_BACKFILL_TIMEOUT_S: 'longest wait for a metric to become active, s (default 3600)',
  BENCH_SERIES_RECORDS: 'part series: records spread over the last hour per scenario (default 200,000)',
  BENCH_SERIES_COUNTS: 'part series: comma-separated user-id pools of the many-series scenarios (default 20000,100000)',
  BENCH_MANY_METRICS: 'part many-metrics: metrics on the one view (default 100)',
  BENCH_MANY_RECORDS: 'part many-metrics: records posted per scenario (default 200,000)',
  BENCH_IMPORT_RECORDS: "records of part import's month (timestamps over the last 30 days; default 1,000,000)",
  BENCH_IMPORT_BODY: 'records per NDJSON body of part import (default 1,000)',
};

function scaleArg(argv: readonly string[]): number {
  let raw = process.env.BENCH_SCALE;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--scale') raw = argv[++i];
    else if (a.startsWith('--scale=')) raw = a.slice('--scale='.length);
    else throw new OptionError(`unknown argument "${a}" (the only flag is --scale)`);
  }
  if (raw === undefined || raw === '') return 0.05;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0.0001 || v > 1)
    throw new OptionError(`--scale "${raw}": must be a number from 0.0001 to 1 — ${KNOBS['--scale']}`);
  return v;
}

function pollRange(v: string): string {
  if (!['last_hour', 'last_6_hours', 'last_24_hours'].includes(v))
    throw new OptionError(`BENCH_LAG_POLL_RANGE="${v}": ${KNOBS.BENCH_LAG_POLL_RANGE}`);
  return v;
}

export function readOptions(argv: readonly string[] = process.argv.slice(2)): QueryOptions {
  const integer = (name: string, fallback: number, min: number, max: number) =>
    integerKnob(KNOBS, name, fallback, min, max);
  try {
    const scale = scaleArg(argv);
    const records = Math.round(FULL_RECORDS * scale);
    const coverage = process.env.BENCH_COVERAGE ?? 'observed';
    if (coverage !== 'strict' && coverage !== 'observed')
      throw new OptionError(`BENCH_COVERAGE="${coverage}": ${KNOBS.BENCH_COVERAGE}`);
    return {
      scale,
      records,
      fileRows: integer('BENCH_FILE_ROWS', 250_000, 1_000, 10_000_000),
      users: integer('BENCH_USERS', Math.max(1_000, Math.round(records / 5)), 1, 1_000_000_000),
      seed: integer('BENCH_SEED', 1, 0, 1_000_000),
      workers: integer('BENCH_WORKERS', availableParallelism(), 1, 64),
      queryRepeats: integer('BENCH_QUERY_REPEATS', 50, 1, 100_000),
      rawRepeats: integer('BENCH_RAW_REPEATS', 5, 1, 1_000),
      coverage,
      backlogRounds: integer('BENCH_BACKLOG_ROUNDS', 200, 1, 100_000),
      parts: listKnob<Part>(KNOBS, 'BENCH_PARTS', [...PARTS], (s) =>
        (PARTS as readonly string[]).includes(s) ? (s as Part) : undefined,
      ),
      burstRecords: integer('BENCH_BURST_RECORDS', 200_000, 1_000, 100_000_000),
      lagRate: numberKnob(KNOBS, 'BENCH_LAG_RATE', 0, 0, 10_000_000),
      lagBatch: integer('BENCH_LAG_BATCH', 20, 1, 100_000),
      lagSeconds: integer('BENCH_LAG_SECONDS', 20, 1, 3_600),
      serverMain: process.env.BENCH_SERVER_MAIN || undefined,
      compareMain: process.env.BENCH_COMPARE_MAIN || undefined,
      baselineMain: process.env.BENCH_BASELINE_MAIN || undefined,
      lagPollRange: pollRange(process.env.BENCH_LAG_POLL_RANGE ?? 'last_hour'),
      backfillTimeoutS: integer('BENCH_BACKFILL_TIMEOUT_S', 3_600, 1, 86_400),
      seriesRecords: integer('BENCH_SERIES_RECORDS', 200_000, 1_000, 100_000_000),
      seriesCounts: listKnob<number>(KNOBS, 'BENCH_SERIES_COUNTS', [20_000, 100_000], (s) => {
        const n = Number(s);
        return Number.isInteger(n) && n >= 1 && n <= 1_000_000 ? n : undefined;
      }),
      manyMetrics: integer('BENCH_MANY_METRICS', 100, 1, 1_000),
      manyRecords: integer('BENCH_MANY_RECORDS', 200_000, 1_000, 100_000_000),
      importRecords: integer('BENCH_IMPORT_RECORDS', 1_000_000, 1_000, 100_000_000),
      importBody: integer('BENCH_IMPORT_BODY', 1_000, 1, 100_000),
    };
  } catch (err) {
    return refuseOptions('query bench', KNOBS, err);
  }
}
