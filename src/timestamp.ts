/**
 * The one reading of ISO 8601 instants: a record's own event time (`timestamp`, also epoch
 * milliseconds) at the ingest front, which refuses what this does not accept, and in the
 * pipeline, which files rows by it — so both agree on every record — and date filters of lists.
 */

/** The end of JavaScript's time range (year 275760), exclusive. */
export const MAX_EPOCH_MS = 8.64e15;

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

/**
 * Epoch milliseconds of a `timestamp` value, or NaN when it is not one: a number in
 * [0, 8.64e15), or an ISO 8601 string (see `instantMs`) from 1970 on.
 */
export function timestampMs(value: unknown): number {
  if (typeof value === 'number') return value >= 0 && value < MAX_EPOCH_MS ? Math.floor(value) : NaN;
  if (typeof value !== 'string') return NaN;
  const ms = instantMs(value);
  return ms >= 0 ? ms : NaN;
}

/**
 * Epoch milliseconds of an ISO 8601 date or date-time whose fields are a real calendar date and
 * time (no 2026-02-30, no 25:00), or NaN. A date-time without an offset is UTC, not the server's
 * local time. Fractions use a point (a comma would split filter lists).
 */
export function instantMs(text: string): number {
  const m = ISO_8601.exec(text);
  if (!m) return NaN;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  if (Number(mo) < 1 || Number(mo) > 12 || Number(d) < 1 || Number(d) > daysIn(Number(y), Number(mo))) return NaN;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return NaN;
  const offset = zone === 'Z' || zone === 'z' ? 'Z' : zone.length === 3 ? `${zone}:00` : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const ms = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${(frac + '000').slice(0, 3)}${offset}`);
  return Math.abs(ms) < MAX_EPOCH_MS ? ms : NaN;
}

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}
