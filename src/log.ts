import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout. Secrets never reach a log line: routes are logged by pattern. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'sluice' }, redact: ['headers.authorization', 'key', 'token', 'password', 'api_key'] });
}
