import type { ViewTask } from '../transform/view-stage.js';
import type { ViewRecord } from '../transform/view-records.js';
import type { MetricRecord } from './metric-records.js';
import type { MetricsViewTask } from './metric-stage.js';
import { feedsLive, metricTaskOf } from './metric-task.js';

/** The views as the metrics consumer reads them (ViewCatalog). */
export interface ViewSource {
  store: { byId(id: string): Pick<ViewRecord, 'id' | 'project_id' | 'deleted_at'> | undefined };
}

/** The metrics as the metrics consumer reads them (MetricCatalog). */
export interface MetricSource {
  store: { list(projectId: string): MetricRecord[] };
}

/**
 * The metrics consumer's task for each view of a batch that has metrics (main thread, per lease):
 * every metric of the view that takes live partials (not `error`, not `cancelled` — a metric
 * scheduled for deletion is cancelled, and rebuilt if restored), and the view's late-data boundary
 * from `lateBefore` (late-data.ts). Views without such metrics are not in the map.
 */
export function metricTasksByView(
  tasks: readonly ViewTask[],
  views: ViewSource,
  metrics: MetricSource,
  lateBefore: (viewId: string) => number | undefined = () => undefined,
): Map<string, MetricsViewTask> {
  const out = new Map<string, MetricsViewTask>();
  if (tasks.length === 0) return out;
  const project = views.store.byId(tasks[0]!.viewId)?.project_id;
  if (project === undefined) return out;
  const all = metrics.store.list(project).filter(feedsLive);
  if (all.length === 0) return out;
  for (const t of tasks) {
    const ms = all.filter((m) => m.view_id === t.viewId);
    if (ms.length === 0) continue;
    const late = lateBefore(t.viewId);
    out.set(t.viewId, {
      metrics: ms.map((m) => metricTaskOf(m, t.outputSchema)),
      ...(late === undefined ? {} : { lateBefore: late }),
    });
  }
  return out;
}
