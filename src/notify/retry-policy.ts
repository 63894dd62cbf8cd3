/**
 * When to try a delivery again (docs/notifications.md, "Retries"): the Standard Webhooks schedule —
 * at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h — each delay with ±20 % jitter so
 * receivers coming back are not hit by every sender at once. `Retry-After` (seconds or an HTTP
 * date), on 429 and 503, is honoured when later than the schedule, up to a day.
 */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const;
const MAX_RETRY_AFTER_MS = 86_400_000;

/**
 * The delay before attempt `attempts + 1` after `attempts` failed ones, or null when none is left.
 * `now` is the caller's clock (an HTTP-date `Retry-After` is measured from it).
 */
export function retryDelay(
  attempts: number,
  opts: { random?: () => number; retryAfter?: string | undefined; now: number },
): number | null {
  const base = RETRY_DELAYS_MS[attempts - 1];
  if (base === undefined) return null;
  const jitter = 1 + ((opts.random ?? Math.random)() * 0.4 - 0.2);
  let delay = Math.round(base * jitter);
  const asked = parseRetryAfter(opts.retryAfter, opts.now);
  if (asked !== null) delay = Math.max(delay, Math.min(asked, MAX_RETRY_AFTER_MS));
  return delay;
}

/** `Retry-After` in milliseconds from now: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
