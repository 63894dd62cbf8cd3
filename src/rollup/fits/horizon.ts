/** Spec `ui_chart_forecast_horizon` → the instant the forecast is for. */

export type ForecastHorizon =
  | 'next_7_days'
  | 'next_30_days'
  | 'next_90_days'
  | 'end_of_quarter'
  | 'end_of_year'
  | 'next_year';

const DAY_MS = 86_400_000;

/**
 * The time the forecast is for, given `now` (epoch ms). `next_N_days` adds N×24 h; `end_of_quarter`
 * and `end_of_year` are the last millisecond of the current UTC quarter or year (the spec: "quarter
 * and year end in UTC"); `next_year` is the same UTC date and time a year on (29 February → 28 February).
 */
export function horizonTime(h: ForecastHorizon, now: number): number {
  const date = new Date(now);
  const year = date.getUTCFullYear();
  switch (h) {
    case 'next_7_days':
      return now + 7 * DAY_MS;
    case 'next_30_days':
      return now + 30 * DAY_MS;
    case 'next_90_days':
      return now + 90 * DAY_MS;
    case 'end_of_quarter':
      return Date.UTC(year, Math.floor(date.getUTCMonth() / 3) * 3 + 3, 1) - 1;
    case 'end_of_year':
      return Date.UTC(year + 1, 0, 1) - 1;
    case 'next_year': {
      const day = Math.min(date.getUTCDate(), daysInMonth(year + 1, date.getUTCMonth()));
      return (
        Date.UTC(year + 1, date.getUTCMonth(), day) + (now - Date.UTC(year, date.getUTCMonth(), date.getUTCDate()))
      );
    }
  }
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}
