import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { usageError } from '../errors.js';
import { formatCsv, formatTable, printJson, type Cell } from '../output.js';
import { action } from '../run.js';
import { resolveId, resourceDef } from './resources.js';

interface Aggregation {
  interval: string;
  values: string[];
  start_at: string;
  end_at: string;
  complete_through_at: string | null;
  series: { details: { label: string; hash: string }; records: Record<string, (number | null)[]> }[];
}

interface QueryOptions {
  range?: string;
  interval?: string;
  values?: string;
  series?: string;
  start?: string;
  end?: string;
  timezone?: string;
  observed?: boolean;
  csv?: boolean;
}

/** One row per bucket and series: time, series label, then each value. */
export function aggregationRows(agg: Aggregation): { columns: string[]; rows: Cell[][] } {
  const columns = ['time', 'series', ...agg.values];
  const rows: Cell[][] = [];
  for (const s of agg.series) {
    for (const [time, values] of Object.entries(s.records)) rows.push([time, s.details.label, ...values]);
  }
  rows.sort((a, b) => String(a[0]).localeCompare(String(b[0])) || String(a[1]).localeCompare(String(b[1])));
  return { columns, rows };
}

async function runQuery(ctx: CliContext, opts: QueryOptions, ref: string): Promise<void> {
  if (ctx.json && opts.csv) throw usageError('--json and --csv exclude each other');
  if ((opts.start === undefined) !== (opts.end === undefined)) throw usageError('--start and --end go together');
  const project = ctx.project();
  const metricId = await resolveId(ctx, resourceDef('metrics'), {}, ref);
  const agg = await ctx.client.data<Aggregation>(
    'GET',
    `/v1/projects/${encodeURIComponent(project)}/metrics/${encodeURIComponent(metricId)}/aggregation`,
    {
      query: {
        time_range: opts.range,
        interval: opts.interval,
        values: opts.values,
        series: opts.series,
        start_at: opts.start,
        end_at: opts.end,
        timezone: opts.timezone,
        coverage_mode: opts.observed ? 'observed' : undefined,
      },
    },
  );
  if (ctx.json) return printJson(agg);
  const { columns, rows } = aggregationRows(agg);
  if (opts.csv) process.stdout.write(formatCsv(columns, rows));
  else {
    process.stdout.write(formatTable(columns, rows));
    process.stderr.write(
      `${agg.interval} buckets ${agg.start_at} – ${agg.end_at}; final through ${agg.complete_through_at ?? '(nothing final yet)'}\n`,
    );
  }
}

/** `sluice query <metric>` (docs/cli.md, "Querying"). */
export function registerQuery(program: Command): void {
  program
    .command('query')
    .argument('<metric>', 'metric id or name')
    .description("A metric's values per bucket and series, as a table, JSON or CSV")
    .option(
      '--range <time_range>',
      "last_hour, last_24_hours, last_7_days, today, … (default: the metric's saved range)",
    )
    .option('--interval <interval>', "minute, hour, day, month or auto (default: the metric's)")
    .option('--values <list>', "comma-separated chart values, e.g. count,p95 (default: the metric's)")
    .option('--series <hashes>', 'comma-separated series hashes; __total__ is the whole metric')
    .option('--start <iso>', 'window start (with --end), an ISO 8601 date-time')
    .option('--end <iso>', 'window end (with --start)')
    .option('--timezone <zone>', 'IANA zone for buckets, e.g. Europe/Berlin (default UTC)')
    .option('--observed', 'include buckets past the final watermark that already have data')
    .option('--csv', 'print CSV')
    .addHelpText(
      'after',
      `
Examples:
  $ sluice query Latency --range last_24_hours --interval hour --values count,p95
  $ sluice query met_… --range last_7_days --csv > latency.csv
  $ sluice query met_… --start 2026-01-01T00:00:00Z --end 2026-01-02T00:00:00Z --json`,
    )
    .action(action<QueryOptions>((ctx, opts, [ref]) => runQuery(ctx, opts, ref!)));
}
