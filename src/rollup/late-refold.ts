import { join } from 'node:path';
import { iso, type Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { BackgroundPass } from '../transform/rerun-job.js';
import type { ViewCatalog } from '../transform/view-catalog.js';
import { loadHasher } from './hll.js';
import type { LateDataFileRecord, LateDataFiles } from './late-data.js';
import { countViewFile } from './metric-backfill.js';
import type { MetricCatalog } from './metric-catalog.js';
import { feedsLive } from './metric-task.js';
import type { PendingPartials } from './pending-partials.js';
import type { RollupStore } from './rollup-store.js';

/**
 * `re_backfill` of late data files (docs/metrics.md, "Late data"): the events a live batch left out
 * of a view's metrics — the rows of the file's view files timed before its `exclusion_below`, which
 * are exactly the rows left out (late-data.ts) — are counted into every metric that counted the
 * rest of those files live, one (metric, file) per DuckDB transaction with its own mark, so a
 * restart resumes and nothing counts twice. A metric that will count or has counted the whole file
 * through its backfill (a file from before its first live batch) is skipped. `refolded_at` is set
 * once every metric has it.
 */
export class LateRefolder extends BackgroundPass {
  constructor(
    private readonly d: {
      late: LateDataFiles;
      metrics: MetricCatalog;
      views: ViewCatalog;
      db: RollupStore;
      pending: PendingPartials;
      clock: Clock;
      log: Logger;
      merged: () => void;
    },
  ) {
    super(d.log, 'late data re-backfill');
  }

  /** A pass over the queued files (kicked after a `re_backfill`, and at start). */
  protected async runPass(): Promise<void> {
    for (const { value: f } of this.d.late.files.all()) {
      if (f.refold_queued_at === null || f.refolded_at !== null) continue;
      await loadHasher();
      await this.refold(f);
    }
  }

  private async refold(f: LateDataFileRecord): Promise<void> {
    const { views, metrics, db, pending } = this.d;
    const view = views.store.byId(f.view_id);
    if (view) {
      const below = Date.parse(f.exclusion_below);
      const manifests = new Map(views.store.filesOf(view.id).map((m) => [m.id, m]));
      for (const m of metrics.store.list(view.project_id)) {
        if (m.view_id !== view.id || !feedsLive(m)) continue;
        const liveFrom = pending.liveFrom(m.id, m.definition_revision);
        const backfilled = await db.backfilledFiles(m.id, m.definition_revision);
        for (const file of f.files) {
          const manifest = manifests.get(file);
          // Gone with a retention purge, or counted whole by this revision's backfill.
          if (!manifest || liveFrom === null || manifest.first_seq < liveFrom || backfilled.has(file)) continue;
          await countViewFile(this.d, m, join(views.viewDir(view), file), `late:${f.id}:${file}`, {
            eventBefore: below,
          });
        }
      }
    }
    this.d.merged();
    await this.d.metrics.store.store.transaction(() => {
      const cur = this.d.late.get(f.project_id, f.id);
      if (cur && cur.refolded_at === null) this.d.late.stagePut({ ...cur, refolded_at: iso(this.d.clock.now()) });
    });
  }
}
