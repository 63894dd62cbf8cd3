import { nextSlot, validateUserCron } from '../schedule/cron.js';

/**
 * The monitor's view of cron schedules (spec rule 4: five fields, UTC, finest one minute), on the
 * scheduler's cron module: validation for the API, and the next slot after a time.
 */
export function checkMonitorCron(expr: string): { ok: true } | { ok: false; message: string } {
  return validateUserCron(expr);
}

/** The first slot strictly after `afterMs` (epoch ms, UTC), or null when the expression never runs again. */
export function nextMonitorSlot(expr: string, afterMs: number): number | null {
  return nextSlot(expr, afterMs);
}
