import type { TIME_RANGES } from '../metric-records.js';
import { addLocal, startOfLocal, type CalendarUnit } from './zoned-time.js';

export type TimeRange = (typeof TIME_RANGES)[number];

/** A resolved window `[start, end)` (epoch ms). */
export interface ResolvedRange {
  start: number;
  end: number;
  /**
   * Set for `next_*` ranges: the time (now) from which the window is projected rather than observed;
   * no buckets are answered from it on, the forecast covers it.
   */
  projectFrom: number | null;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Rolling windows ending now, by length. */
const ROLLING: Partial<Record<TimeRange, number>> = {
  last_hour: HOUR,
  last_6_hours: 6 * HOUR,
  last_24_hours: DAY,
  last_7_days: 7 * DAY,
  last_30_days: 30 * DAY,
  last_90_days: 90 * DAY,
  last_365_days: 365 * DAY,
};

/** Windows ending after now: the same length before now is observed, the part past now projected. */
const AHEAD: Partial<Record<TimeRange, number>> = {
  next_7_days: 7 * DAY,
  next_30_days: 30 * DAY,
  next_90_days: 90 * DAY,
};

/** Calendar periods in the viewer's zone: the current one (up to now) and the previous one (whole). */
const CALENDAR: Partial<Record<TimeRange, { unit: CalendarUnit; back: 0 | 1 }>> = {
  today: { unit: 'day', back: 0 },
  yesterday: { unit: 'day', back: 1 },
  this_week: { unit: 'week', back: 0 },
  last_week: { unit: 'week', back: 1 },
  this_month: { unit: 'month', back: 0 },
  last_month: { unit: 'month', back: 1 },
  this_quarter: { unit: 'quarter', back: 0 },
  last_quarter: { unit: 'quarter', back: 1 },
  this_year: { unit: 'year', back: 0 },
  last_year: { unit: 'year', back: 1 },
};

export interface RangeContext {
  now: number;
  /** IANA zone the calendar periods are taken in. */
  timeZone: string;
  /** `custom`: the saved range (the metric's or a page's); null when none is saved. */
  custom: { start: number; end: number } | null;
  /** `all_time`: the start of the earliest stored data, or null when nothing is stored. */
  earliest: number | null;
}

/**
 * The window an AnalyticsTimeRange names at `now` (docs/metrics.md, "Time ranges"). Returns null only
 * for `custom` with no saved range. Calendar periods follow `timeZone` (weeks start on Monday);
 * rolling windows are exact durations; `all_time` starts at the earliest stored data (now when none).
 */
export function resolveTimeRange(range: TimeRange, ctx: RangeContext): ResolvedRange | null {
  const { now, timeZone: tz } = ctx;
  const rolling = ROLLING[range];
  if (rolling !== undefined) return { start: now - rolling, end: now, projectFrom: null };
  const ahead = AHEAD[range];
  if (ahead !== undefined) return { start: now - ahead, end: now + ahead, projectFrom: now };
  const calendar = CALENDAR[range];
  if (calendar !== undefined) {
    const current = startOfLocal(tz, calendar.unit, now);
    if (calendar.back === 0) return { start: current, end: now, projectFrom: null };
    return { start: addLocal(tz, calendar.unit, current, -1), end: current, projectFrom: null };
  }
  if (range === 'all_time') return { start: Math.min(ctx.earliest ?? now, now), end: now, projectFrom: null };
  // custom
  return ctx.custom === null ? null : { start: ctx.custom.start, end: ctx.custom.end, projectFrom: null };
}
