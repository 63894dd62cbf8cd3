import type { OutputColumn } from '../transform/output-schema.js';
import type { MetricOutcome, MetricTask } from './metric-task.js';
import { buildPartials } from './partials.js';

/**
 * The worker's metric stage: each metric of a view over the view's coerced output of one batch. A
 * metric's failure is its outcome (the commit records it as the metric's `error` status), never an
 * exception through the batch. Call `loadHasher()` before.
 */
export function metricPartialsStage(tasks: readonly MetricTask[], ts: ArrayLike<number>, columns: readonly OutputColumn[]): MetricOutcome[] {
  return tasks.map((task): MetricOutcome => {
    try {
      return { status: 'ok', partials: buildPartials(task, ts, columns) };
    } catch (err) {
      return { status: 'failed', metricId: task.metricId, revision: task.revision, message: (err as Error)?.message ?? String(err) };
    }
  });
}
