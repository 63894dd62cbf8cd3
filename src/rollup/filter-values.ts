import type { FilterFieldType } from './filter-ast.js';

/**
 * Values as filters see them: ISO-8601 dates to epoch milliseconds, strings ordered as DuckDB orders
 * VARCHAR (by code point), and record values read per field type. Shared by the checker and the
 * predicate compiler so a literal and a record value are read the same way.
 */

const ISO_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/**
 * Epoch milliseconds of an ISO-8601 date or date-time, or null when `text` is not one. Accepted:
 * `YYYY-MM-DD`, then optionally `T` (or a space) `HH:MM`, `:SS`, `.fraction` (1 to 9 digits, read to
 * the millisecond), and a zone `Z`, `±HH`, `±HHMM` or `±HH:MM`. No zone means UTC. Out-of-range parts
 * (month 13, 30 February, hour 24) are refused rather than rolled over.
 */
export function isoToEpochMs(text: string): number | null {
  const m = ISO_DATE.exec(text);
  if (!m) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = m[4] === undefined ? 0 : Number(m[4]);
  const minute = m[5] === undefined ? 0 : Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const ms = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  const zone = m[8];
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = digits.length > 2 ? Number(digits.slice(2)) : 0;
    if (oh > 23 || om > 59) return null;
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0–99 as 1900–1999.
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, ms);
  return d.getTime() - offsetMinutes * 60_000;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * Orders strings by code point, as DuckDB orders VARCHAR (UTF-8 bytes). JavaScript's `<` compares
 * UTF-16 units, which puts U+E000–U+FFFF after astral characters; this corrects the first differing
 * pair of units when both lie at or above the surrogates.
 */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** A record value read as a date: epoch ms (number or bigint), an ISO-8601 string, or a Date. */
export function dateValueMs(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string') return isoToEpochMs(v);
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.getTime();
  return null;
}

/**
 * A record value read as the field's type; anything else (missing, null, or a value of another type,
 * which a typed column could not hold) reads as null.
 */
export function readValue(v: unknown, type: FilterFieldType): string | number | boolean | readonly unknown[] | null {
  switch (type) {
    case 'string':
      return typeof v === 'string' ? v : null;
    case 'number':
      if (typeof v === 'number') return Number.isNaN(v) ? null : v;
      return typeof v === 'bigint' ? Number(v) : null;
    case 'boolean':
      return typeof v === 'boolean' ? v : null;
    case 'date':
      return dateValueMs(v);
    case 'array':
      return Array.isArray(v) ? v : null;
    case 'null':
      return null;
  }
}
