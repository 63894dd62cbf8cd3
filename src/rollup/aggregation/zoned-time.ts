/**
 * Wall-clock arithmetic in IANA time zones with nothing but `Intl` (Node 20 has no Temporal): the
 * offset of a zone at an instant, an instant's local fields, and the instant of a local wall time,
 * DST-correct. Local times that do not exist (a spring-forward gap) resolve to the first instant
 * after the gap; local times that occur twice (fall back) to the earlier one — Temporal's
 * "compatible" disambiguation — so a day that starts in a gap starts at the transition.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(tz, f);
  }
  return f;
}

/** True when `tz` is an IANA zone name (or `UTC`) this runtime knows. */
export function isTimeZone(tz: string): boolean {
  if (tz.length === 0 || tz.length > 64) return false;
  try {
    formatter(tz);
    return true;
  } catch {
    return false;
  }
}

/** Local calendar fields; `month` 1..12, `weekday` 1 (Monday) .. 7 (Sunday), as ISO 8601 counts. */
export interface LocalFields {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  weekday: number;
}

/**
 * Fixed offsets of zones that never change theirs (ms, east positive): UTC under any of its names
 * and `Etc/GMT±N` (POSIX signs: `Etc/GMT+5` is UTC−5). Their local fields are UTC fields of the
 * shifted instant: `formatToParts` cost ~1 µs a call, ~5 ms of planning a 30 d by-hour window.
 */
const fixedOffsets = new Map<string, number | null>();

function fixedOffset(tz: string): number | null {
  let o = fixedOffsets.get(tz);
  if (o === undefined) {
    const resolved = formatter(tz).resolvedOptions().timeZone;
    const etc = /^Etc\/GMT([+-])(\d{1,2})$/.exec(resolved);
    o = resolved === 'UTC' ? 0 : etc ? (etc[1] === '+' ? -1 : 1) * Number(etc[2]) * 3_600_000 : null;
    if (fixedOffsets.size >= 1_000) fixedOffsets.clear();
    fixedOffsets.set(tz, o);
  }
  return o;
}

/** The local fields of instant `t` (epoch ms) in `tz`. */
export function localFields(tz: string, t: number): LocalFields {
  const fixed = fixedOffset(tz);
  if (fixed !== null) {
    const d = new Date(Math.floor(t / 1000) * 1000 + fixed);
    return {
      year: d.getUTCFullYear(),
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
      second: d.getUTCSeconds(),
      weekday: ((d.getUTCDay() + 6) % 7) + 1,
    };
  }
  const parts = formatter(tz).formatToParts(new Date(t));
  const get = (type: Intl.DateTimeFormatPartTypes): number => Number(parts.find((p) => p.type === type)?.value ?? 0);
  const year = get('year');
  const month = get('month');
  const day = get('day');
  const weekday = ((new Date(utcOf(year, month, day)).getUTCDay() + 6) % 7) + 1;
  return { year, month, day, hour: get('hour'), minute: get('minute'), second: get('second'), weekday };
}

/** The zone's offset from UTC at instant `t`, in ms (east positive), to the second. */
export function offsetAt(tz: string, t: number): number {
  const f = localFields(tz, t);
  const wall = utcOf(f.year, f.month, f.day, f.hour, f.minute, f.second);
  return wall - Math.floor(t / 1000) * 1000;
}

/** Epoch ms of a UTC wall time; fields may overflow (month 13, day 0) and are normalised. */
function utcOf(year: number, month: number, day: number, hour = 0, minute = 0, second = 0): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day); // setUTCFullYear keeps years 0..99 as written
  d.setUTCHours(hour, minute, second, 0);
  return d.getTime();
}

/**
 * The instant of local wall time year-month-day hour:minute in `tz` (fields may overflow: day 32 is
 * the next month's first). Gaps resolve later, repeats earlier (module comment).
 */
export function zonedInstant(tz: string, year: number, month: number, day: number, hour = 0, minute = 0): number {
  const wall = utcOf(year, month, day, hour, minute);
  // The offsets in force around the wall time: one of them is the right one.
  const guess = wall - offsetAt(tz, wall);
  const offsets = new Set([
    offsetAt(tz, guess),
    offsetAt(tz, guess - 6 * 3_600_000),
    offsetAt(tz, guess + 6 * 3_600_000),
  ]);
  let valid = Infinity;
  let latest = -Infinity;
  for (const o of offsets) {
    const t = wall - o;
    if (offsetAt(tz, t) === o) valid = Math.min(valid, t);
    latest = Math.max(latest, t);
  }
  return Number.isFinite(valid) ? valid : latest;
}

/** Calendar units wall-clock bucketing and time ranges work in. */
export type CalendarUnit = 'minute' | 'hour' | 'day' | 'week' | 'month' | 'quarter' | 'year';

/** Start of the local `unit` holding `t` in `tz`. Weeks start on Monday (ISO 8601). */
export function startOfLocal(tz: string, unit: CalendarUnit, t: number): number {
  if (unit === 'minute') return Math.floor(t / 60_000) * 60_000; // every zone in use is on whole minutes
  const f = localFields(tz, t);
  switch (unit) {
    case 'hour':
      // A local hour starts at local minute 0; a fall-back repeat gives two distinct hours.
      return t - ((f.minute * 60 + f.second) * 1000 + (((t % 1000) + 1000) % 1000));
    case 'day':
      return zonedInstant(tz, f.year, f.month, f.day);
    case 'week':
      return zonedInstant(tz, f.year, f.month, f.day - (f.weekday - 1));
    case 'month':
      return zonedInstant(tz, f.year, f.month, 1);
    case 'quarter':
      return zonedInstant(tz, f.year, f.month - ((f.month - 1) % 3), 1);
    case 'year':
      return zonedInstant(tz, f.year, 1, 1);
  }
}

/**
 * The start of the local `unit` `n` units after the one starting at `start` (a value of
 * `startOfLocal`); n may be negative. Days, weeks and months follow the calendar, so a local day is
 * 23 or 25 hours long across a DST change.
 */
export function addLocal(tz: string, unit: CalendarUnit, start: number, n: number): number {
  if (unit === 'minute') return start + n * 60_000;
  if (unit === 'hour') {
    // Step in real hours and snap to the local hour: exact wherever offsets change by whole hours
    // (Asia/Kolkata's :30 stays :30); a zone moving by 30 minutes gets one shorter hour.
    return startOfLocal(tz, 'hour', start + n * 3_600_000);
  }
  const f = localFields(tz, start);
  switch (unit) {
    case 'day':
      return zonedInstant(tz, f.year, f.month, f.day + n);
    case 'week':
      return zonedInstant(tz, f.year, f.month, f.day + 7 * n);
    case 'month':
      return zonedInstant(tz, f.year, f.month + n, 1);
    case 'quarter':
      return zonedInstant(tz, f.year, f.month + 3 * n, 1);
    case 'year':
      return zonedInstant(tz, f.year + n, 1, 1);
  }
}
