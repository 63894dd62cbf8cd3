import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs on stdout (or `destination`: tests read what was logged). Secrets never
 * reach a log line: routes are logged by pattern.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'sluice' },
    redact: ['headers.authorization', 'key', 'token', 'password', 'api_key'],
  };
  return destination ? pino(options, destination) : pino(options);
}
