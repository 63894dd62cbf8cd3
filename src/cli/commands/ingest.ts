import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { isValidSlug } from '../../catalog/collection-slug.js';
import { configDir } from '../config-file.js';
import type { CliContext } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { printJson } from '../output.js';
import { action } from '../run.js';
import { batchesOf, type BatchRecord } from '../ingest/batches.js';
import { ndjsonBatches } from '../ingest/ndjson-batches.js';
import { readAhead } from '../ingest/read-ahead.js';
import { openInput, type InputFormat } from '../ingest/input.js';
import type { InputRecord } from '../ingest/input-record.js';
import { formatBytes, IngestProgress } from '../ingest/progress.js';
import { recordRefusal } from '../ingest/record-check.js';
import { clearState, loadState, newRunId, saveState, statePath, type ResumeState } from '../ingest/resume-state.js';
import { IngestPoster } from '../ingest/http-post.js';
import { RetriesExhausted, sendBatch, type Refusal, type SendResult } from '../ingest/sender.js';
import { resolveId, resourceDef } from './resources.js';

interface IngestOptions {
  source?: string;
  collection: string;
  ingestKey?: string;
  format?: InputFormat;
  atomic?: boolean;
  resume?: boolean;
  check: boolean;
  cast: boolean;
  delimiter: string;
  batchRecords: string;
  batchBytes: string;
  concurrency: string;
  retries: string;
  progress: boolean;
}

/** How many refusals the summary lists by line (all of them with --json). */
const LISTED_REFUSALS = 20;

function positiveInt(name: string, raw: string, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw usageError(`${name} must be an integer from 1 to ${max}, got "${raw}"`);
  return n;
}

/**
 * The ingest key to send with and a stable name of the target: `--ingest-key`/`SLUICE_INGEST_KEY`,
 * else the key this profile made for the source before, else a new one (kept in the profile).
 */
async function ingestTarget(
  ctx: CliContext,
  opts: IngestOptions,
): Promise<{ key: string; target: string; sourceId: string | null; cached: boolean }> {
  const given = opts.ingestKey ?? ctx.env.SLUICE_INGEST_KEY;
  if (given)
    return {
      key: given,
      target: `${ctx.url}|key:${given.slice(-8)}|${opts.collection}`,
      sourceId: null,
      cached: false,
    };
  if (!opts.source) throw usageError('ingest needs --source <src_… or name> (or --ingest-key <key>)');
  const project = ctx.project();
  const sourceId = await resolveId(ctx, resourceDef('sources'), {}, opts.source);
  const stored = ctx.config.profiles[ctx.profileName];
  let key = stored?.ingest_keys?.[sourceId];
  const cached = key !== undefined;
  if (!key) {
    const created = await ctx.client.data<{ key: string }>(
      'POST',
      `/v1/projects/${encodeURIComponent(project)}/sources/${encodeURIComponent(sourceId)}/ingest_keys`,
      { body: {} },
    );
    key = created.key;
    if (stored) {
      stored.ingest_keys = { ...stored.ingest_keys, [sourceId]: key };
      ctx.save();
    } else
      process.stderr.write(
        `sluice: created an ingest key for ${sourceId}; without a profile it is not kept (pass --ingest-key to reuse one)\n`,
      );
  }
  return { key, target: `${ctx.url}|${sourceId}|${opts.collection}`, sourceId, cached };
}

/** stdin copied to a temporary file, for --atomic (two passes) on a pipe. */
async function spoolStdin(): Promise<{ path: string; cleanup: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-ingest-'));
  const path = join(dir, 'stdin');
  await pipeline(process.stdin, createWriteStream(path));
  return { path, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Records with the ones that cannot be sent taken out and reported. */
async function* checked(
  records: AsyncIterable<InputRecord>,
  check: boolean,
  refused: (r: Refusal) => void,
): AsyncGenerator<BatchRecord & { offset: number }> {
  for await (const r of records) {
    const why = r.refusal ?? (check ? recordRefusal(r.text) : null);
    if (why) refused({ line: r.line, reason: why });
    else yield r;
  }
}

async function runIngest(ctx: CliContext, opts: IngestOptions, file: string): Promise<void> {
  const limits = {
    records: positiveInt('--batch-records', opts.batchRecords, 100_000),
    bytes: positiveInt('--batch-bytes', opts.batchBytes, 9 * 1024 * 1024),
  };
  const concurrency = positiveInt('--concurrency', opts.concurrency, 64);
  const retries = Number(opts.retries);
  if (!Number.isInteger(retries) || retries < 0 || retries > 1000)
    throw usageError(`--retries must be an integer from 0 to 1000, got "${opts.retries}"`);
  if (!isValidSlug(opts.collection))
    throw usageError(
      `--collection must be a collection slug (lowercase letters, digits, "-" and "_"), got "${opts.collection}"`,
    );
  if (opts.resume && file === '-') throw usageError('--resume needs a file: stdin cannot be read again');
  const csv = { cast: opts.cast, delimiter: opts.delimiter };

  const { key, target, sourceId, cached } = await ingestTarget(ctx, opts);
  const url = `${ctx.url}/ingest?key=${encodeURIComponent(key)}&collection=${encodeURIComponent(opts.collection)}`;

  let path = file;
  let cleanup = () => {};
  if (file === '-' && opts.atomic) ({ path, cleanup } = await spoolStdin());
  try {
    const refusals: Refusal[] = [];
    /** Refusals found while sending the acknowledged batches (kept for --resume: skipped batches are not checked again). */
    const batchRefusals: Refusal[] = [];
    if (opts.atomic) {
      // Pass 1: the whole file is checked before anything is sent (docs/cli.md, "Invalid records").
      const input = await openInput(path, opts.format, csv);
      for await (const _ of checked(input.records, true, (r) => refusals.push(r))) void _;
      if (refusals.length > 0) {
        // One document on stdout with --json: the summary says it all; the reason goes to stderr.
        report(ctx, {
          file,
          accepted: 0,
          refusals,
          batches: 0,
          bytes: input.size ?? 0,
          seconds: 0,
          resumedFrom: 0,
          atomic: true,
        });
        process.stderr.write(`sluice: ${refusals.length} invalid record(s): nothing was sent (--atomic)\n`);
        process.exitCode = 1;
        return;
      }
    }
    const input = await openInput(path, opts.format, csv);
    const resumable = path !== '-' && input.size !== null && input.mtimeMs !== null;
    const stateFile = resumable
      ? statePath(configDir(ctx.env), { file: resolve(path), size: input.size!, mtimeMs: input.mtimeMs!, target })
      : null;
    const previous = stateFile ? loadState(stateFile) : null;
    let state: ResumeState | null = null;
    if (opts.resume) {
      if (!previous)
        throw new CliError(
          `Nothing to resume: no interrupted ingest of ${file} into this target (an edited file starts over)`,
          1,
          'nothing_to_resume',
        );
      state = previous;
      limits.records = state.batch_records;
      limits.bytes = state.batch_bytes;
      refusals.push(...state.server_refusals);
      batchRefusals.push(...state.server_refusals);
    } else if (previous) {
      process.stderr.write(
        `sluice: an interrupted ingest of ${file} was stopped after ${previous.acked_records} records; starting over (use --resume to continue it)\n`,
      );
    }
    if (stateFile) {
      state ??= {
        run_id: newRunId(),
        file: resolve(path),
        size: input.size!,
        mtime_ms: input.mtimeMs!,
        target,
        batch_records: limits.records,
        batch_bytes: limits.bytes,
        acked_batches: 0,
        acked_records: 0,
        server_refusals: [],
        updated_at: '',
      };
    }
    const runId = state?.run_id ?? newRunId();
    const resumedFrom = state?.acked_batches ?? 0;
    const startedAt = performance.now();
    const progress = new IngestProgress(input.size, opts.progress && process.stderr.isTTY === true && !ctx.json);
    let accepted = state?.acked_records ?? 0;
    let offset = 0;
    let batches = 0;
    let acked = resumedFrom;
    const done = new Map<number, SendResult>();
    let failure: unknown = null;
    let lastSave = 0;
    const persist = (force = false) => {
      if (!stateFile || !state) return;
      const now = performance.now();
      if (!force && now - lastSave < 200) return;
      lastSave = now;
      saveState(stateFile, {
        ...state,
        acked_batches: acked,
        acked_records: accepted,
        server_refusals: batchRefusals,
      });
    };
    const onSigint = () => {
      failure ??= new CliError('Interrupted', 130, 'interrupted');
    };
    process.once('SIGINT', onSigint);
    const inflight = new Set<Promise<void>>();
    const poster = new IngestPoster(url, concurrency);
    try {
      const refused = (r: Refusal) => refusals.push(r);
      // NDJSON goes from bytes to batch bodies with no string per record (the CLI shares the
      // machine with the server it feeds: its CPU per byte is throughput lost; bench/cli).
      const source =
        input.chunks !== null
          ? ndjsonBatches(input.chunks, limits, { refused })
          : batchesOf(checked(input.records, opts.check, refused), limits);
      for await (const batch of readAhead(source, concurrency)) {
        offset = batch.offset;
        if (batch.index < resumedFrom) {
          batch.release?.();
          continue;
        }
        while (inflight.size >= concurrency && !failure) await Promise.race(inflight);
        if (failure) break;
        batches++;
        const p: Promise<void> = sendBatch(batch, {
          poster,
          runId,
          retries,
          atomic: opts.atomic === true,
          check: opts.check,
          onRetry: () => progress.update({ offset, accepted, refused: refusals.length, startedAt }),
        })
          .then(
            (r) => {
              done.set(batch.index, r);
              // Acknowledged in a row from the start: what --resume may skip.
              while (done.has(acked)) {
                const d = done.get(acked)!;
                done.delete(acked);
                accepted += d.accepted;
                refusals.push(...d.refusals);
                batchRefusals.push(...d.refusals);
                acked++;
              }
              persist();
              progress.update({ offset, accepted, refused: refusals.length, startedAt });
            },
            (err: unknown) => {
              failure ??= err;
            },
          )
          .finally(() => {
            inflight.delete(p);
            batch.release?.();
          });
        inflight.add(p);
      }
      await Promise.all(inflight);
    } catch (err) {
      failure ??= err;
      await Promise.allSettled(inflight);
    } finally {
      process.removeListener('SIGINT', onSigint);
      poster.close();
      progress.stop();
    }
    const seconds = (performance.now() - startedAt) / 1000;
    if (failure) {
      persist(true);
      // A kept ingest key that was deleted on the server: forget it, the next run makes a new one.
      if (cached && sourceId && failure instanceof CliError && failure.code.startsWith('auth_')) {
        delete ctx.config.profiles[ctx.profileName]?.ingest_keys?.[sourceId];
        ctx.save();
      }
      const e =
        failure instanceof CliError
          ? failure
          : new CliError(`Reading ${file}: ${(failure as Error).message}`, 1, 'input_invalid');
      const resume =
        stateFile && !(e.code === 'input_invalid')
          ? `; ${accepted} records in ${acked} batches are acknowledged: run the same command with --resume to continue from there`
          : '';
      if (failure instanceof RetriesExhausted || e.code === 'interrupted' || resume) {
        throw new CliError(`${e.message}${resume}`, e.exitCode, e.code, e.details);
      }
      throw e;
    }
    if (stateFile) clearState(stateFile);
    report(ctx, {
      file,
      accepted,
      refusals,
      batches,
      bytes: offset,
      seconds,
      resumedFrom,
      atomic: opts.atomic === true,
    });
    if (refusals.length > 0) process.exitCode = 1;
  } finally {
    cleanup();
  }
}

function report(
  ctx: CliContext,
  r: {
    file: string;
    accepted: number;
    refusals: Refusal[];
    batches: number;
    bytes: number;
    seconds: number;
    resumedFrom: number;
    atomic: boolean;
  },
): void {
  const sorted = [...r.refusals].sort((a, b) => a.line - b.line);
  const rate = r.seconds > 0 ? Math.round(r.accepted / r.seconds) : 0;
  if (ctx.json) {
    printJson({
      file: r.file,
      accepted: r.accepted,
      refused: sorted.length,
      refusals: sorted,
      batches: r.batches,
      resumed_from_batch: r.resumedFrom,
      bytes: r.bytes,
      seconds: Math.round(r.seconds * 1000) / 1000,
      records_per_second: rate,
    });
    return;
  }
  const lines = [
    `${r.accepted} records accepted, ${sorted.length} refused (${r.batches} batches, ${formatBytes(r.bytes)}, ${r.seconds.toFixed(1)} s, ${rate} records/s${r.resumedFrom ? `, resumed after batch ${r.resumedFrom - 1}` : ''})`,
  ];
  for (const x of sorted.slice(0, LISTED_REFUSALS)) lines.push(`  line ${x.line}: ${x.reason}`);
  if (sorted.length > LISTED_REFUSALS)
    lines.push(`  … and ${sorted.length - LISTED_REFUSALS} more (--json lists every one)`);
  process.stdout.write(lines.join('\n') + '\n');
}

/** `sluice ingest <file|-> --source … --collection …` (docs/cli.md, "Sending files"). */
export function registerIngest(program: Command): void {
  program
    .command('ingest')
    .argument('<file>', 'NDJSON, a JSON array or CSV file; "-" reads stdin')
    .description(
      'Send a file of records in batches, with a progress bar, retries that never double a batch, and a summary',
    )
    .option('--source <source>', 'the source (id or name) to write into')
    .option('--collection <slug>', 'the collection slug inside the source (created when data first arrives)', 'default')
    .option(
      '--ingest-key <key>',
      'send with this ingest key instead of one the CLI makes for the source (env SLUICE_INGEST_KEY)',
    )
    .option('--format <format>', 'ndjson, json (an array) or csv (default: by extension, else sniffed)')
    .option(
      '--atomic',
      'check the whole file first; if any record is invalid send nothing (default: send the valid ones, report the rest)',
    )
    .option('--resume', 'continue an interrupted run of the same file from its last acknowledged batch')
    .option(
      '--no-check',
      'no check by the CLI (CSV and JSON arrays before sending, an NDJSON batch the server refused line by line): the records the server refuses are dropped one at a time',
    )
    .option(
      '--no-cast',
      'CSV: keep every value a string (default: numbers and true/false become JSON numbers and booleans)',
    )
    .option('--delimiter <char>', 'CSV field delimiter', ',')
    .option('--batch-records <n>', 'records per request at most', '5000')
    .option('--batch-bytes <n>', 'bytes per request at most (the server takes 10 MiB)', String(4 * 1024 * 1024))
    .option('--concurrency <n>', 'requests in flight', '4')
    .option('--retries <n>', 'retries of a batch on network errors, 429 and 5xx (503 waits its Retry-After)', '8')
    .option('--no-progress', 'no progress bar (it is shown only on a terminal anyway)')
    .addHelpText(
      'after',
      `
Records that cannot be stored (not JSON, not an object, a bad timestamp) are reported with their line
numbers and the others still go in; exit code 1 when any was refused. With --atomic nothing is sent
unless every record is valid. Each batch is sent with an Idempotency-Key, so a retried batch is never
stored twice; after an interruption, run the same command with --resume.

Examples:
  $ sluice ingest events.ndjson --source browser --collection page-views
  $ sluice ingest export.csv --source src_… --collection orders --atomic
  $ zcat big.ndjson.gz | sluice ingest - --source browser --collection page-views
  $ sluice ingest events.ndjson --source browser --collection page-views --resume
  $ sluice ingest events.json --ingest-key pik_… --collection page-views --json`,
    )
    .action(
      action<IngestOptions>(async (ctx, opts, [file]) => {
        if (opts.format !== undefined && !['ndjson', 'json', 'csv'].includes(opts.format))
          throw usageError(`--format must be ndjson, json or csv, got "${opts.format}"`);
        await runIngest(ctx, opts, file!);
      }),
    );
}
