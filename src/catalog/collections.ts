import { iso, type Clock } from '../clock.js';
import { ApiError, invalidField } from '../errors.js';
import { newId } from '../ids.js';
import type { Store } from '../store/db.js';
import { Index } from '../store/table.js';
import { ScopedTable } from '../store/scoped-table.js';
import { isValidSlug, SLUG_PATTERN, slugFromName, uniqueSlug } from './collection-slug.js';
import type { CollectionRecord, SchemaSettings, SourceRecord } from './records.js';
import type { SourcesRepo } from './sources.js';
import { nextUpdatedAt } from './timestamps.js';

/**
 * Schema rules of a new collection (documented in docs/catalog.md). Chosen so a typical event
 * stream settles its shapes within an hour and a runaway producer cannot create unbounded versions.
 */
export const DEFAULT_SCHEMA_SETTINGS: Readonly<SchemaSettings> = Object.freeze({
  schema_opaque_paths: [],
  schema_tracked_paths: [],
  schema_max_depth: 6,
  schema_nulls: 'auto',
  schema_optional_keys: 'auto',
  schema_detector: 'auto',
  schema_recurrence_gap_ms: 3_600_000,
  schema_bulk_rows: 1000,
  schema_stale_after_ms: 604_800_000,
  schema_identity_limit: 256,
  schema_candidate_pool: 512,
  schema_alias_pool: 4096,
  schema_writer_limit: 32,
  schema_unclassified_retention_days: 30,
});

function defaultSettings(): SchemaSettings {
  return { ...DEFAULT_SCHEMA_SETTINGS, schema_opaque_paths: [], schema_tracked_paths: [] };
}

/**
 * Collections, stored under their source (found by id alone through the table's id index). Slugs are unique per source among live and scheduled
 * collections (`slugIndex`: `sourceId/slug` → id); a destroyed collection frees its slug.
 */
export class CollectionsRepo {
  readonly table: ScopedTable<CollectionRecord>;
  readonly slugIndex: Index;

  constructor(
    readonly store: Store,
    readonly clock: Clock,
    private readonly sources: SourcesRepo,
  ) {
    this.table = new ScopedTable(store, 'collections', 'collection_source');
    this.slugIndex = new Index(store, 'collection_slugs');
  }

  get(sourceId: string, id: string): CollectionRecord | undefined {
    return this.table.get(sourceId, id);
  }

  /** Find by id alone. */
  byId(id: string): CollectionRecord | undefined {
    return this.table.byId(id);
  }

  /** The collection (live or scheduled) holding `slug` in the source, or undefined. */
  bySlug(sourceId: string, slug: string): CollectionRecord | undefined {
    const id = this.slugIndex.get(slugKey(sourceId, slug));
    return id ? this.table.get(sourceId, id) : undefined;
  }

  /** Every collection of a source, live and scheduled. */
  list(sourceId: string): CollectionRecord[] {
    return this.table.list(sourceId);
  }

  /** Every collection of every source (live or scheduled) of a project. */
  listByProject(projectId: string): CollectionRecord[] {
    return this.sources.list(projectId).flatMap((src) => this.list(src.id));
  }

  /**
   * Create a collection. Without `slug` one is derived from the name and made unique (`-2`, `-3` …);
   * an explicit slug already held in the source answers 409 `conflict`.
   */
  async create(source: SourceRecord, input: { name: string; slug?: string }): Promise<CollectionRecord> {
    return this.store.transaction(() => {
      let slug: string;
      if (input.slug !== undefined) {
        slug = input.slug;
        const holder = this.bySlug(source.id, slug);
        if (holder) {
          throw new ApiError(
            'conflict',
            `Source ${source.id} already has a collection with slug "${slug}" (${holder.id}${holder.deleted_at ? ', scheduled for deletion' : ''}); choose another slug`,
            {
              details: [{ field: 'body.slug', message: 'is already used in this source' }],
            },
          );
        }
      } else {
        slug = uniqueSlug(slugFromName(input.name), (c) => this.slugIndex.get(slugKey(source.id, c)) !== undefined);
      }
      return this.insert(source, input.name, slug);
    });
  }

  /**
   * The live collection with `slug` in `source`, created (name = slug, default rules) when missing.
   * Race-safe: the check and the insert share one transaction, so concurrent calls yield one
   * collection. A slug held by a scheduled collection, or a source no longer live, answers
   * `source_deleted`; a malformed slug answers `request_validation_failed` on `query.collection`.
   */
  async ensure(source: SourceRecord, slug: string): Promise<CollectionRecord> {
    const known = this.bySlug(source.id, slug);
    if (known && !known.deleted_at) return known;
    if (!isValidSlug(slug))
      throw invalidField('query.collection', `must be a collection slug: 1 to 64 characters matching ${SLUG_PATTERN}`);
    return this.store.transaction(() => {
      const current = this.bySlug(source.id, slug);
      if (current && !current.deleted_at) return current;
      if (current) {
        throw new ApiError(
          'source_deleted',
          `Collection "${slug}" of source ${source.id} is scheduled for deletion; restore it with POST /v1/projects/${source.project_id}/collections/${current.id} {"deleted_at": null}`,
        );
      }
      const live = this.sources.get(source.project_id, source.id);
      if (!live || live.deleted_at)
        throw new ApiError('source_deleted', `Source ${source.id} is deleted or scheduled for deletion`);
      return this.insert(live, slug, slug);
    });
  }

  /**
   * Apply `patch` atomically (it may throw an ApiError, e.g. for a stale `expected_updated_at`);
   * returns the new record, or undefined when the collection no longer exists.
   */
  async update(
    sourceId: string,
    id: string,
    patch: (current: CollectionRecord) => Partial<CollectionRecord>,
  ): Promise<CollectionRecord | undefined> {
    return this.store.transaction(() => {
      const current = this.table.get(sourceId, id);
      if (!current) return undefined;
      const next: CollectionRecord = {
        ...current,
        ...patch(current),
        id: current.id,
        slug: current.slug,
        source_id: current.source_id,
      };
      next.updated_at = nextUpdatedAt(this.clock, current.updated_at);
      this.table.put(sourceId, next);
      return next;
    });
  }

  /**
   * Collections being destroyed right now (purge.ts `destroyCollection`): the API treats them as
   * gone, so a restore cannot bring one back halfway through.
   */
  readonly destroying = new Set<string>();

  /** Remove the collection record and free its slug (callers remove its data first). */
  async destroy(collection: CollectionRecord): Promise<void> {
    await this.store.transaction(() => {
      this.table.remove(collection.source_id, collection.id);
      this.slugIndex.remove(slugKey(collection.source_id, collection.slug));
    });
  }

  /** Stage an insert; runs inside a transaction. */
  private insert(source: SourceRecord, name: string, slug: string): CollectionRecord {
    const now = iso(this.clock.now());
    const collection: CollectionRecord = {
      id: newId('collection'),
      team_id: source.team_id,
      project_id: source.project_id,
      source_id: source.id,
      slug,
      name,
      ...defaultSettings(),
      created_at: now,
      updated_at: now,
      deleted_at: null,
    };
    this.table.put(source.id, collection);
    this.slugIndex.put(slugKey(source.id, slug), collection.id);
    return collection;
  }
}

function slugKey(sourceId: string, slug: string): string {
  return `${sourceId}/${slug}`;
}
