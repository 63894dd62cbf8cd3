import { createHash } from 'node:crypto';
import { newId } from '../ids.js';
import type { ViewRecord, ViewStatus, ViewTransformRecord } from './view-records.js';

/** Pure rules of the view graph and of transform records, shared by the catalog and the pipeline. */

/** First 16 hex characters of the script's SHA-256 (spec: equal hashes run identical scripts); null without one. */
export function scriptHash(script: string | null): string | null {
  return script === null ? null : createHash('sha256').update(script).digest('hex').slice(0, 16);
}

/** A transform's backfill progress before any backfill has run (new, or started over). */
export const NO_BACKFILL_PROGRESS = {
  backfill_cutoff_at: null,
  backfill_start_at: null,
  backfill_started_at: null,
  backfill_completed_at: null,
  backfill_file_count: 0,
  backfill_files_done: 0,
  backfill_error: null,
} as const satisfies Partial<ViewTransformRecord>;

/**
 * A new transform of `viewId`. With a script it serves at once and backfills existing records
 * (`pending`); without one it is queued for generation and has nothing to backfill yet.
 */
export function newTransform(viewId: string, script: string | null, now: string): ViewTransformRecord {
  return {
    id: newId('viewTransform'),
    view_id: viewId,
    transform_script: script,
    script_hash: scriptHash(script),
    status: script === null ? 'queued' : 'active',
    error_message: null,
    tgl_retry_count: 0,
    max_read_depth: null,
    evidence_notice: null,
    backfill_status: script === null ? 'none' : 'pending',
    ...NO_BACKFILL_PROGRESS,
    assignments: [],
    created_at: now,
    updated_at: now,
  };
}

/**
 * The view status after a change to its transforms: `active` while any transform runs a script;
 * otherwise `initializing`, except that an `error` the pipeline recorded stays until one runs.
 */
export function derivedStatus(current: ViewStatus, transforms: readonly ViewTransformRecord[]): ViewStatus {
  if (transforms.some((t) => t.status === 'active' || (t.status === 'queued' && t.transform_script !== null)))
    return 'active';
  return current === 'error' ? 'error' : 'initializing';
}

/** Ids of the views a view reads: its parent, or a join's base and lookup views. */
export function inputsOf(view: ViewRecord): string[] {
  const ids = new Set<string>();
  if (view.parent_view_id) ids.add(view.parent_view_id);
  if (view.join_base_view_id) ids.add(view.join_base_view_id);
  for (const j of view.joins) ids.add(j.lookup_view_id);
  return [...ids];
}

/** Views among `all` reading `viewId` directly (derived views and join views using it). */
export function dependantsOf(viewId: string, all: readonly ViewRecord[]): ViewRecord[] {
  return all.filter((v) => v.id !== viewId && inputsOf(v).includes(viewId));
}

/** The seeds and every view reading them, directly or not. */
export function withDependants(seeds: readonly ViewRecord[], all: readonly ViewRecord[]): ViewRecord[] {
  const out = new Map(seeds.map((v) => [v.id, v]));
  const queue = [...seeds];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const d of dependantsOf(v.id, all)) {
      if (out.has(d.id)) continue;
      out.set(d.id, d);
      queue.push(d);
    }
  }
  return [...out.values()];
}

/**
 * `views` ordered inputs first (a parent before its derived views, a join's base and lookups before
 * it); ties by creation time then id, so the order is stable. Inputs outside `views` are ignored.
 */
export function topologicalOrder(views: readonly ViewRecord[]): ViewRecord[] {
  const byId = new Map(views.map((v) => [v.id, v]));
  const stable = [...views].sort((a, b) =>
    a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
  );
  const done = new Set<string>();
  const out: ViewRecord[] = [];
  const visiting = new Set<string>();
  const visit = (v: ViewRecord) => {
    if (done.has(v.id) || visiting.has(v.id)) return;
    visiting.add(v.id);
    for (const id of inputsOf(v)) {
      const input = byId.get(id);
      if (input) visit(input);
    }
    visiting.delete(v.id);
    done.add(v.id);
    out.push(v);
  };
  for (const v of stable) visit(v);
  return out;
}
