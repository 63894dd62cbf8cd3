import type { OutputConsumer } from '../pipeline/output-consumer.js';
import { loadHasher } from './hll.js';
import { METRICS_CONSUMER, viewMetricsStage, type MetricsViewTask, type ViewMetricsOutput } from './metric-stage.js';
import { metricTasksByView } from './metric-tasks-for.js';

/**
 * Metrics as an output consumer (pipeline/output-consumer.ts): each metric of a view gets its
 * partials of the view's batch output in the worker (metric-stage.ts); the rollups stage them on the
 * commit seam (rollup-commit.ts), then late data records the events left out and moves the view's
 * watermark (late-data.ts).
 */
export const metricsConsumer: OutputConsumer<MetricsViewTask, ViewMetricsOutput> = {
  name: METRICS_CONSUMER,
  attach({ services: s }, tasks, collectionId) {
    return metricTasksByView(tasks, s.views, s.metrics, (viewId) => {
      const project = s.projects.byId(s.views.store.byId(viewId)?.project_id ?? '');
      return project ? s.lateData.lateBefore(viewId, project.late_data_window_minutes, s.spool.oldestReceivedAt(collectionId)) : undefined;
    });
  },
  prepare: loadHasher,
  consume: (view, task, ts, columns) => viewMetricsStage({ viewId: view.viewId, ...task }, ts, columns),
  participants: ({ services: s, rollups }) => [
    rollups.participant(),
    s.lateData.participant((viewId) => {
      const v = s.views.store.byId(viewId);
      return v && v.deleted_at === null && !s.views.destroying.has(v.id) ? v.project_id : undefined;
    }),
  ],
};
