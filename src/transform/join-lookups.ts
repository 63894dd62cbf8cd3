import { join } from 'node:path';
import type { Clock } from '../clock.js';
import type { SchemaService } from '../schema/schema-service.js';
import { isLater, joinKey } from './join-key.js';
import type { LookupEntry } from './join-store.js';
import { outputRow } from './output-row.js';
import type { ViewCatalog } from './view-catalog.js';
import type { LookupProgress, ViewFileManifest, ViewJoinClause, ViewRecord } from './view-records.js';
import { readViewFile } from './view-file-rows.js';
import { clauseOrder } from './join-records.js';

/** What indexing the lookups of one join view came to: every clause current, or the clause that failed. */
export type LookupsResult = { ok: true } | { ok: false; alias: string; message: string };

/** What one follow of a join view remembers between base files (join-processor.ts). */
export interface LookupCursor {
  /** alias → the lookup view's file generation last indexed (see `fileGeneration`) */
  seen: Map<string, number>;
  /** alias → ids of the lookup files indexed (loaded from LMDB once per follow) */
  done: Map<string, Set<string>>;
}

/** Files of a view in the order they were committed (then by sequence and id: a stable order). */
export function committedOrder(files: readonly ViewFileManifest[]): ViewFileManifest[] {
  return [...files].sort((a, b) =>
    a.created_at < b.created_at
      ? -1
      : a.created_at > b.created_at
        ? 1
        : a.first_seq - b.first_seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
}

/**
 * Keeps a join view's lookup indexes current (docs/views.md, "Join views"): every committed file of
 * each lookup view is read once, its rows put into the clause's index (join key → latest row by
 * event time) together with the file's done mark and the clause's `join_lookup_progress`, in one
 * LMDB transaction per file. A clause is `running` while files committed before
 * `join_backfill_cutoff_at` are being indexed, then `completed`; it goes on indexing new files.
 */
export class JoinLookups {
  constructor(private readonly d: { views: ViewCatalog; schema: SchemaService; clock: Clock }) {}

  /**
   * Index what the lookups committed since `cursor` last looked; `generation(viewId)` moves on
   * whenever a view commits files, so an unchanged lookup costs nothing.
   */
  async catchUp(
    view: ViewRecord,
    cursor: LookupCursor,
    generation: (viewId: string) => number,
  ): Promise<LookupsResult> {
    for (const clause of clauseOrder(view.joins)) {
      const gen = generation(clause.lookup_view_id);
      if (cursor.seen.get(clause.alias) === gen) continue;
      try {
        await this.indexClause(view, clause, cursor);
      } catch (err) {
        return {
          ok: false,
          alias: clause.alias,
          message: `indexing lookup view ${clause.lookup_view_id} (alias ${clause.alias}) failed: ${(err as Error)?.message ?? String(err)}`,
        };
      }
      cursor.seen.set(clause.alias, gen);
    }
    return { ok: true };
  }

  private async indexClause(view: ViewRecord, clause: ViewJoinClause, cursor: LookupCursor): Promise<void> {
    const { views } = this.d;
    const joins = views.store.joins;
    const lookup = views.store.byId(clause.lookup_view_id);
    if (!lookup) throw new Error(`lookup view ${clause.lookup_view_id} is gone`);
    let done = cursor.done.get(clause.alias);
    if (!done) cursor.done.set(clause.alias, (done = joins.doneFiles(view.id, clause.alias)));
    const files = committedOrder(views.store.filesOf(lookup.id));
    for (const f of files) {
      if (done.has(f.id)) continue;
      const rows = await readViewFile(await this.d.schema.fileReader(), join(views.viewDir(lookup), f.id), f.rows);
      const keyType = lookup.output_schema.find((x) => x.name === clause.lookup_field)?.type ?? 'string';
      // The file's latest row per key first: one index write per key.
      const best = new Map<string, LookupEntry>();
      for (const r of rows) {
        const key = joinKey(r.values[clause.lookup_field], keyType);
        if (key === null) continue;
        const entry: LookupEntry = {
          ts: r.ts,
          seq: r.seq,
          row: r.row,
          file: f.id,
          record: outputRow(lookup.output_schema, r.values),
        };
        const cur = best.get(key);
        if (!cur || isLater(entry, cur)) best.set(key, entry);
      }
      await views.store.store.transaction(() => {
        const cur = views.store.byId(view.id);
        if (!cur || joins.isDone(view.id, clause.alias, f.id)) return;
        for (const [key, entry] of best) joins.stageLatest(view.id, clause.alias, key, entry);
        joins.stageDone(view.id, clause.alias, f.id);
        done.add(f.id);
        this.stageProgress(cur, clause.alias, files, done);
      });
      views.store.reindex(view.id);
    }
    const cur = views.store.byId(view.id);
    if (cur && this.progressOf(cur, files, done).status !== cur.join_lookup_progress?.[clause.alias]?.status) {
      await views.store.store.transaction(() => {
        const now = views.store.byId(view.id);
        if (now) this.stageProgress(now, clause.alias, files, done);
      });
      views.store.reindex(view.id);
    }
  }

  private progressOf(
    view: ViewRecord,
    files: readonly ViewFileManifest[],
    done: ReadonlySet<string>,
  ): Pick<LookupProgress, 'status' | 'file_count' | 'files_done'> {
    const cutoff = view.join_backfill_cutoff_at;
    const caughtUp = files.every((f) => done.has(f.id) || (cutoff !== null && f.created_at >= cutoff));
    return {
      status: caughtUp ? 'completed' : 'running',
      file_count: files.length,
      files_done: files.filter((f) => done.has(f.id)).length,
    };
  }

  private stageProgress(
    view: ViewRecord,
    alias: string,
    files: readonly ViewFileManifest[],
    done: ReadonlySet<string>,
  ): void {
    const now = new Date(this.d.clock.now()).toISOString();
    const p: LookupProgress = { ...this.progressOf(view, files, done), error: null, updated_at: now };
    this.d.views.stagePatch(view.id, (v) => ({
      join_lookup_progress: { ...(v.join_lookup_progress ?? {}), [alias]: p },
      join_updated_at: now,
    }));
  }
}
