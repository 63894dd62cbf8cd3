import { iso } from '../clock.js';
import type { HourlyCell } from './records.js';

const HOUR = 3_600_000;
/** Spec: "records per hourly window: exactly 24 entries". */
export const HOURLY_WINDOW = 24;

/** Start of the hour holding `ms`. */
export function hourOf(ms: number): number {
  return Math.floor(ms / HOUR) * HOUR;
}

/**
 * `cells` with `add` folded into the hour of `at`, keeping only the last 24 hours before `now`
 * (the stored form is sparse: hours with nothing in them are not kept).
 */
export function addToHour(cells: HourlyCell[], at: number, now: number, add: [number, number, number]): HourlyCell[] {
  const oldest = hourOf(now) - (HOURLY_WINDOW - 1) * HOUR;
  const hour = hourOf(at);
  const out = cells.filter((c) => c[0] >= oldest).map((c) => [...c] as HourlyCell);
  if (hour < oldest) return out;
  const cell = out.find((c) => c[0] === hour);
  if (cell) {
    cell[1] += add[0];
    cell[2] += add[1];
    cell[3] += add[2];
  } else {
    out.push([hour, ...add]);
    out.sort((a, b) => a[0] - b[0]);
  }
  return out;
}

/** Always 24 hours ending with the one holding `now`, oldest first; hours without runs read as zero. */
export function hourlyWindow<T>(
  cells: HourlyCell[],
  now: number,
  entry: (hour: string, cell: HourlyCell | undefined) => T,
): T[] {
  const last = hourOf(now);
  const byHour = new Map(cells.map((c) => [c[0], c]));
  const out: T[] = [];
  for (let i = HOURLY_WINDOW - 1; i >= 0; i--) {
    const h = last - i * HOUR;
    out.push(entry(iso(h), byHour.get(h)));
  }
  return out;
}
