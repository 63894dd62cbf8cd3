import { iso, type Clock } from '../clock.js';
import { ApiError } from '../errors.js';
import { newId } from '../ids.js';
import type { Store } from '../store/db.js';
import { ScopedTable } from '../store/scoped-table.js';
import type { ProjectRecord, SourceRecord } from './records.js';
import { nextUpdatedAt } from './timestamps.js';

/**
 * Sources, stored under their project; the table's id index finds a source's project from its id alone.
 * Names are unique among the project's live sources (a scheduled source's name may be reused; restoring
 * it then needs a new name — see `update`).
 */
export class SourcesRepo {
  readonly table: ScopedTable<SourceRecord>;

  constructor(
    readonly store: Store,
    readonly clock: Clock,
  ) {
    this.table = new ScopedTable(store, 'sources', 'source_project');
  }

  get(projectId: string, id: string): SourceRecord | undefined {
    return this.table.get(projectId, id);
  }

  /** Find by id alone (ingest and background jobs know no project). */
  byId(id: string): SourceRecord | undefined {
    return this.table.byId(id);
  }

  /** Every source of a project, live and scheduled. */
  list(projectId: string): SourceRecord[] {
    return this.table.list(projectId);
  }

  async create(project: ProjectRecord, input: { name: string }): Promise<SourceRecord> {
    return this.store.transaction(() => {
      this.assertNameFree(project.id, input.name, null);
      const now = iso(this.clock.now());
      const source: SourceRecord = {
        id: newId('source'),
        team_id: project.team_id,
        project_id: project.id,
        name: input.name,
        created_at: now,
        updated_at: now,
        deleted_at: null,
      };
      this.table.put(project.id, source);
      return source;
    });
  }

  /**
   * Apply `patch` atomically; returns the new record, or undefined when the source no longer exists.
   * A result that is live must keep a name unique among live sources, else 409 `conflict`.
   */
  async update(
    projectId: string,
    id: string,
    patch: (current: SourceRecord) => Partial<SourceRecord>,
  ): Promise<SourceRecord | undefined> {
    return this.store.transaction(() => {
      const current = this.table.get(projectId, id);
      if (!current) return undefined;
      const next: SourceRecord = { ...current, ...patch(current) };
      if (!next.deleted_at && (next.name !== current.name || current.deleted_at))
        this.assertNameFree(projectId, next.name, id);
      next.updated_at = nextUpdatedAt(this.clock, current.updated_at);
      this.table.put(projectId, next);
      return next;
    });
  }

  /** Remove the source record itself (callers remove what lies beneath first). */
  async destroy(projectId: string, id: string): Promise<void> {
    await this.store.transaction(() => {
      this.table.remove(projectId, id);
    });
  }

  private assertNameFree(projectId: string, name: string, exceptId: string | null): void {
    const clash = this.table.list(projectId).find((s) => s.id !== exceptId && !s.deleted_at && s.name === name);
    if (clash) {
      throw new ApiError(
        'conflict',
        `A source named "${name}" already exists in this project (${clash.id}); choose another name`,
        {
          details: [{ field: 'body.name', message: 'is already used by another source of this project' }],
        },
      );
    }
  }
}
