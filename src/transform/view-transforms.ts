import { iso } from '../clock.js';
import { ApiError, invalidField, notFound } from '../errors.js';
import { nextUpdatedAt } from '../catalog/timestamps.js';
import type { Clock } from '../clock.js';
import type {
  DeferralAction,
  ViewDeferralRecord,
  ViewRecord,
  ViewTransformRecord,
  ViewVersionRecord,
} from './view-records.js';
import { derivedStatus, newTransform, NO_BACKFILL_PROGRESS, scriptHash } from './view-rules.js';
import type { ViewStore } from './view-store.js';

/** What the transforms need of the view catalog that owns them (the catalog is one; no import back to it). */
export interface ViewTransformsHost {
  readonly clock: Clock;
  /** Views being destroyed: their transforms are no longer changed. */
  readonly destroying: ReadonlySet<string>;
  stagePatch(viewId: string, patch: (cur: ViewRecord) => Partial<ViewRecord>): ViewRecord | undefined;
  notify(viewIds: Iterable<string>): void;
}
/** Settable fields of a transform (POST .../transforms/:transform_id). */
export interface TransformChange {
  transform_script?: string;
  status?: 'active' | 'disabled';
  max_read_depth?: number | null;
}

/** A person's decision on a waiting shape (POST .../deferrals/:deferral_id/decision). */
export interface DeferralDecisionInput {
  action: DeferralAction;
  transform_id?: string;
  reason?: string;
}

/**
 * Transforms, versions and waiting shapes of views: the control-plane side. Writes check that the
 * view is live, commit in one transaction with the view's derived status, then notify listeners.
 */
export class ViewTransforms {
  constructor(
    private readonly catalog: ViewTransformsHost,
    private readonly store: ViewStore,
  ) {}

  list(viewId: string): ViewTransformRecord[] {
    return this.store.transformsOf(viewId);
  }

  get(viewId: string, id: string): ViewTransformRecord | undefined {
    return this.store.transforms.get(viewId, id);
  }

  versions(viewId: string): ViewVersionRecord[] {
    return this.store.versionsOf(viewId);
  }

  version(viewId: string, id: string): ViewVersionRecord | undefined {
    return this.store.versions.get(viewId, id);
  }

  deferrals(viewId: string): ViewDeferralRecord[] {
    return this.store.deferralsOf(viewId);
  }

  deferral(viewId: string, id: string): ViewDeferralRecord | undefined {
    return this.store.deferrals.get(viewId, id);
  }

  /** Add a transform: with a script it serves and backfills at once; without, it is queued for generation. */
  async create(
    view: ViewRecord,
    input: { transform_script?: string; max_read_depth?: number | null },
  ): Promise<ViewTransformRecord> {
    return this.write(view, (now) => {
      const t = {
        ...newTransform(view.id, input.transform_script ?? null, now),
        max_read_depth: input.max_read_depth ?? null,
      };
      void this.store.transforms.put(view.id, t);
      return t;
    });
  }

  /**
   * Change a transform. A new script serves from now on (records already produced stay; POST
   * rebackfill reprocesses them), clears the evidence notice, and a first script starts the backfill.
   * `status` disables a transform or puts it back into service (only with a script).
   */
  async update(view: ViewRecord, id: string, change: TransformChange): Promise<ViewTransformRecord> {
    return this.write(view, () => {
      const cur = this.require(view.id, id);
      const next: ViewTransformRecord = { ...cur, updated_at: nextUpdatedAt(this.catalog.clock, cur.updated_at) };
      if (change.transform_script !== undefined && change.transform_script !== cur.transform_script) {
        next.transform_script = change.transform_script;
        next.script_hash = scriptHash(change.transform_script);
        next.status = 'active';
        next.error_message = null;
        next.evidence_notice = null;
        if (cur.backfill_status === 'none') next.backfill_status = 'pending';
      }
      if (change.max_read_depth !== undefined) next.max_read_depth = change.max_read_depth;
      if (change.status === 'disabled') next.status = 'disabled';
      if (change.status === 'active' && cur.status === 'disabled') {
        if (next.transform_script === null) {
          throw new ApiError(
            'conflict',
            `Transform ${id} has no script to run; send transform_script, or POST .../transforms/${id}/generate`,
            { details: [{ field: 'body.status', message: 'needs a script' }] },
          );
        }
        next.status = 'active';
      }
      void this.store.transforms.put(view.id, next);
      return next;
    });
  }

  /**
   * Remove a transform. The view keeps at least one (409 otherwise); the versions it covered go
   * with it (those schema versions wait again for a transform) and waiting shapes assigned to it
   * are unassigned.
   */
  async remove(view: ViewRecord, id: string): Promise<void> {
    await this.write(view, () => {
      this.require(view.id, id);
      const all = this.store.transformsOf(view.id);
      if (all.length <= 1)
        throw new ApiError(
          'conflict',
          `Transform ${id} is the only transform of view ${view.id}; a view keeps at least one (delete the view instead)`,
        );
      void this.store.transforms.remove(view.id, id);
      for (const v of this.store.versionsOf(view.id))
        if (v.transform_id === id) void this.store.versions.remove(view.id, v.id);
      for (const d of this.store.deferralsOf(view.id)) {
        if (d.transform_id === id)
          void this.store.deferrals.put(view.id, {
            ...d,
            transform_id: null,
            decision: d.decision?.transform_id === id ? null : d.decision,
          });
      }
      const cur = this.store.byId(view.id);
      if (cur?.adopting_transform_id === id) {
        const heir = all.find((t) => t.id !== id && t.transform_script !== null && t.status !== 'disabled');
        this.catalog.stagePatch(view.id, () => ({ adopting_transform_id: heir?.id ?? null }));
      }
      return null;
    });
  }

  /**
   * Queue a new script for the transform: status `queued`, retries and evidence notice cleared. A
   * script it has keeps serving until the generated one replaces it. Works in either mode (manual
   * only means nothing is generated by itself).
   */
  async generate(view: ViewRecord, id: string): Promise<ViewTransformRecord> {
    return this.write(view, () => {
      const cur = this.require(view.id, id);
      if (cur.status === 'disabled')
        throw new ApiError(
          'conflict',
          `Transform ${id} is disabled; enable it with POST .../transforms/${id} {"status": "active"} (or send a script) first`,
        );
      const next: ViewTransformRecord = {
        ...cur,
        status: 'queued',
        error_message: null,
        tgl_retry_count: 0,
        evidence_notice: null,
        generation_requested_at: iso(this.catalog.clock.now()),
        updated_at: nextUpdatedAt(this.catalog.clock, cur.updated_at),
      };
      void this.store.transforms.put(view.id, next);
      return next;
    });
  }

  /** Reprocess every stored record with the transform's current script (backfill `pending` from scratch). */
  async rebackfill(view: ViewRecord, id: string): Promise<ViewTransformRecord> {
    return this.write(view, () => {
      const cur = this.require(view.id, id);
      if (cur.transform_script === null)
        throw new ApiError('conflict', `Transform ${id} has no script yet; there is nothing to backfill with`);
      if (cur.status === 'disabled')
        throw new ApiError('conflict', `Transform ${id} is disabled; enable it before backfilling`);
      if (cur.backfill_status === 'pending')
        throw new ApiError('request_no_update', `Transform ${id} already has a backfill waiting to start`);
      const next: ViewTransformRecord = {
        ...cur,
        backfill_status: 'pending',
        ...NO_BACKFILL_PROGRESS,
        // From scratch: what earlier backfills wrote goes (files removed from disk by the
        // start-up sweep or right after the commit), then every file before live_from_seq runs again.
        backfill_done_files: [],
        updated_at: nextUpdatedAt(this.catalog.clock, cur.updated_at),
      };
      void this.store.transforms.put(view.id, next);
      for (const f of this.store.filesOf(view.id))
        if (f.origin === 'backfill') void this.store.files.remove(view.id, f.id);
      return next;
    });
  }

  /**
   * Generate every script of the view again: `mapping_generation` moves on, each transform not
   * disabled is queued (its script serving meanwhile), failed waiting shapes await a script again.
   */
  async regenerate(view: ViewRecord): Promise<ViewRecord> {
    await this.write(view, (now) => {
      for (const t of this.store.transformsOf(view.id)) {
        if (t.status === 'disabled') continue;
        void this.store.transforms.put(view.id, {
          ...t,
          status: 'queued',
          error_message: null,
          tgl_retry_count: 0,
          evidence_notice: null,
          generation_requested_at: now,
          updated_at: nextUpdatedAt(this.catalog.clock, t.updated_at),
        });
      }
      this.stageRetryUndecided(view.id, now, { transforms: false });
      this.catalog.stagePatch(view.id, (cur) => ({ mapping_generation: cur.mapping_generation + 1 }));
      return null;
    });
    return this.store.byId(view.id)!;
  }

  /** Record a person's decision on a waiting shape for the pipeline to act on. */
  async decide(view: ViewRecord, deferralId: string, input: DeferralDecisionInput): Promise<ViewDeferralRecord> {
    return this.write(view, (now) => {
      const cur = this.store.deferrals.get(view.id, deferralId);
      if (!cur) throw notFound(`Waiting shape ${deferralId} of view ${view.id}`);
      if (cur.resolved_at)
        throw new ApiError(
          'conflict',
          `Waiting shape ${deferralId} no longer waits (resolved at ${cur.resolved_at}, reason ${cur.reason})`,
        );
      const decision = {
        action: input.action,
        transform_id: null as string | null,
        reason: null as string | null,
        decided_at: now,
      };
      const next: ViewDeferralRecord = { ...cur, decision, next_action_at: now };
      if (input.action === 'assign') {
        if (input.transform_id === undefined) throw invalidField('body.transform_id', 'is required with action assign');
        const t = this.store.transforms.get(view.id, input.transform_id);
        if (!t) throw invalidField('body.transform_id', `is not a transform of view ${view.id}`);
        if (t.transform_script === null || t.status === 'disabled') {
          throw new ApiError(
            'conflict',
            `Transform ${t.id} ${t.status === 'disabled' ? 'is disabled' : 'has no script yet'}; it cannot serve a waiting shape`,
            { details: [{ field: 'body.transform_id', message: 'cannot serve records' }] },
          );
        }
        decision.transform_id = t.id;
        next.transform_id = t.id;
        next.reason = 'catching_up';
      } else if (input.transform_id !== undefined) {
        throw invalidField('body.transform_id', 'is only accepted with action assign');
      }
      if (input.action === 'generate') next.reason = 'awaiting_script';
      if (input.action === 'exclude') {
        decision.reason = input.reason ?? 'excluded by a person';
        next.exclusion_reason = decision.reason;
        next.excluded_at = now;
        next.resolved_at = now;
        next.next_action_at = null;
      } else if (input.reason !== undefined) {
        throw invalidField('body.reason', 'is only accepted with action exclude');
      }
      void this.store.deferrals.put(view.id, next);
      return next;
    });
  }

  /**
   * Undecided work tried again (after a hint change or a regeneration): transforms whose generation
   * failed are queued, waiting shapes whose generation failed await a script from now.
   */
  stageRetryUndecided(viewId: string, now: string, opts: { transforms?: boolean } = {}): void {
    if (opts.transforms !== false) {
      for (const t of this.store.transformsOf(viewId)) {
        if (t.status !== 'error') continue;
        void this.store.transforms.put(viewId, {
          ...t,
          status: 'queued',
          error_message: null,
          tgl_retry_count: 0,
          updated_at: nextUpdatedAt(this.catalog.clock, t.updated_at),
        });
      }
    }
    for (const d of this.store.deferralsOf(viewId)) {
      if (d.resolved_at || d.reason !== 'generation_failed') continue;
      void this.store.deferrals.put(viewId, { ...d, reason: 'awaiting_script', next_action_at: now });
    }
  }

  private require(viewId: string, id: string): ViewTransformRecord {
    const t = this.store.transforms.get(viewId, id);
    if (!t) throw notFound(`Transform ${id} of view ${viewId}`);
    return t;
  }

  /**
   * One write on a live view: `fn` stages it, the view's status follows its transforms, listeners
   * hear of it after the commit. A view scheduled for deletion answers 409.
   */
  private async write<T>(view: ViewRecord, fn: (now: string) => T): Promise<T> {
    const out = await this.store.store.transaction(() => {
      const cur = this.store.byId(view.id);
      if (!cur || this.catalog.destroying.has(view.id)) throw notFound(`View ${view.id}`);
      if (cur.deleted_at)
        throw new ApiError(
          'conflict',
          `View ${view.id} is scheduled for deletion; restore it with {"deleted_at": null} before changing it`,
        );
      const result = fn(iso(this.catalog.clock.now()));
      const status = derivedStatus(cur.status, this.store.transformsOf(view.id));
      if (status !== cur.status)
        this.catalog.stagePatch(view.id, () => ({
          status,
          error_message: status === 'error' ? cur.error_message : null,
        }));
      return result;
    });
    this.catalog.notify([view.id]);
    return out;
  }
}
