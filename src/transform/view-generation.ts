import { RerunJob } from './rerun-job.js';
import type { Clock } from '../clock.js';
import type { CollectionRecord } from '../catalog/records.js';
import type { Logger } from '../log.js';
import type { SchemaVersionRecord } from '../schema/versions.js';
import type { ViewCatalog } from './view-catalog.js';
import type { ViewRecord } from './view-records.js';
import { planGeneration, type GenerationPlan } from './generation-plan.js';
import { derivedStatus } from './view-rules.js';

/** What the generator needs of the schema side: a collection's live versions as the API lists them. */
export interface GenerationDeps {
  views: ViewCatalog;
  collection: (id: string) => CollectionRecord | undefined;
  versions: (c: CollectionRecord) => Promise<SchemaVersionRecord[]>;
  clock: Clock;
  log: Logger;
  /** Coalesce kicks arriving within this many ms (batch commits); default 50. */
  debounceMs?: number;
}

/**
 * Script generation for `transform_mode: auto` (docs/views.md, "Auto mode"), in the background:
 * for each live collection view with work to do — a transform `queued` for generation, a settled
 * schema version no generated script covers yet, a person's decision on a waiting shape — it runs
 * the offline generator (`planGeneration`) on the collection's settled versions and commits the
 * outcome in one LMDB transaction: the script on the transform (`active`, backfill `pending` for a
 * first script) with view version records, or a waiting shape asking its question. Runs on every
 * committed view change and after batches commit (`kick`); a pass that changes nothing writes
 * nothing, so it reaches a fixed point.
 */
export class ViewGenerator {
  private readonly job: RerunJob;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly d: GenerationDeps) {
    this.job = new RerunJob(() => this.pass(), d.log, 'view script generation');
  }

  start(): void {
    this.unsubscribe = this.d.views.onChange(() => this.kick());
    this.kick();
  }

  /**
   * Look for work soon (coalesces bursts: each batch commit kicks). A real-time debounce, not a
   * scheduler job: it is not periodic, and it only groups kicks that arrive together.
   */
  kick(): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.job.request();
    }, this.d.debounceMs ?? 50);
    this.timer.unref();
  }

  /** Resolves once no pass is running or due (tests). */
  async idle(): Promise<void> {
    await this.job.idle();
    while (this.timer) {
      await new Promise((r) => setTimeout(r, 10));
      await this.job.idle();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.job.stop();
  }

  private async pass(): Promise<void> {
    const { views } = this.d;
    for (const { value: view } of views.store.views.all()) {
      if (this.stopped) return;
      if (!this.eligible(view)) continue;
      const c = this.d.collection(view.collection_id!);
      if (!c || c.deleted_at) continue;
      const versions = await this.d.versions(c);
      await this.apply(view.id, versions);
    }
  }

  /** Collection views only: a view of a view or a join reads outputs, not collection schema versions. */
  private eligible(view: ViewRecord): boolean {
    if (
      view.deleted_at !== null ||
      view.view_mode !== 'collection' ||
      view.collection_id === null ||
      this.d.views.destroying.has(view.id)
    )
      return false;
    if (view.transform_mode === 'auto') return true;
    // Manual mode generates only when asked (POST .../generate or a decision).
    return (
      this.d.views.store
        .transformsOf(view.id)
        .some((t) => t.status === 'queued' && t.generation_requested_at !== undefined) ||
      this.d.views.store.deferralsOf(view.id).some((x) => x.resolved_at === null && x.next_action_at !== null)
    );
  }

  /** Plan against the committed state inside the write transaction, stage the plan, then notify. */
  private async apply(viewId: string, versions: SchemaVersionRecord[]): Promise<void> {
    const { views, clock } = this.d;
    const store = views.store;
    let plan: GenerationPlan | null = null;
    await store.store.transaction(() => {
      const view = store.byId(viewId);
      if (!view || view.deleted_at !== null || views.destroying.has(viewId)) return;
      plan = planGeneration({
        view,
        transforms: store.transformsOf(viewId),
        records: store.versionsOf(viewId),
        deferrals: store.deferralsOf(viewId),
        versions,
        now: new Date(clock.now()).toISOString(),
      });
      if (plan.empty) return;
      for (const t of plan.transforms) void store.transforms.put(viewId, t);
      for (const r of plan.records) void store.versions.put(viewId, r);
      for (const x of plan.deferrals) void store.deferrals.put(viewId, x);
      const status = derivedStatus(
        view.status,
        store.transformsOf(viewId).map((t) => plan!.transforms.find((p) => p.id === t.id) ?? t),
      );
      views.stagePatch(viewId, () => ({
        ...plan!.view,
        ...(status !== view.status ? { status, error_message: status === 'error' ? view.error_message : null } : {}),
      }));
    });
    const done = plan as GenerationPlan | null;
    if (done && !done.empty) {
      if (done.failure) this.d.log.warn({ view_id: viewId, err: done.failure }, 'script generation failed');
      views.notify([viewId]);
    }
  }
}
