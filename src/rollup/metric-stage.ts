import type { OutputColumn } from '../transform/output-schema.js';
import type { MetricOutcome, MetricTask } from './metric-task.js';
import { buildViewPartials } from './partials.js';

/**
 * The worker's metric stage: the metrics of a view over the view's coerced output of one batch, in
 * one fused pass (partials.ts: filters, times, series keys and unique hashes computed once for all
 * of them). A metric's failure is its outcome (the commit records it as the metric's `error`
 * status), never an exception through the batch. Call `loadHasher()` before.
 */
export function metricPartialsStage(
  tasks: readonly MetricTask[],
  ts: ArrayLike<number>,
  columns: readonly OutputColumn[],
): MetricOutcome[] {
  return buildViewPartials(tasks, ts, columns);
}

/**
 * What a batch told about a view's event times (docs/metrics.md, "Late data"): the latest one (the
 * view's late-data watermark follows it) and the events left out of its metrics as late.
 */
export interface ViewEventTimes {
  viewId: string;
  maxTs: number;
  late: { count: number; minTs: number; maxTs: number; exclusionBelow: number } | null;
}

/** The metrics consumer's name (output-consumers.ts): its parts are `BatchResult.outputs.metrics`. */
export const METRICS_CONSUMER = 'metrics';

/** What the metrics consumer needs of one view's batch output (`ViewTask.consumers.metrics`). */
export interface MetricsViewTask {
  /** The metrics aggregating the view that take live partials. */
  metrics: MetricTask[];
  /** Events timed before this are late for the view's metrics (docs/metrics.md, "Late data"); absent: none are. */
  lateBefore?: number;
}

/** The metrics consumer's part of a batch for one view: each metric's outcome, and the view's event times. */
export interface ViewMetricsOutput {
  outcomes: MetricOutcome[];
  times: ViewEventTimes;
}

/** The metrics consumer's parts of a batch result (`BatchResult.outputs.metrics`; none when no view with metrics produced output). */
export function metricsOutputs(result: { outputs?: Record<string, unknown[]> }): readonly ViewMetricsOutput[] {
  return (result.outputs?.[METRICS_CONSUMER] as ViewMetricsOutput[] | undefined) ?? [];
}

/** The metrics of one view over its batch output, late events left out; with the view's event times. */
export function viewMetricsStage(
  v: { viewId: string } & MetricsViewTask,
  ts: Float64Array,
  columns: readonly OutputColumn[],
): ViewMetricsOutput {
  const tasks = v.metrics;
  const from = v.lateBefore;
  let maxTs = -Infinity;
  let count = 0;
  let lateMin = Infinity;
  let lateMax = -Infinity;
  for (const t of ts) {
    if (t > maxTs) maxTs = t;
    if (from !== undefined && t < from) {
      count++;
      if (t < lateMin) lateMin = t;
      if (t > lateMax) lateMax = t;
    }
  }
  const outcomes = metricPartialsStage(
    from === undefined ? tasks : tasks.map((t) => ({ ...t, eventFrom: from })),
    ts,
    columns,
  );
  return {
    outcomes,
    times: {
      viewId: v.viewId,
      maxTs,
      late: count > 0 ? { count, minTs: lateMin, maxTs: lateMax, exclusionBelow: from! } : null,
    },
  };
}
