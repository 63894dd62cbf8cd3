import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../clock.js';
import { BASE_SCOPE } from './join-store.js';
import type { ViewCatalog } from './view-catalog.js';
import type { LookupProgress, ViewRecord, ViewTransformRecord } from './view-records.js';

/**
 * The join status of a join view (docs/views.md, "Join views"), as transactions: `backfilling`
 * until the base files committed before `join_backfill_cutoff_at` are joined, then `live`; `error`
 * stops joining until the view's transform changes (a new script, `rebackfill`, `generate`).
 */
export class JoinState {
  constructor(private readonly d: { views: ViewCatalog; clock: Clock }) {}

  private now(): string {
    return new Date(this.d.clock.now()).toISOString();
  }

  /**
   * A `rebackfill` (or a first script) asks for the join from scratch: its output and base done
   * marks go, the cutoff moves to now, and it backfills again. The lookup indexes stay: they hold
   * what the lookups committed, whatever the base. With nothing joined yet only the backfill starts.
   */
  async restart(view: ViewRecord, t: ViewTransformRecord): Promise<void> {
    const { views } = this.d;
    const at = this.now();
    const removed = await views.store.store.transaction(() => {
      const cur = views.store.transforms.get(view.id, t.id);
      if (!cur || cur.backfill_status !== 'pending') return [];
      const files = views.store.filesOf(view.id);
      const joined = files.length > 0 || views.store.joins.doneFiles(view.id, BASE_SCOPE).size > 0;
      // A rebackfill is also the way out of an error.
      const status = cur.status === 'error' ? 'active' : cur.status;
      void views.store.transforms.put(view.id, {
        ...cur,
        status,
        error_message: status === cur.status ? cur.error_message : null,
        backfill_status: 'running',
        backfill_started_at: at,
        backfill_completed_at: null,
        backfill_file_count: 0,
        backfill_files_done: 0,
        backfill_error: null,
        updated_at: at,
      });
      for (const f of files) void views.store.files.remove(view.id, f.id);
      if (joined) views.store.joins.stageClearBase(view.id);
      views.stagePatch(view.id, (v) => ({
        status: 'active',
        error_message: null,
        join_error_message: null,
        join_status: joined || v.join_status === 'error' ? 'backfilling' : v.join_status,
        ...(joined
          ? {
              join_backfill_cutoff_at: at,
              join_live_started_at: null,
              join_base_file_count: 0,
              join_base_files_done: 0,
            }
          : {}),
        join_updated_at: at,
      }));
      return files.map((f) => f.id);
    });
    // The same names are written again next: the old files go first (a crash here: the start-up sweep).
    for (const id of removed) rmSync(join(views.viewDir(view), id), { force: true });
    views.store.reindex(view.id);
  }

  /** Its transform changed since the error: joining (and the backfill it failed) goes on where it stopped. */
  async resume(view: ViewRecord, t: ViewTransformRecord, allBeforeCutoffDone: boolean): Promise<void> {
    const { views } = this.d;
    const at = this.now();
    await views.store.store.transaction(() => {
      const cur = views.store.transforms.get(view.id, t.id);
      if (cur && cur.backfill_status === 'failed')
        void views.store.transforms.put(view.id, {
          ...cur,
          backfill_status: 'running',
          backfill_error: null,
          updated_at: at,
        });
      views.stagePatch(view.id, (v) => ({
        status: 'active',
        error_message: null,
        join_status: allBeforeCutoffDone ? 'live' : 'backfilling',
        join_error_message: null,
        join_lookup_progress: mapProgress(v, (p) =>
          p.status === 'failed' ? { ...p, status: 'running', error: null, updated_at: at } : p,
        ),
        join_updated_at: at,
      }));
    });
    views.store.reindex(view.id);
  }

  /**
   * No base file left to join: a backfilling join goes live (its lookups caught up with the files
   * before the cutoff, its transform's backfill completed).
   */
  async settle(view: ViewRecord, t: ViewTransformRecord, beforeCutoff: number): Promise<void> {
    if (view.join_status === 'live' && view.status === 'active') return;
    const { views } = this.d;
    const at = this.now();
    await views.store.store.transaction(() => {
      const cur = views.store.transforms.get(view.id, t.id);
      if (cur && cur.backfill_status === 'running')
        void views.store.transforms.put(view.id, {
          ...cur,
          backfill_status: 'completed',
          backfill_completed_at: at,
          backfill_file_count: beforeCutoff,
          backfill_files_done: beforeCutoff,
          updated_at: at,
        });
      views.stagePatch(view.id, (v) => ({
        status: 'active',
        join_status: 'live',
        join_live_started_at: v.join_live_started_at ?? at,
        join_base_file_count: beforeCutoff,
        join_base_files_done: beforeCutoff,
        join_updated_at: at,
      }));
    });
    // Announced (notify reindexes): the join's history is complete, which a metric backfill waits for.
    views.notify([view.id]);
  }

  /** Joining failed: the view, its join and its transform in `error` (with the failing clause's progress). */
  async fail(view: ViewRecord, t: ViewTransformRecord, message: string, alias: string | null): Promise<void> {
    const { views } = this.d;
    const at = this.now();
    await views.store.store.transaction(() => {
      const cur = views.store.transforms.get(view.id, t.id);
      if (cur) {
        const backfilling = cur.backfill_status === 'running' || cur.backfill_status === 'pending';
        void views.store.transforms.put(view.id, {
          ...cur,
          status: 'error',
          error_message: message,
          ...(backfilling ? { backfill_status: 'failed' as const, backfill_error: message } : {}),
          updated_at: at,
        });
      }
      views.stagePatch(view.id, (v) => ({
        status: 'error',
        error_message: message,
        join_status: 'error',
        join_error_message: message,
        join_lookup_progress: mapProgress(v, (p, a) =>
          a === alias ? { ...p, status: 'failed', error: message, updated_at: at } : p,
        ),
        join_updated_at: at,
      }));
    });
    views.store.reindex(view.id);
  }
}

function mapProgress(
  v: ViewRecord,
  fn: (p: LookupProgress, alias: string) => LookupProgress,
): Record<string, LookupProgress> | null {
  if (!v.join_lookup_progress) return null;
  return Object.fromEntries(Object.entries(v.join_lookup_progress).map(([a, p]) => [a, fn(p, a)]));
}
