/**
 * The one reading of ISO 8601 instants: a record's own event time (`timestamp`, also epoch
 * milliseconds) at the ingest front, which refuses what this does not accept, and in the
 * pipeline, which files rows by it — so both agree on every record — and date filters of lists.
 */

/** The end of JavaScript's time range (year 275760), exclusive. */
export const MAX_EPOCH_MS = 8.64e15;

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
  // Read by hand, character codes only: this runs for every record carrying a timestamp, and a
  // regular expression with captures cost more than parsing the record itself.
  const n = text.length;
  if (n < 10 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45) return NaN;
  const y = digits(text, 0, 4);
  const mo = digits(text, 5, 2);
  const d = digits(text, 8, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo)) return NaN;
  let h = 0;
  let mi = 0;
  let s = 0;
  let ms = 0;
  let offsetMinutes = 0;
  let i = 10;
  if (i < n) {
    const sep = text.charCodeAt(i);
    if (sep !== 84 /* T */ && sep !== 116 /* t */ && sep !== 32) return NaN;
    h = digits(text, 11, 2);
    mi = digits(text, 14, 2);
    if (h < 0 || h > 23 || text.charCodeAt(13) !== 58 || mi < 0 || mi > 59) return NaN;
    i = 16;
    if (i < n && text.charCodeAt(i) === 58) {
      s = digits(text, 17, 2);
      if (s < 0 || s > 59) return NaN;
      i = 19;
      if (i < n && text.charCodeAt(i) === 46 /* . */) {
        let k = 0;
        for (i++; i < n && k < 9 && isDigit(text.charCodeAt(i)); i++, k++)
          if (k < 3) ms = ms * 10 + text.charCodeAt(i) - 48;
        if (k === 0) return NaN;
        if (k === 1) ms *= 100;
        else if (k === 2) ms *= 10;
      }
    }
    if (i < n) {
      const z = text.charCodeAt(i);
      if (z === 90 /* Z */ || z === 122 /* z */) i++;
      else if (z === 43 /* + */ || z === 45 /* - */) {
        const oh = digits(text, i + 1, 2);
        if (oh < 0) return NaN;
        let om = 0;
        i += 3;
        if (i < n) {
          if (text.charCodeAt(i) === 58) i++;
          om = digits(text, i, 2);
          if (om < 0) return NaN;
          i += 2;
        }
        offsetMinutes = (z === 43 ? 1 : -1) * (oh * 60 + om);
      } else return NaN;
    }
  }
  if (i !== n) return NaN;
  let at = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  // Date.UTC reads years 0–99 as 1900–1999.
  if (y < 100) at = new Date(at).setUTCFullYear(y);
  at -= offsetMinutes * 60_000;
  return Math.abs(at) < MAX_EPOCH_MS ? at : NaN;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** The number written by `count` digits at `at`, or -1 when they are not all digits. */
function digits(text: string, at: number, count: number): number {
  let v = 0;
  for (let i = at; i < at + count; i++) {
    const c = text.charCodeAt(i);
    if (!(c >= 48 && c <= 57)) return -1;
    v = v * 10 + c - 48;
  }
  return v;
}

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}
