import type { Database } from 'lmdb';
import type { Clock } from '../clock.js';
import { newId } from '../ids.js';
import type { CommitParticipant } from '../commit/batch-commit.js';
import { metricsOutputs } from './metric-stage.js';
import type { Store } from '../store/db.js';
import { ScopedTable } from '../store/scoped-table.js';
import type { ViewCatalog } from '../transform/view-catalog.js';

/**
 * Late data (docs/metrics.md, "Late data"): events whose time falls behind the completeness
 * watermark by more than the project's `late_data_window_minutes` are stored in the view's files
 * but kept out of the metrics' rollups. Each batch (or backfilled file) that had such events
 * records one late data file naming the view files that hold them and the boundary they fell
 * behind; `re_backfill` folds exactly those events (the rows of those files timed before the
 * boundary, which are exactly the ones left out) into every metric of the view.
 */
export interface LateDataFileRecord {
  id: string;
  project_id: string;
  view_id: string;
  excluded_count: number;
  /** Epoch ms of the earliest and latest excluded event. */
  min_event_at: string;
  max_event_at: string;
  /** Events timed before this were excluded; events at or after it were included. */
  exclusion_below: string;
  refold_queued_at: string | null;
  refolded_at: string | null;
  created_at: string;
  /** Internal: the view files (ids in the view's manifest) that hold the excluded events. */
  files: string[];
}

/** What a commit learned about one view's late events in one batch. */
export interface LateEvents {
  viewId: string;
  count: number;
  minTs: number;
  maxTs: number;
  exclusionBelow: number;
  files: string[];
}

/**
 * LMDB storage of late data files, under their project (the table's id index finds the project
 * from the id). Writes are staged inside the caller's `store.transaction`. A view's late data files go with
 * the view (registered as view dependants: they never block a deletion).
 */
export class LateDataFiles {
  readonly files: ScopedTable<LateDataFileRecord>;
  /** View id → its late-data watermark: the latest event time its metrics counted live, never past the commit's now. */
  private readonly watermarks: Database<number, string>;

  constructor(
    store: Store,
    private readonly clock: Clock,
    views: ViewCatalog,
  ) {
    this.files = new ScopedTable(store, 'late_data_files', 'late_data_file_project');
    this.watermarks = store.db<number, string>('view_event_watermark');
    views.addDependants({
      blocking: () => [],
      stageDestroy: (doomed) => {
        const ids = new Set(doomed.map((v) => v.id));
        const project = doomed[0]?.project_id;
        if (project !== undefined) for (const f of this.list(project)) if (ids.has(f.view_id)) this.stageRemoval(f);
        for (const id of ids) void this.watermarks.remove(id);
        return () => undefined;
      },
    });
  }

  get(projectId: string, id: string): LateDataFileRecord | undefined {
    return this.files.get(projectId, id);
  }

  byId(id: string): LateDataFileRecord | undefined {
    return this.files.byId(id);
  }

  list(projectId: string): LateDataFileRecord[] {
    return this.files.list(projectId);
  }

  /** Stage the record of `late` (inside the commit's transaction); returns it. */
  stageNew(projectId: string, late: LateEvents): LateDataFileRecord {
    const iso = (t: number) => new Date(t).toISOString();
    const rec: LateDataFileRecord = {
      id: newId('lateDataFile'),
      project_id: projectId,
      view_id: late.viewId,
      excluded_count: late.count,
      min_event_at: iso(late.minTs),
      max_event_at: iso(late.maxTs),
      exclusion_below: iso(late.exclusionBelow),
      refold_queued_at: null,
      refolded_at: null,
      created_at: iso(this.clock.now()),
      files: late.files,
    };
    this.stagePut(rec);
    return rec;
  }

  stagePut(rec: LateDataFileRecord): void {
    void this.files.put(rec.project_id, rec);
  }

  stageRemoval(rec: LateDataFileRecord): void {
    void this.files.remove(rec.project_id, rec.id);
  }

  /**
   * The time before which a live batch's events are late for a view's metrics (docs/metrics.md,
   * "Late data"): the view's watermark, floored to its minute, less the project's window — but
   * never after the oldest record still in the spool (`oldestReceived`), so a record timed by its
   * receipt is never late and a re-backfill can tell the left-out rows by their time alone.
   * undefined while the view has no watermark (no live batch counted yet).
   */
  lateBefore(viewId: string, windowMinutes: number, oldestReceived: number | null): number | undefined {
    const w = this.watermarks.get(viewId);
    if (w === undefined) return undefined;
    const boundary = w - (((w % 60_000) + 60_000) % 60_000) - windowMinutes * 60_000;
    return oldestReceived === null ? boundary : Math.min(boundary, oldestReceived);
  }

  /** Late data on the commit seam, after the rollups: each view's late events become a late data file, its watermark advances. */
  participant(projectOf: (viewId: string) => string | undefined): CommitParticipant<null> {
    return {
      name: 'late-data',
      stage: ({ result }) => {
        const now = this.clock.now();
        for (const { times: t } of metricsOutputs(result)) {
          const project = projectOf(t.viewId);
          if (project === undefined) continue;
          const next = Math.min(t.maxTs, now);
          const cur = this.watermarks.get(t.viewId);
          if (cur === undefined || next > cur) void this.watermarks.put(t.viewId, next);
          if (t.late === null) continue;
          const file = result.views.find((o) => o.viewId === t.viewId);
          const files = file?.status === 'ok' && file.file ? [file.file.path] : [];
          this.stageNew(project, {
            viewId: t.viewId,
            count: t.late.count,
            minTs: t.late.minTs,
            maxTs: t.late.maxTs,
            exclusionBelow: t.late.exclusionBelow,
            files,
          });
        }
        return null;
      },
      applyCommitted: () => undefined,
    };
  }
}
