import { Cron } from 'croner';

/**
 * The monitor's view of cron schedules: validation for the API and the next slot after a time.
 * Interim adapter until `src/schedule/cron.ts` (`validateUserCron`, `nextSlot`) lands in main; then
 * these two delegate to it and nothing else here changes. Five fields, UTC, one slot per minute at most.
 */
export function checkMonitorCron(expr: string): { ok: true } | { ok: false; message: string } {
  if (expr.length < 1 || expr.length > 128) return { ok: false, message: 'must be 1 to 128 characters' };
  if (expr.trim().startsWith('@')) return { ok: false, message: 'must be a five-field cron expression (minute hour day month weekday), not a nickname such as @reboot' };
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5) return { ok: false, message: `must have exactly five fields (minute hour day month weekday; no seconds field), not ${fields.length}` };
  try {
    const c = new Cron(expr, { timezone: 'UTC', paused: true, mode: '5-part' });
    if (c.nextRun(new Date(0)) === null) return { ok: false, message: 'never runs' };
  } catch (err) {
    return { ok: false, message: `is not a valid cron expression: ${(err as Error).message.replace(/^CronPattern: /, '')}` };
  }
  return { ok: true };
}

/** The first slot strictly after `afterMs` (epoch ms, UTC), or null when the expression never runs again. */
export function nextMonitorSlot(expr: string, afterMs: number): number | null {
  const c = new Cron(expr, { timezone: 'UTC', paused: true, mode: '5-part' });
  return c.nextRun(new Date(afterMs))?.getTime() ?? null;
}
