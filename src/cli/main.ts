#!/usr/bin/env node
/**
 * `sluice`, the command line client (docs/cli.md). Exit codes: 0 ok, 1 refused or failed, 2 usage.
 * Run from a checkout with `npx sluice …` (bin/sluice.js loads this file once built).
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { registerAuth } from './commands/auth.js';
import { registerIngest } from './commands/ingest.js';
import { registerQuery } from './commands/query.js';
import { registerResources } from './commands/resources.js';
import { registerTail } from './commands/tail.js';
import { EXIT_OK, EXIT_USAGE } from './errors.js';

function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string })
      .version;
  } catch {
    return 'unknown';
  }
}

/** The whole command tree; `main` parses argv with it. Exported for the help test. */
export function buildProgram(): Command {
  const program = new Command('sluice');
  program
    .description('Command line client for Sluice: sign in, manage resources, send files, query metrics, follow records')
    .version(version(), '-V, --version')
    .option(
      '--profile <name>',
      "the profile in the config file to use (env SLUICE_PROFILE; default: the config's default)",
    )
    .option('--url <url>', "the server, e.g. http://127.0.0.1:8080 (env SLUICE_URL; default: the profile's)")
    .option('--project <id>', "the project to act in (env SLUICE_PROJECT; default: the profile's, see `projects use`)")
    .option('--json', 'print JSON for scripts (errors too: {"error": {code, message}} on stdout)')
    .showHelpAfterError('(run with --help for usage)')
    .showSuggestionAfterError(true)
    // Usage errors exit 2 (docs/cli.md, "Exit codes"); commander would exit 1.
    .exitOverride()
    .addHelpText(
      'after',
      `
Environment: SLUICE_URL, SLUICE_API_KEY (wins over the profile's key), SLUICE_PROFILE, SLUICE_PROJECT,
XDG_CONFIG_HOME (config in $XDG_CONFIG_HOME/sluice/config.json, mode 0600).
Exit codes: 0 ok, 1 refused or failed (a bad key, a server error, refused records), 2 usage.

Examples:
  $ sluice login
  $ sluice projects list
  $ sluice ingest events.ndjson --source browser --collection page-views
  $ sluice query Latency --range last_24_hours --interval hour --values count,p95
  $ sluice tail page-views`,
    );
  registerAuth(program);
  registerResources(program);
  registerIngest(program);
  registerQuery(program);
  registerTail(program);
  return program;
}

export async function main(argv: string[] = process.argv): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version "fail" with exit code 0; a group without a subcommand shows its help (code 1 → usage).
      process.exitCode =
        err.exitCode === 0 || err.code === 'commander.helpDisplayed' || err.code === 'commander.version'
          ? EXIT_OK
          : EXIT_USAGE;
      return;
    }
    throw err;
  }
}

await main();
