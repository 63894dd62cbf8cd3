import { join } from 'node:path';
import { iso, type Clock } from '../clock.js';
import { ApiError, notFound } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/db.js';
import type { CollectionRecord, ProjectRecord } from '../catalog/records.js';
import { nextUpdatedAt } from '../catalog/timestamps.js';
import type { OutputField, TransformMode, ViewJoinClause, ViewRecord } from './view-records.js';
import { adoptingTransform, assertBindings, newView, policyFields, type MappingPolicyInput } from './view-fields.js';
import { ViewStore } from './view-store.js';
import { ViewDeletion, type ViewDependants } from './view-deletion.js';
import { dependantsOf, derivedStatus, inputsOf, newTransform, topologicalOrder } from './view-rules.js';
import { ViewTransforms } from './view-transforms.js';

export type { MappingPolicyInput } from './view-fields.js';
export type { ViewDependants } from './view-deletion.js';

/** A view reading a collection or another view (already checked to be live, in the project). */
export interface ViewCreateInput {
  name: string;
  reads: { collection: CollectionRecord } | { parent: ViewRecord };
  output_schema?: OutputField[];
  hint?: string | null;
  mapping_policy?: MappingPolicyInput;
  /** Checked to compile; absent: the first transform is queued for generation. */
  transform_script?: string;
  transform_mode?: TransformMode;
}

/** A join view: `base` and each clause's lookup view checked live, in the project, keys present. */
export interface ViewJoinInput {
  name: string;
  base: ViewRecord;
  joins: ViewJoinClause[];
  output_schema?: OutputField[];
  hint?: string | null;
  transform_script?: string;
}

/** The settable fields of a view (spec: Update view body). */
export interface ViewChange {
  name?: string;
  hint?: string | null;
  output_schema?: OutputField[];
  mapping_policy?: MappingPolicyInput;
  transform_mode?: TransformMode;
  view_transform_id?: string;
  deleted_at?: null;
}

/**
 * Views: create, update, and through `deletion` (view-deletion.ts) scheduled deletion and
 * destruction, through `transforms` their transforms, versions and waiting shapes. Every write is
 * one LMDB transaction; `onChange` listeners hear the id of each view a committed write touched
 * (the pipeline starts backfills and generation from there).
 */
export class ViewCatalog {
  readonly store: ViewStore;
  /** Transforms, versions, waiting shapes of views. */
  readonly transforms: ViewTransforms;
  /** Scheduled deletion, destruction and purge of views. */
  readonly deletion: ViewDeletion;
  /** Views being destroyed right now: the API and the pipeline treat them as gone. */
  readonly destroying: ReadonlySet<string>;
  private readonly listeners = new Set<(viewId: string) => void>();
  private readonly fileListeners = new Set<(viewIds: readonly string[]) => void>();

  constructor(
    store: Store,
    readonly clock: Clock,
    private readonly log: Logger,
    private readonly dataDir: string,
  ) {
    this.store = new ViewStore(store);
    this.transforms = new ViewTransforms(this, this.store);
    this.deletion = new ViewDeletion({
      store: this.store,
      clock,
      log,
      viewDir: (v) => this.viewDir(v),
      notify: (ids) => this.notify(ids),
      liveDependants: (v) => this.liveDependants(v),
    });
    this.destroying = this.deletion.destroying;
  }

  /** Register what depends on views: it blocks their deletion while live and is destroyed with them. */
  addDependants(d: ViewDependants): void {
    this.deletion.addDependants(d);
  }

  /** Hear the id of every view changed by a committed write; returns the unsubscribe function. */
  onChange(listener: (viewId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tell listeners (after commit) that these views changed; a failing listener is logged, not fatal. */
  notify(viewIds: Iterable<string>): void {
    for (const id of new Set(viewIds)) {
      this.store.reindex(id);
      for (const listener of this.listeners) {
        try {
          listener(id);
        } catch (err) {
          this.log.error({ err, view_id: id }, 'a view change listener failed');
        }
      }
    }
  }

  /** Hear the ids of views that committed output files (join views follow their inputs' files). */
  onFiles(listener: (viewIds: readonly string[]) => void): () => void {
    this.fileListeners.add(listener);
    return () => this.fileListeners.delete(listener);
  }

  /** Tell file listeners (after commit) that these views committed files; never throws. */
  filesCommitted(viewIds: readonly string[]): void {
    if (viewIds.length === 0) return;
    for (const listener of this.fileListeners) {
      try {
        listener(viewIds);
      } catch (err) {
        this.log.error({ err, view_ids: viewIds }, 'a view files listener failed');
      }
    }
  }

  /** The directory of a view's output files. */
  viewDir(view: Pick<ViewRecord, 'project_id' | 'id'>): string {
    return join(this.dataDir, 'views', view.project_id, view.id);
  }

  get(projectId: string, id: string): ViewRecord | undefined {
    return this.store.get(projectId, id);
  }

  byId(id: string): ViewRecord | undefined {
    return this.store.byId(id);
  }

  /** Every view of a project, live and scheduled (not those being destroyed). */
  list(projectId: string): ViewRecord[] {
    return this.store.list(projectId).filter((v) => !this.destroying.has(v.id));
  }

  /** Every live view (not scheduled for deletion, not being destroyed), inputs first. */
  liveViews(): ViewRecord[] {
    return topologicalOrder(
      [...this.store.views.all()]
        .map((e) => e.value)
        .filter((v) => v.deleted_at === null && !this.destroying.has(v.id)),
    );
  }

  /** Live views fed by a collection's batches, inputs first (parents before children). */
  liveViewsOf(rootCollectionId: string): ViewRecord[] {
    const views = this.store
      .idsByRoot(rootCollectionId)
      .map((id) => this.store.byId(id))
      .filter((v): v is ViewRecord => v !== undefined && v.deleted_at === null && !this.destroying.has(v.id));
    return topologicalOrder(views);
  }

  /** Live views reading `view` directly: its derived views and the join views using it. */
  liveDependants(view: ViewRecord): ViewRecord[] {
    return dependantsOf(view.id, this.list(view.project_id)).filter((v) => v.deleted_at === null);
  }

  /**
   * Why the output schema can no longer change (a transform has a script, a version exists, or
   * output is stored), or null while it still can.
   */
  outputSchemaLock(viewId: string): string | null {
    const scripted = this.store.transformsOf(viewId).find((t) => t.transform_script !== null);
    if (scripted) return `transform ${scripted.id} already has a script (a mapping exists)`;
    if (this.store.versionsOf(viewId).length > 0) return 'schema versions are already mapped';
    if (this.store.filesOf(viewId).length > 0) return 'the view already stored output';
    return null;
  }

  /** Create a view with its first transform (spec: Create view rules). */
  async create(project: ProjectRecord, input: ViewCreateInput): Promise<ViewRecord> {
    const view = await this.store.store.transaction(() => {
      const now = iso(this.clock.now());
      let root: string;
      let collectionId: string | null = null;
      let parentId: string | null = null;
      if ('collection' in input.reads) {
        collectionId = root = input.reads.collection.id;
      } else {
        const parent = this.liveInput(project.id, input.reads.parent.id, 'body.parent_view_id');
        parentId = parent.id;
        root = parent.root_collection_id;
      }
      const mode = input.transform_mode ?? 'auto';
      const draft = newView(project, now, {
        name: input.name,
        root,
        mode,
        hint: input.hint ?? null,
        output: input.output_schema ?? [],
      });
      const transform = newTransform(draft.id, input.transform_script ?? null, now);
      const view: ViewRecord = {
        ...draft,
        collection_id: collectionId,
        parent_view_id: parentId,
        view_mode: collectionId ? 'collection' : 'view',
        ...(input.mapping_policy ? policyFields(draft, input.mapping_policy) : {}),
        status: derivedStatus('initializing', [transform]),
        adopting_transform_id: mode === 'manual' ? transform.id : null,
      };
      assertBindings(view);
      this.store.stageView(view);
      void this.store.transforms.put(view.id, transform);
      return view;
    });
    this.notify([view.id]);
    return view;
  }

  /** Create a join view with its first transform (spec: Join view body). */
  async createJoin(project: ProjectRecord, input: ViewJoinInput): Promise<ViewRecord> {
    const view = await this.store.store.transaction(() => {
      const now = iso(this.clock.now());
      const base = this.liveInput(project.id, input.base.id, 'body.base_view_id');
      input.joins.forEach((j, i) => this.liveInput(project.id, j.lookup_view_id, `body.joins[${i}].lookup_view_id`));
      const draft = newView(project, now, {
        name: input.name,
        root: base.root_collection_id,
        mode: 'auto',
        hint: input.hint ?? null,
        output: input.output_schema ?? [],
      });
      const transform = newTransform(draft.id, input.transform_script ?? null, now);
      const view: ViewRecord = {
        ...draft,
        view_mode: 'join',
        join_base_view_id: base.id,
        join_status: 'backfilling',
        join_lookup_progress: Object.fromEntries(
          input.joins.map((j) => [
            j.alias,
            { status: 'pending' as const, file_count: 0, files_done: 0, error: null, updated_at: now },
          ]),
        ),
        join_base_file_count: 0,
        join_base_files_done: 0,
        // Base files committed before it are the join's backfill (docs/views.md, "Join views").
        join_backfill_cutoff_at: now,
        join_created_at: now,
        join_updated_at: now,
        joins: input.joins,
        status: derivedStatus('initializing', [transform]),
      };
      this.store.stageView(view);
      void this.store.transforms.put(view.id, transform);
      return view;
    });
    this.notify([view.id]);
    return view;
  }

  /** Apply an update (spec: Update view body and rules); answers the new record. */
  async update(projectId: string, id: string, change: ViewChange): Promise<ViewRecord> {
    const view = await this.store.store.transaction(() => {
      const cur = this.store.get(projectId, id);
      if (!cur || this.destroying.has(id)) throw notFound(`View ${id}`);
      if (cur.deleted_at && change.deleted_at !== null) {
        throw new ApiError(
          'conflict',
          `View ${id} is scheduled for deletion; send {"deleted_at": null} to restore it before changing it`,
        );
      }
      const now = iso(this.clock.now());
      const next: ViewRecord = { ...cur, updated_at: nextUpdatedAt(this.clock, cur.updated_at) };
      if (change.deleted_at === null && cur.deleted_at) {
        this.assertInputsLive(cur);
        next.deleted_at = null;
      }
      if (change.name !== undefined) next.name = change.name;
      if (
        change.output_schema !== undefined &&
        JSON.stringify(change.output_schema) !== JSON.stringify(cur.output_schema)
      ) {
        const lock = this.outputSchemaLock(cur.id);
        if (lock) {
          throw new ApiError(
            'conflict',
            `The output schema of view ${id} can no longer change: ${lock}. Output schema changes are accepted only before a mapping or stored output exists; create a new view for another schema`,
            {
              details: [{ field: 'body.output_schema', message: `can no longer change: ${lock}` }],
            },
          );
        }
        next.output_schema = change.output_schema;
      }
      if (change.mapping_policy !== undefined) Object.assign(next, policyFields(cur, change.mapping_policy));
      assertBindings(next);
      next.transform_mode = change.transform_mode ?? cur.transform_mode;
      next.adopting_transform_id = adoptingTransform(
        cur,
        next.transform_mode,
        change.view_transform_id,
        this.store.transformsOf(cur.id),
      );
      if (change.hint !== undefined && change.hint !== cur.hint) {
        next.hint = change.hint;
        // Accepted mappings stay; undecided work (failed generation) is tried again with the new hint.
        this.transforms.stageRetryUndecided(cur.id, now);
      }
      this.store.stageView(next);
      return next;
    });
    this.notify([view.id]);
    return view;
  }

  /** Schedule a view for deletion (`ViewDeletion.scheduleDelete`). */
  scheduleDelete(view: ViewRecord): Promise<ViewRecord> {
    return this.deletion.scheduleDelete(view);
  }

  /** Destroy a view now with the views scheduled for deletion that read it (`ViewDeletion.destroy`). */
  destroy(view: ViewRecord): Promise<void> {
    return this.deletion.destroy(view);
  }

  /** Destroy every view fed by a collection that is being destroyed (`ViewDeletion.destroyReading`). */
  destroyReading(collection: Pick<CollectionRecord, 'id' | 'project_id'>): Promise<void> {
    return this.deletion.destroyReading(collection);
  }

  /** Permanently remove views whose 7 days have passed (`ViewDeletion.purgeExpired`); answers their ids. */
  purgeExpired(now: number): Promise<string[]> {
    return this.deletion.purgeExpired(now);
  }

  /** Stage a view update made by the pipeline or a sibling module; returns the staged record. */
  stagePatch(viewId: string, patch: (cur: ViewRecord) => Partial<ViewRecord>): ViewRecord | undefined {
    const cur = this.store.byId(viewId);
    if (!cur) return undefined;
    const next: ViewRecord = {
      ...cur,
      ...patch(cur),
      id: cur.id,
      project_id: cur.project_id,
      updated_at: nextUpdatedAt(this.clock, cur.updated_at),
    };
    this.store.stageView(next);
    return next;
  }

  /**
   * Apply `patch` to a view in its own transaction (for the pipeline: status, backfill progress,
   * join state). Listeners hear of it unless `notify` is false (the pipeline's own progress).
   */
  async patchView(
    viewId: string,
    patch: (cur: ViewRecord) => Partial<ViewRecord>,
    opts: { notify?: boolean } = {},
  ): Promise<ViewRecord | undefined> {
    const next = await this.store.store.transaction(() => this.stagePatch(viewId, patch));
    if (next && opts.notify !== false) this.notify([viewId]);
    else if (next) this.store.reindex(viewId);
    return next;
  }

  /** A live view of the project (read inside the transaction), or 404 naming `field`. */
  private liveInput(projectId: string, id: string, field: string): ViewRecord {
    const v = this.store.get(projectId, id);
    if (!v || this.destroying.has(id)) {
      throw new ApiError('not_found', `View ${id} not found in project ${projectId}`, {
        details: [{ field, message: 'is not a view of this project' }],
      });
    }
    if (v.deleted_at) {
      throw new ApiError(
        'not_found',
        `View ${id} is scheduled for deletion; restore it with POST /v1/projects/${projectId}/views/${id} {"deleted_at": null}`,
        { details: [{ field, message: 'is scheduled for deletion' }] },
      );
    }
    return v;
  }

  /** Restoring needs the view's inputs live (a parent scheduled for deletion would take it along). */
  private assertInputsLive(view: ViewRecord): void {
    for (const id of inputsOf(view)) {
      const input = this.store.get(view.project_id, id);
      if (!input || input.deleted_at) {
        throw new ApiError(
          'conflict',
          `View ${view.id} reads view ${id}, which is ${input ? 'scheduled for deletion' : 'gone'}; restore ${id} first`,
        );
      }
    }
  }
}
