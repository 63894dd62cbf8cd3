import type { ViewCatalog } from '../transform/view-catalog.js';
import type { ViewTask } from '../transform/view-stage.js';
import type { MetricCatalog } from './metric-catalog.js';
import { feedsLive, metricTaskOf } from './metric-task.js';

/**
 * The view tasks of a batch with the metrics of each view attached (main thread, per lease): every
 * metric of the view that takes live partials (not `error`, not `cancelled` — a metric scheduled for
 * deletion is cancelled, and rebuilt if restored), and the view's late-data boundary from
 * `lateBefore` (late-data.ts).
 */
export function withMetricTasks(tasks: ViewTask[], views: ViewCatalog, metrics: MetricCatalog, lateBefore: (viewId: string) => number | undefined = () => undefined): ViewTask[] {
  if (tasks.length === 0) return tasks;
  const project = views.store.byId(tasks[0]!.viewId)?.project_id;
  if (project === undefined) return tasks;
  const all = metrics.store.list(project).filter(feedsLive);
  if (all.length === 0) return tasks;
  return tasks.map((t) => {
    const ms = all.filter((m) => m.view_id === t.viewId);
    if (ms.length === 0) return t;
    const late = lateBefore(t.viewId);
    return { ...t, metrics: ms.map((m) => metricTaskOf(m, t.outputSchema)), ...(late === undefined ? {} : { lateBefore: late }) };
  });
}
