import type { Clock } from '../clock.js';
import { ApiError } from '../errors.js';
import type { Store } from '../store/db.js';
import { Index, Table } from '../store/table.js';
import { nextUpdatedAt } from '../catalog/timestamps.js';
import type { FetchKind, ScheduledFetchRecord } from './records.js';

/**
 * Pulls or checks, stored under their project (`pulls` / `checks`), with an id → project index for
 * the scheduler, which knows only ids. Names are unique within a project (rule 1): a clash is 409.
 */
export class FetchJobRepo<T extends ScheduledFetchRecord> {
  readonly table: Table<T>;
  readonly byIdIndex: Index;

  constructor(
    readonly store: Store,
    readonly clock: Clock,
    readonly kind: FetchKind,
  ) {
    this.table = new Table(store, `${kind}s`);
    this.byIdIndex = new Index(store, `${kind}_project`);
  }

  get(projectId: string, id: string): T | undefined {
    return this.table.get(projectId, id);
  }

  byId(id: string): T | undefined {
    const projectId = this.byIdIndex.get(id);
    return projectId ? this.table.get(projectId, id) : undefined;
  }

  list(projectId: string): T[] {
    return this.table.list(projectId);
  }

  *all(): Iterable<T> {
    for (const { value } of this.table.all()) yield value;
  }

  async create(record: T): Promise<T> {
    return this.store.transaction(() => {
      this.assertNameFree(record.project_id, record.name, null);
      this.table.put(record.project_id, record);
      this.byIdIndex.put(record.id, record.project_id);
      return record;
    });
  }

  /**
   * Apply `patch` to the current record in one transaction; undefined when it no longer exists.
   * `touch` (default true) moves `updated_at`: user changes do, the service's health writes do not.
   */
  async update(
    projectId: string,
    id: string,
    patch: (current: T) => Partial<T> | null,
    opts: { touch?: boolean } = {},
  ): Promise<T | undefined> {
    return this.store.transaction(() => {
      const current = this.table.get(projectId, id);
      if (!current) return undefined;
      const change = patch(current);
      if (change === null) return current;
      const next: T = { ...current, ...change };
      if (next.name !== current.name) this.assertNameFree(projectId, next.name, id);
      if (opts.touch !== false) next.updated_at = nextUpdatedAt(this.clock, current.updated_at);
      this.table.put(projectId, next);
      return next;
    });
  }

  async remove(projectId: string, id: string): Promise<void> {
    await this.store.transaction(() => {
      this.table.remove(projectId, id);
      this.byIdIndex.remove(id);
    });
  }

  private assertNameFree(projectId: string, name: string, exceptId: string | null): void {
    const clash = this.table.list(projectId).find((x) => x.id !== exceptId && x.name === name);
    if (clash) {
      throw new ApiError(
        'conflict',
        `A ${this.kind} named "${name}" already exists in this project (${clash.id}); choose another name`,
        {
          details: [{ field: 'body.name', message: `is already used by another ${this.kind} of this project` }],
        },
      );
    }
  }
}
