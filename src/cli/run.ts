import type { Command } from 'commander';
import { makeContext, type CliContext, type GlobalOptions } from './context.js';
import { CliError, EXIT_FAILED } from './errors.js';

/**
 * The one way a command's action runs: build its context from the global and own options, run it,
 * and turn any failure into a message on stderr (or a JSON error with --json) and an exit code.
 */
export function action<O extends object>(
  fn: (ctx: CliContext, opts: O & GlobalOptions, args: string[], cmd: Command) => Promise<void> | void,
  use: { creatingProfile?: boolean } = {},
) {
  return async (...received: unknown[]) => {
    const cmd = received[received.length - 1] as Command;
    const args = received.slice(0, -2).filter((a): a is string => typeof a === 'string');
    const opts = cmd.optsWithGlobals<O & GlobalOptions>();
    try {
      const ctx = makeContext(opts, process.env, use);
      await fn(ctx, opts, args, cmd);
    } catch (err) {
      reportFailure(err, opts.json === true);
    }
  };
}

/** Print a failure the way --json or a person expects, and set the exit code (never exit mid-write). */
export function reportFailure(err: unknown, json: boolean): void {
  const e = err instanceof CliError ? err : new CliError((err as Error)?.message ?? String(err), EXIT_FAILED, 'failed');
  if (json)
    process.stdout.write(
      JSON.stringify({
        error: { code: e.code, message: e.message, ...(e.details !== undefined ? { details: e.details } : {}) },
      }) + '\n',
    );
  process.stderr.write(`sluice: ${e.message}\n`);
  if (!(err instanceof CliError) && process.env.SLUICE_DEBUG) process.stderr.write(`${(err as Error)?.stack}\n`);
  process.exitCode = e.exitCode;
}
