import { iso, type Clock } from '../clock.js';
import { ApiError } from '../errors.js';
import { isId, newId } from '../ids.js';
import type { Store } from '../store/db.js';
import { Index, Table } from '../store/table.js';

/** Most components one page holds (docs/pages.md, "Limits"); adding past it is 400 `page_limit_reached`. */
export const MAX_COMPONENTS_PER_PAGE = 24;

export const PAGE_VISIBILITIES = ['private', 'public'] as const;
export const CARD_SIZES = ['1/1', '1/2'] as const;

/** A page (dashboard) of a project (docs/pages.md, "The page record"). */
export interface PageRecord {
  id: string;
  team_id: string;
  project_id: string;
  name: string;
  /** Unique within the project; also the page's short address `/p/<slug>` when no other project's page took it first. */
  slug: string;
  description: string | null;
  visibility: (typeof PAGE_VISIBILITIES)[number];
  /** The range the page opens with: an AnalyticsTimeRange (checked by the API; catalog sits below the rollups). */
  time_range: string;
  /** The saved custom range (`time_range=custom` here, and `page_id` on the aggregation and alert endpoints). */
  custom_range_start_at: string | null;
  custom_range_end_at: string | null;
  timezone: string;
  /** Custom domains (purpose `pages`) that serve the page at their root. */
  domain_ids: string[];
  /** Last POST …/refresh. */
  refreshed_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A component: one metric placed on one page (spec: Component). */
export interface ComponentRecord {
  id: string;
  page_id: string;
  metric_id: string;
  ui_card_size: (typeof CARD_SIZES)[number];
  ui_sort_index: number;
  created_at: string;
  updated_at: string;
}

export type PageInput = Omit<
  PageRecord,
  'id' | 'team_id' | 'project_id' | 'domain_ids' | 'refreshed_at' | 'created_at' | 'updated_at'
>;
export type PageChange = Partial<PageInput>;

/**
 * Pages keyed [project, id], their components keyed [page, id]; `pageProject` finds a page's project
 * from its id, `pageSlugs` the page holding a short address `/p/<slug>` (docs/pages.md, "Slugs and
 * addresses"): slugs are unique per project, and the first page to take a slug server-wide holds its
 * short address until it changes its slug or is deleted; every page also answers at `/p/<page id>`.
 */
export class PagesRepo {
  readonly pages: Table<PageRecord>;
  readonly components: Table<ComponentRecord>;
  readonly pageProject: Index;
  readonly pageSlugs: Index;

  constructor(
    readonly store: Store,
    readonly clock: Clock,
  ) {
    this.pages = new Table(store, 'pages');
    this.components = new Table(store, 'page_components');
    this.pageProject = new Index(store, 'page_project');
    this.pageSlugs = new Index(store, 'page_slugs');
  }

  get(projectId: string, id: string): PageRecord | undefined {
    return this.pages.get(projectId, id);
  }

  byId(id: string): PageRecord | undefined {
    const projectId = this.pageProject.get(id);
    return projectId ? this.pages.get(projectId, id) : undefined;
  }

  /** The page holding the short address `/p/<slug>`. */
  bySlug(slug: string): PageRecord | undefined {
    const id = this.pageSlugs.get(slug);
    return id ? this.byId(id) : undefined;
  }

  /** The page a `/p/<address>` names: a page id (always), else a short address (a slug). */
  byAddress(address: string): PageRecord | undefined {
    return isId('page', address) ? this.byId(address) : this.bySlug(address);
  }

  /** Whether the page holds the short address of its slug (else it is served at `/p/<page id>` only). */
  holdsSlug(page: Pick<PageRecord, 'id' | 'slug'>): boolean {
    return this.pageSlugs.get(page.slug) === page.id;
  }

  list(projectId: string): PageRecord[] {
    return this.pages.list(projectId);
  }

  /** A page's components in display order: `ui_sort_index`, then creation, then id. */
  componentsOf(pageId: string): ComponentRecord[] {
    return this.components
      .list(pageId)
      .sort(
        (a, b) =>
          a.ui_sort_index - b.ui_sort_index || a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id),
      );
  }

  async create(project: { id: string; team_id: string }, input: PageInput): Promise<PageRecord> {
    const now = iso(this.clock.now());
    const page: PageRecord = {
      id: newId('page'),
      team_id: project.team_id,
      project_id: project.id,
      ...input,
      domain_ids: [],
      refreshed_at: null,
      created_at: now,
      updated_at: now,
    };
    await this.store.transaction(() => {
      this.claimSlug(page);
      this.pages.put(project.id, page);
      this.pageProject.put(page.id, project.id);
    });
    return page;
  }

  /**
   * Apply `patch` atomically (a new slug is claimed in the same transaction: 409 when another page of
   * the project has it); undefined when the page is gone. A patch naming a slug — even the current
   * one — also takes its short address when it is free.
   */
  async update(page: PageRecord, patch: (current: PageRecord) => Partial<PageRecord>): Promise<PageRecord | undefined> {
    return this.store.transaction(() => {
      const current = this.pages.get(page.project_id, page.id);
      if (!current) return undefined;
      const patched = patch(current);
      const next: PageRecord = { ...current, ...patched, updated_at: iso(this.clock.now()) };
      if (next.slug !== current.slug && this.holdsSlug(current)) this.pageSlugs.remove(current.slug);
      if (next.slug !== current.slug || 'slug' in patched) this.claimSlug(next);
      this.pages.put(page.project_id, next);
      return next;
    });
  }

  /** Remove a page and every component on it (their metrics stay). */
  async destroy(page: PageRecord): Promise<void> {
    await this.store.transaction(() => {
      for (const c of this.components.list(page.id)) this.components.remove(page.id, c.id);
      this.pages.remove(page.project_id, page.id);
      this.pageProject.remove(page.id);
      if (this.holdsSlug(page)) this.pageSlugs.remove(page.slug);
    });
  }

  /**
   * Add a component; the count is checked in the same transaction as the write, so two concurrent
   * adds cannot pass the limit together.
   */
  async addComponent(
    page: PageRecord,
    input: Pick<ComponentRecord, 'metric_id'> & Partial<Pick<ComponentRecord, 'ui_card_size' | 'ui_sort_index'>>,
  ): Promise<ComponentRecord> {
    return this.store.transaction(() => {
      const existing = this.components.list(page.id);
      if (existing.length >= MAX_COMPONENTS_PER_PAGE) {
        throw new ApiError(
          'page_limit_reached',
          `Page ${page.id} already holds ${existing.length} components, the most a page holds (${MAX_COMPONENTS_PER_PAGE}); delete one before adding another`,
          {
            details: [
              {
                field: 'body.metric_id',
                message: `cannot be added: the page holds the maximum of ${MAX_COMPONENTS_PER_PAGE} components`,
              },
            ],
          },
        );
      }
      const now = iso(this.clock.now());
      const component: ComponentRecord = {
        id: newId('component'),
        page_id: page.id,
        metric_id: input.metric_id,
        ui_card_size: input.ui_card_size ?? '1/1',
        // Without an index a new card goes last.
        ui_sort_index: input.ui_sort_index ?? existing.reduce((max, c) => Math.max(max, c.ui_sort_index + 1), 0),
        created_at: now,
        updated_at: now,
      };
      this.components.put(page.id, component);
      return component;
    });
  }

  async updateComponent(
    component: ComponentRecord,
    patch: Partial<Pick<ComponentRecord, 'metric_id' | 'ui_card_size' | 'ui_sort_index'>>,
  ): Promise<ComponentRecord | undefined> {
    return this.store.transaction(() => {
      const current = this.components.get(component.page_id, component.id);
      if (!current) return undefined;
      const next: ComponentRecord = { ...current, ...patch, updated_at: iso(this.clock.now()) };
      this.components.put(component.page_id, next);
      return next;
    });
  }

  async removeComponent(component: ComponentRecord): Promise<void> {
    await this.store.transaction(() => {
      this.components.remove(component.page_id, component.id);
    });
  }

  /** Remove every page of a project (the project is being destroyed). */
  async destroyProjectPages(projectId: string): Promise<void> {
    for (const page of this.list(projectId)) await this.destroy(page);
  }

  /**
   * In a transaction: no other page of the project has the slug (else 409 naming `body.slug`); the
   * page then takes the slug's short address when no page holds it.
   */
  private claimSlug(page: Pick<PageRecord, 'id' | 'project_id' | 'slug'>): void {
    const other = this.list(page.project_id).find((p) => p.slug === page.slug && p.id !== page.id);
    if (other) {
      throw new ApiError(
        'conflict',
        `The slug "${page.slug}" is taken by another page of this project (${other.id}); choose another`,
        { details: [{ field: 'body.slug', message: 'is taken by another page of this project' }] },
      );
    }
    if (this.pageSlugs.get(page.slug) === undefined) this.pageSlugs.put(page.slug, page.id);
  }
}
