import type { ProjectsRepo } from '../catalog/projects.js';
import type { Spool } from '../spool/spool.js';
import type { OutputColumn } from '../transform/output-schema.js';
import type { ViewTask } from '../transform/view-stage.js';
import { loadHasher } from './hll.js';
import type { LateDataFiles } from './late-data.js';
import { METRICS_CONSUMER, viewMetricsStage, type MetricsViewTask, type ViewMetricsOutput } from './metric-stage.js';
import { metricTasksByView, type MetricSource, type ViewSource } from './metric-tasks-for.js';
import type { Rollups } from './rollups.js';

/** What the metrics consumer reads on the main thread (the server's services and rollups satisfy it). */
export interface MetricsConsumerContext {
  services: {
    views: ViewSource & { destroying: ReadonlySet<string> };
    metrics: MetricSource;
    projects: Pick<ProjectsRepo, 'byId'>;
    lateData: LateDataFiles;
    spool: Pick<Spool, 'oldestReceivedAt'>;
  };
  rollups: Pick<Rollups, 'participant'>;
}

/**
 * Metrics as an output consumer (pipeline/output-consumer.ts `OutputConsumer`, checked in
 * output-consumers.ts): each metric of a view gets its partials of the view's batch output in the
 * worker (metric-stage.ts); on the commit seam the rollups stage them (rollup-commit.ts), then late
 * data records the events left out and moves the view's watermark (late-data.ts).
 */
export const metricsConsumer = {
  name: METRICS_CONSUMER,
  attach(
    { services: s }: MetricsConsumerContext,
    tasks: readonly ViewTask[],
    collectionId: string,
  ): ReadonlyMap<string, MetricsViewTask> {
    return metricTasksByView(tasks, s.views, s.metrics, (viewId) => {
      const project = s.projects.byId(s.views.store.byId(viewId)?.project_id ?? '');
      return project
        ? s.lateData.lateBefore(viewId, project.late_data_window_minutes, s.spool.oldestReceivedAt(collectionId))
        : undefined;
    });
  },
  prepare: loadHasher,
  consume: (
    view: ViewTask,
    task: MetricsViewTask,
    ts: Float64Array,
    columns: readonly OutputColumn[],
  ): ViewMetricsOutput => viewMetricsStage({ viewId: view.viewId, ...task }, ts, columns),
  participants: ({ services: s, rollups }: MetricsConsumerContext) => [
    rollups.participant(),
    s.lateData.participant((viewId) => {
      const v = s.views.store.byId(viewId);
      return v && v.deleted_at === null && !s.views.destroying.has(v.id) ? v.project_id : undefined;
    }),
  ],
};
