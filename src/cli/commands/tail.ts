import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { action } from '../run.js';
import { listAll } from './resources.js';

interface TailOptions {
  since?: string;
  interval: string;
  max?: string;
  timeout?: string;
}

/** A collection (`col_…` or slug) or a view (`viw_…` or name) and where its records are listed. */
async function recordsPath(ctx: CliContext, ref: string): Promise<{ path: string; what: string }> {
  const project = `/v1/projects/${encodeURIComponent(ctx.project())}`;
  if (ref.startsWith('col_')) return { path: `${project}/collections/${ref}/docs`, what: `collection ${ref}` };
  if (ref.startsWith('viw_')) return { path: `${project}/views/${ref}/records`, what: `view ${ref}` };
  const collections = (await listAll<{ id: string; slug: string; name: string }>(ctx, `${project}/collections`)).filter(
    (c) => c.slug === ref || c.name === ref,
  );
  const views = (await listAll<{ id: string; name: string }>(ctx, `${project}/views`)).filter((v) => v.name === ref);
  const hits = [
    ...collections.map((c) => ({ path: `${project}/collections/${c.id}/docs`, what: `collection ${c.id}` })),
    ...views.map((v) => ({ path: `${project}/views/${v.id}/records`, what: `view ${v.id}` })),
  ];
  if (hits.length === 1) return hits[0]!;
  if (hits.length === 0)
    throw new CliError(`No collection or view named "${ref}" in project ${ctx.project()}`, 1, 'not_found');
  throw new CliError(`"${ref}" names ${hits.map((h) => h.what).join(' and ')}; give the id`, 1, 'ambiguous');
}

/** A `--since` value: an ISO date-time, or a duration back from now (30s, 5m, 2h, 1d). */
export function sinceInstant(text: string, now = Date.now()): string {
  const m = /^(\d+)(s|m|h|d)$/.exec(text);
  if (m)
    return new Date(
      now - Number(m[1]) * { s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[m[2] as 's' | 'm' | 'h' | 'd'],
    ).toISOString();
  if (!Number.isNaN(Date.parse(text)) && /\d{4}-\d\d-\d\dT/.test(text)) return new Date(text).toISOString();
  throw usageError(`--since takes a duration (30s, 5m, 2h, 1d) or an ISO 8601 date-time with offset, got "${text}"`);
}

/**
 * Follow a collection's or view's records as they are written (docs/cli.md, "Following records").
 * Records are listed in event-time order (`sort=asc`); the command keeps the cursor of the page it is
 * on and how many of that page it printed, and asks again from there, so it prints each record once
 * and moves on by `next_cursor` when a page fills. Records whose event time is before what was
 * already shown are not followed.
 */
async function runTail(ctx: CliContext, opts: TailOptions, ref: string): Promise<void> {
  const interval = Number(opts.interval);
  if (!Number.isFinite(interval) || interval < 50)
    throw usageError('--interval is milliseconds between polls, at least 50');
  const max = opts.max === undefined ? Infinity : Number(opts.max);
  if (!(max >= 1)) throw usageError('--max must be a positive number');
  const timeout = opts.timeout === undefined ? Infinity : Number(opts.timeout) * 1000;
  if (!(timeout > 0)) throw usageError('--timeout is seconds, more than 0');
  const { path } = await recordsPath(ctx, ref);
  const startAt = sinceInstant(opts.since ?? '1m');
  let cursor: string | undefined;
  let printed = 0;
  let total = 0;
  const deadline = performance.now() + timeout;
  let stop = false;
  const onSigint = () => (stop = true);
  process.once('SIGINT', onSigint);
  try {
    while (!stop && total < max && performance.now() < deadline) {
      const env = await ctx.client.request<unknown[]>('GET', path, {
        query: { sort: 'asc', limit: 200, ...(cursor ? { after: cursor } : { start_at: startAt }) },
      });
      const fresh = env.data.slice(printed);
      for (const rec of fresh) {
        if (total >= max) break;
        process.stdout.write(JSON.stringify(rec) + '\n');
        total++;
      }
      printed = env.data.length;
      const next = env.pagination?.next_cursor;
      if (next && env.data.length > 0) {
        cursor = next;
        printed = 0;
        continue;
      }
      if (total < max) await sleep(Math.min(interval, Math.max(0, deadline - performance.now())));
    }
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

/** `sluice tail <collection|view>`. */
export function registerTail(program: Command): void {
  program
    .command('tail')
    .argument('<collection|view>', 'a collection (id or slug) or a view (id or name)')
    .description('Follow new records of a collection or view, one JSON line each')
    .option(
      '--since <when>',
      'start from records with event time after this (30s, 5m, 2h, 1d, or an ISO date-time)',
      '1m',
    )
    .option('--interval <ms>', 'milliseconds between polls', '1000')
    .option('--max <n>', 'stop after this many records')
    .option('--timeout <seconds>', 'stop after this long')
    .addHelpText(
      'after',
      `
Records appear once the pipeline has written them (a second or so after they are accepted).

Examples:
  $ sluice tail page-views
  $ sluice tail viw_… --since 1h --max 100
  $ sluice tail col_… --since 2026-01-31T12:00:00Z | jq .path`,
    )
    .action(action<TailOptions>((ctx, opts, [ref]) => runTail(ctx, opts, ref!)));
}
