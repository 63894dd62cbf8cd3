import type { Store } from '../store/db.js';
import { Table } from '../store/table.js';
import { ScopedTable } from '../store/scoped-table.js';
import { JoinStore } from './join-store.js';
import type {
  ViewDeferralRecord,
  ViewFileManifest,
  ViewRecord,
  ViewTransformRecord,
  ViewVersionRecord,
} from './view-records.js';

/**
 * LMDB storage of views. Views are kept under their project (the table's id index finds the project
 * from the id alone); transforms, versions, waiting shapes and file manifests under their view. Writes
 * (`stage*`) must run inside `store.transaction`; the pipeline stages its manifests and progress in
 * the spool's commit transaction the same way.
 *
 * Views per team are few, so which views a collection's batches feed (`idsByRoot`) is a map in
 * memory, built from the table at start and refreshed by `reindex` after each committed change.
 */
export class ViewStore {
  readonly views: ScopedTable<ViewRecord>;
  readonly transforms: Table<ViewTransformRecord>;
  readonly versions: Table<ViewVersionRecord>;
  readonly deferrals: Table<ViewDeferralRecord>;
  readonly files: Table<ViewFileManifest>;
  /** Join views' lookup indexes and done marks (join-store.ts). */
  readonly joins: JoinStore;
  /** root collection id → ids of every view (live or scheduled) it feeds */
  private readonly byRoot = new Map<string, Set<string>>();
  /** view id → the root it is filed under in `byRoot` */
  private readonly rootOf = new Map<string, string>();

  constructor(readonly store: Store) {
    this.views = new ScopedTable(store, 'views', 'view_project');
    this.transforms = new Table(store, 'view_transforms');
    this.versions = new Table(store, 'view_versions');
    this.deferrals = new Table(store, 'view_deferrals');
    this.files = new Table(store, 'view_files');
    this.joins = new JoinStore(store);
    for (const { value } of this.views.all()) this.file(value.id, value.root_collection_id);
  }

  get(projectId: string, id: string): ViewRecord | undefined {
    return this.views.get(projectId, id);
  }

  /** Find by id alone. */
  byId(id: string): ViewRecord | undefined {
    return this.views.byId(id);
  }

  /** Every view of a project, live and scheduled. */
  list(projectId: string): ViewRecord[] {
    return this.views.list(projectId);
  }

  /** Ids of every view (live or scheduled) fed by the collection's batches. */
  idsByRoot(rootCollectionId: string): string[] {
    return [...(this.byRoot.get(rootCollectionId) ?? [])];
  }

  transformsOf(viewId: string): ViewTransformRecord[] {
    return this.transforms.list(viewId);
  }

  versionsOf(viewId: string): ViewVersionRecord[] {
    return this.versions.list(viewId);
  }

  deferralsOf(viewId: string): ViewDeferralRecord[] {
    return this.deferrals.list(viewId);
  }

  /** Manifests of the view's output files. */
  filesOf(viewId: string): ViewFileManifest[] {
    return this.files.list(viewId);
  }

  /** Stage a view write (insert or update). Call `reindex` once the transaction committed. */
  stageView(view: ViewRecord): void {
    void this.views.put(view.project_id, view);
  }

  /** Stage the removal of a view with its transforms, versions, waiting shapes, file manifests and join state. */
  stageRemoval(view: ViewRecord): void {
    for (const t of this.transformsOf(view.id)) void this.transforms.remove(view.id, t.id);
    for (const v of this.versionsOf(view.id)) void this.versions.remove(view.id, v.id);
    for (const d of this.deferralsOf(view.id)) void this.deferrals.remove(view.id, d.id);
    for (const f of this.filesOf(view.id)) void this.files.remove(view.id, f.id);
    if (view.view_mode === 'join') this.joins.stageRemoval(view.id);
    void this.views.remove(view.project_id, view.id);
  }

  /** Refresh the in-memory root map for a view from its committed record (gone: dropped). */
  reindex(viewId: string): void {
    const view = this.byId(viewId);
    const previous = this.rootOf.get(viewId);
    if (previous !== undefined && previous !== view?.root_collection_id) {
      const ids = this.byRoot.get(previous);
      ids?.delete(viewId);
      if (ids?.size === 0) this.byRoot.delete(previous);
      this.rootOf.delete(viewId);
    }
    if (view) this.file(view.id, view.root_collection_id);
  }

  private file(viewId: string, root: string): void {
    let ids = this.byRoot.get(root);
    if (!ids) this.byRoot.set(root, (ids = new Set()));
    ids.add(viewId);
    this.rootOf.set(viewId, root);
  }
}
