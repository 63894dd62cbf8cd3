/** Exit codes of the `sluice` command (docs/cli.md, "Exit codes"). */
export const EXIT_OK = 0;
/** Refused or failed: a bad key, a server error, records refused by an ingest. */
export const EXIT_FAILED = 1;
/** Usage: an unknown command or flag, a missing argument, a bad flag value. */
export const EXIT_USAGE = 2;

/** A failure the command reports in one line (or as JSON with --json) and exits with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT_FAILED,
    /** The API's error code when the server refused, else a CLI code such as `not_signed_in`. */
    readonly code: string = 'failed',
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** A bad flag value or missing argument: exit 2, like commander's own usage errors. */
export function usageError(message: string): CliError {
  return new CliError(message, EXIT_USAGE, 'usage');
}
