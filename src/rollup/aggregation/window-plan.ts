import { invalidField } from '../../errors.js';
import type { CHART_INTERVALS } from '../metric-records.js';
import { AGGREGATION_LIMITS, autoInterval, bucketBound, bucketBoundaries, type Interval } from './buckets.js';
import { resolveTimeRange, type RangeContext, type TimeRange } from './time-range.js';

export type ChartInterval = (typeof CHART_INTERVALS)[number];

/** The window part of a request: explicit bounds win over a named range (spec). */
export interface WindowRequest {
  /** `start_at`/`end_at` (epoch ms), or null to use `timeRange`. */
  explicit: { start: number; end: number } | null;
  timeRange: TimeRange;
  interval: ChartInterval;
  timeZone: string;
}

/** Where the answer's time axis lies. */
export interface WindowPlan {
  /** The window the buckets cover: the first bucket's start and the last one's end. */
  start: number;
  end: number;
  interval: Interval;
  timeZone: string;
  /** Answer bucket boundaries (buckets.ts `bucketBoundaries`). */
  boundaries: readonly number[];
  /** Start of the projected part of a `next_*` range (now), else null. */
  projectFrom: number | null;
  /** End of the requested window before it was widened to whole buckets (the default forecast time of `next_*`). */
  requestedEnd: number;
}

/**
 * The window, interval and buckets of a request at `ctx.now`. Throws 400 naming `query.time_range`
 * for `custom` with no saved range, and `query.interval` when an explicit interval gives more than
 * `maxBuckets` buckets (`query.start_at` when even months would: the window itself is too long).
 */
export function planWindow(req: WindowRequest, ctx: RangeContext): WindowPlan {
  const range = req.explicit ? { ...req.explicit, projectFrom: null } : resolveTimeRange(req.timeRange, ctx);
  if (range === null) {
    throw invalidField(
      'query.time_range',
      'is custom but no custom range is saved: send start_at and end_at, or save ui_chart_custom_range_start_at and ui_chart_custom_range_end_at on the metric',
    );
  }
  const { start, end } = range;
  const interval: Interval = req.interval === 'auto' ? autoInterval(start, end) : req.interval;
  const n = bucketBound(interval, start, end);
  if (n > AGGREGATION_LIMITS.maxBuckets) {
    const max = AGGREGATION_LIMITS.maxBuckets;
    if (req.interval === 'auto') {
      // Only a window of centuries overflows months: the range itself is what to fix.
      throw invalidField(
        req.explicit ? 'query.start_at' : 'query.time_range',
        `gives a window of about ${n} months; at most ${max} buckets are answered: send a shorter range`,
      );
    }
    const what = req.explicit ? 'start_at to end_at' : `time_range ${req.timeRange}`;
    throw invalidField(
      'query.interval',
      `${interval} gives about ${n} buckets over ${what}; at most ${max} are answered: use a coarser interval (or auto), or a shorter range`,
    );
  }
  const boundaries = bucketBoundaries(interval, req.timeZone, start, end);
  return {
    start: boundaries[0]!,
    end: boundaries[boundaries.length - 1]!,
    interval,
    timeZone: req.timeZone,
    boundaries,
    projectFrom: range.projectFrom,
    requestedEnd: end,
  };
}
