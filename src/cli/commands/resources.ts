import type { Command } from 'commander';
import { buildBody, collect } from '../body.js';
import type { CliContext } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { formatRecord, formatTable, printJson } from '../output.js';
import { action } from '../run.js';

interface Scope {
  metric?: string;
}

/** One resource the CLI lists, gets, creates, updates and deletes, described as data. */
interface ResourceDef {
  name: string;
  singular: string;
  /** Id prefix: a reference with it is an id, anything else is looked up by name (or slug). */
  prefix: string | null;
  /** The list and create path. */
  base(ctx: CliContext, scope: Scope): string;
  /** One item's path (defaults to `${base}/${id}`). */
  one?(ctx: CliContext, scope: Scope, id: string): string;
  /** The create path when it differs from the list path. */
  createPath?(ctx: CliContext, scope: Scope): string;
  /** Needs `--metric` to name one item (monitors live under a metric). */
  metricScoped?: boolean;
  columns: string[];
  example: string;
  /** DELETE `…/force` exists (scheduled deletion, docs/api.md). */
  force: boolean;
}

const inProject = (rest: string) => (ctx: CliContext) => `/v1/projects/${encodeURIComponent(ctx.project())}/${rest}`;

function metricPath(ctx: CliContext, scope: Scope): string {
  if (!scope.metric) throw usageError('monitors: pass --metric <met_…> (a monitor belongs to a metric)');
  return `${inProject('metrics')(ctx)}/${encodeURIComponent(scope.metric)}/monitors`;
}

export const RESOURCES: ResourceDef[] = [
  {
    name: 'projects',
    singular: 'project',
    prefix: 'prj_',
    base: () => '/v1/projects',
    columns: ['id', 'name', 'created_at', 'deleted_at'],
    example: "--name 'Web shop'",
    force: true,
  },
  {
    name: 'sources',
    singular: 'source',
    prefix: 'src_',
    base: inProject('sources'),
    columns: ['id', 'name', 'created_at', 'deleted_at'],
    example: '--name browser',
    force: true,
  },
  {
    name: 'collections',
    singular: 'collection',
    prefix: 'col_',
    base: inProject('collections'),
    columns: ['id', 'name', 'slug', 'source_id', 'created_at'],
    example: "--name 'Page views' --set source_id=src_…",
    force: true,
  },
  {
    name: 'views',
    singular: 'view',
    prefix: 'viw_',
    base: inProject('views'),
    columns: ['id', 'name', 'collection_id', 'parent_view_id', 'status'],
    example: '--file view.json',
    force: true,
  },
  {
    name: 'metrics',
    singular: 'metric',
    prefix: 'met_',
    base: inProject('metrics'),
    columns: ['id', 'name', 'view_id', 'status', 'group_by'],
    example: '--name Latency --set view_id=viw_… --set \'group_by=["path"]\'',
    force: true,
  },
  {
    name: 'monitors',
    singular: 'monitor',
    prefix: 'mon_',
    base: (ctx, scope) => (scope.metric ? metricPath(ctx, scope) : inProject('monitors')(ctx)),
    one: (ctx, scope, id) => `${metricPath(ctx, scope)}/${encodeURIComponent(id)}`,
    createPath: metricPath,
    metricScoped: true,
    columns: ['id', 'name', 'metric_id', 'status', 'condition_type'],
    example: '--metric met_… --file monitor.json',
    force: false,
  },
  {
    name: 'pulls',
    singular: 'pull',
    prefix: 'pul_',
    base: inProject('pulls'),
    columns: ['id', 'name', 'status', 'schedule_cron', 'last_success_at'],
    example: '--file pull.json',
    force: false,
  },
  {
    name: 'checks',
    singular: 'check',
    prefix: null,
    base: inProject('checks'),
    columns: ['id', 'name', 'status', 'last_checked_at'],
    example: '--file check.json',
    force: false,
  },
];

const onePath = (def: ResourceDef, ctx: CliContext, scope: Scope, id: string) =>
  def.one ? def.one(ctx, scope, id) : `${def.base(ctx, scope)}/${encodeURIComponent(id)}`;

/** Every item of a list, following `pagination.next_cursor` (bounded: at most `max` items). */
export async function listAll<T = Record<string, unknown>>(
  ctx: CliContext,
  path: string,
  query: Record<string, string> = {},
  max = 100_000,
): Promise<T[]> {
  const items: T[] = [];
  let after: string | undefined;
  for (;;) {
    const env = await ctx.client.request<T[]>('GET', path, {
      query: { ...query, limit: 200, ...(after ? { after } : {}) },
    });
    items.push(...env.data);
    after = env.pagination?.next_cursor ?? undefined;
    if (!after || items.length >= max) return items;
  }
}

/** An id, or the id of the one item whose name (or slug) is `ref`. */
export async function resolveId(ctx: CliContext, def: ResourceDef, scope: Scope, ref: string): Promise<string> {
  if (def.prefix === null || ref.startsWith(def.prefix)) return ref;
  const items = await listAll<Record<string, unknown>>(ctx, def.base(ctx, scope));
  const hits = items.filter((i) => i.name === ref || i.slug === ref);
  if (hits.length === 1) return String(hits[0]!.id);
  if (hits.length === 0)
    throw new CliError(`No ${def.singular} named "${ref}" (${def.name} list shows them)`, 1, 'not_found');
  throw new CliError(
    `${hits.length} ${def.name} are named "${ref}"; give the id (${hits.map((h) => h.id).join(', ')})`,
    1,
    'ambiguous',
  );
}

export function resourceDef(name: string): ResourceDef {
  const def = RESOURCES.find((r) => r.name === name);
  if (!def) throw new Error(`unknown resource ${name}`);
  return def;
}

function printItem(ctx: CliContext, item: unknown): void {
  if (ctx.json) printJson(item);
  else if (item && typeof item === 'object') process.stdout.write(formatRecord(item as Record<string, unknown>));
  else process.stdout.write('OK\n');
}

function queryPairs(pairs: string[] = []): Record<string, string> {
  const q: Record<string, string> = {};
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw usageError(`--where takes name=value (a query parameter of the list), got "${p}"`);
    q[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return q;
}

type ListOpts = { limit?: string; all?: boolean; where?: string[]; after?: string; metric?: string };
type BodyOpts = { file?: string; set?: string[]; name?: string; metric?: string };

function registerResource(program: Command, def: ResourceDef): void {
  const group = program
    .command(def.name)
    .description(`List, get, create, update and delete ${def.name}`)
    .addHelpText(
      'after',
      `\nExamples:\n  $ sluice ${def.name} list\n  $ sluice ${def.name} create ${def.example}\n  $ sluice ${def.name} get ${def.prefix ?? ''}… --json`,
    );
  const inProjectNote = def.name === 'projects' ? '' : " (in --project, SLUICE_PROJECT or the profile's project)";
  const metricOption = (c: Command) =>
    def.metricScoped ? c.option('--metric <metric>', 'the metric the monitor belongs to (id or name)') : c;
  const scopeOf = async (ctx: CliContext, opts: { metric?: string }): Promise<Scope> =>
    opts.metric ? { metric: await resolveId(ctx, resourceDef('metrics'), {}, opts.metric) } : {};

  metricOption(group.command('list').description(`List ${def.name}${inProjectNote}`))
    .option('--limit <n>', 'items per page (1 to 200)', '25')
    .option('--after <cursor>', 'the page after this cursor (pagination.next_cursor)')
    .option('--all', 'every page')
    .option('--where <name=value>', 'a query parameter of the list (filters, order_by, sort); repeatable', collect)
    .addHelpText(
      'after',
      `\nExamples:\n  $ sluice ${def.name} list\n  $ sluice ${def.name} list --all --json\n  $ sluice ${def.name} list --where order_by=created_at --where sort=desc`,
    )
    .action(
      action<ListOpts>(async (ctx, opts) => {
        const scope = await scopeOf(ctx, opts);
        const where = queryPairs(opts.where);
        let items: Record<string, unknown>[];
        let next: string | null = null;
        if (opts.all) items = await listAll(ctx, def.base(ctx, scope), where);
        else {
          const limit = Number(opts.limit);
          if (!Number.isInteger(limit) || limit < 1 || limit > 200)
            throw usageError('--limit must be an integer from 1 to 200');
          const env = await ctx.client.request<Record<string, unknown>[]>('GET', def.base(ctx, scope), {
            query: { ...where, limit, ...(opts.after ? { after: opts.after } : {}) },
          });
          items = env.data;
          next = env.pagination?.next_cursor ?? null;
        }
        if (ctx.json) printJson(opts.all ? items : { data: items, next_cursor: next });
        else {
          process.stdout.write(
            formatTable(
              def.columns,
              items.map((i) => def.columns.map((c) => i[c] as never)),
            ),
          );
          if (next) process.stderr.write(`(more: --after ${next}, or --all)\n`);
        }
      }),
    );

  metricOption(
    group
      .command('get')
      .argument('<id>', `${def.singular} id${def.prefix ? ' or name' : ''}`)
      .description(`Show one ${def.singular}`),
  )
    .addHelpText(
      'after',
      `\nExamples:\n  $ sluice ${def.name} get ${def.prefix ?? ''}…\n  $ sluice ${def.name} get ${def.prefix ?? ''}… --json`,
    )
    .action(
      action<{ metric?: string }>(async (ctx, opts, [ref]) => {
        const scope = await scopeOf(ctx, opts);
        printItem(ctx, await ctx.client.data('GET', onePath(def, ctx, scope, await resolveId(ctx, def, scope, ref!))));
      }),
    );

  metricOption(group.command('create').description(`Create a ${def.singular}; the body comes from --file and --set`))
    .option('--name <name>', 'the name field')
    .option('-f, --file <path>', 'the request body, a JSON object ("-" reads stdin)')
    .option(
      '--set <field=value>',
      'a body field (value parsed as JSON when it parses; a.b=1 nests); repeatable',
      collect,
    )
    .addHelpText(
      'after',
      `\nExamples:\n  $ sluice ${def.name} create ${def.example}\n  $ sluice ${def.name} create --file body.json --json`,
    )
    .action(
      action<BodyOpts>(async (ctx, opts) => {
        const scope = await scopeOf(ctx, opts);
        const body = buildBody(opts, { name: opts.name });
        const path = def.createPath ? def.createPath(ctx, scope) : def.base(ctx, scope);
        printItem(ctx, await ctx.client.data('POST', path, { body }));
      }),
    );

  metricOption(
    group
      .command('update')
      .argument('<id>', `${def.singular} id${def.prefix ? ' or name' : ''}`)
      .description(`Change fields of a ${def.singular}`),
  )
    .option('--name <name>', 'the new name')
    .option('-f, --file <path>', 'the fields to change, a JSON object ("-" reads stdin)')
    .option('--set <field=value>', 'a field to change; repeatable', collect)
    .addHelpText(
      'after',
      `\nExamples:\n  $ sluice ${def.name} update ${def.prefix ?? ''}… --name 'New name'\n  $ sluice ${def.name} update ${def.prefix ?? ''}… --set deleted_at=null`,
    )
    .action(
      action<BodyOpts>(async (ctx, opts, [ref]) => {
        const scope = await scopeOf(ctx, opts);
        const body = buildBody(opts, { name: opts.name });
        if (Object.keys(body).length === 0)
          throw usageError('Nothing to change: pass --name, --set field=value or --file');
        printItem(
          ctx,
          await ctx.client.data('POST', onePath(def, ctx, scope, await resolveId(ctx, def, scope, ref!)), { body }),
        );
      }),
    );

  const del = metricOption(
    group
      .command('delete')
      .argument('<id>', `${def.singular} id${def.prefix ? ' or name' : ''}`)
      .description(`Delete a ${def.singular}`),
  );
  if (def.force)
    del.option(
      '--force',
      'remove it and everything beneath it now, instead of scheduling the deletion (7 days to restore)',
    );
  del
    .addHelpText(
      'after',
      `\nExamples:\n  $ sluice ${def.name} delete ${def.prefix ?? ''}…${def.force ? `\n  $ sluice ${def.name} delete ${def.prefix ?? ''}… --force` : ''}`,
    )
    .action(
      action<{ force?: boolean; metric?: string }>(async (ctx, opts, [ref]) => {
        const scope = await scopeOf(ctx, opts);
        const id = await resolveId(ctx, def, scope, ref!);
        const data = await ctx.client.data('DELETE', onePath(def, ctx, scope, id) + (opts.force ? '/force' : ''));
        if (ctx.json) printJson(data ?? { id, deleted: true });
        else
          process.stdout.write(
            data && typeof data === 'object' && 'deleted_at' in data
              ? `${id} scheduled for deletion at ${(data as { deleted_at: string }).deleted_at}\n`
              : `${id} deleted\n`,
          );
      }),
    );

  if (def.name === 'projects') {
    group
      .command('use')
      .argument('<id>', 'project id or name')
      .description("Make a project the profile's default for commands that need one")
      .addHelpText('after', '\nExamples:\n  $ sluice projects use prj_…\n  $ sluice projects use "Web shop"')
      .action(
        action(async (ctx, _opts, [ref]) => {
          const id = await resolveId(ctx, def, {}, ref!);
          await ctx.client.data('GET', `/v1/projects/${encodeURIComponent(id)}`);
          const stored = ctx.config.profiles[ctx.profileName];
          if (!stored)
            throw new CliError(
              `No profile "${ctx.profileName}" to store the project in; run \`sluice login\` first`,
              1,
              'not_signed_in',
            );
          stored.project = id;
          ctx.save();
          if (ctx.json) printJson({ profile: ctx.profileName, project: id });
          else process.stdout.write(`Profile "${ctx.profileName}" now uses project ${id}\n`);
        }),
      );
  }
}

/** `projects|sources|collections|views|metrics|monitors|pulls|checks list|get|create|update|delete`. */
export function registerResources(program: Command): void {
  for (const def of RESOURCES) registerResource(program, def);
}
