import { iso, type Clock } from '../clock.js';
import { newId } from '../ids.js';
import type { Store } from '../store/db.js';
import { ScopedTable } from '../store/scoped-table.js';
import type { ProjectRecord } from './records.js';

/** Projects, stored under their team; the table's id index finds a project's team from its id alone. */
export class ProjectsRepo {
  readonly table: ScopedTable<ProjectRecord>;

  constructor(
    readonly store: Store,
    readonly clock: Clock,
  ) {
    this.table = new ScopedTable(store, 'projects', 'project_team');
  }

  get(teamId: string, id: string): ProjectRecord | undefined {
    return this.table.get(teamId, id);
  }

  /** Find by id alone (ingest and background jobs know no team). */
  byId(id: string): ProjectRecord | undefined {
    return this.table.byId(id);
  }

  list(teamId: string): ProjectRecord[] {
    return this.table.list(teamId);
  }

  async create(teamId: string, input: { name: string; start_at?: string }): Promise<ProjectRecord> {
    const now = iso(this.clock.now());
    const project: ProjectRecord = {
      id: newId('project'),
      team_id: teamId,
      name: input.name,
      start_at: input.start_at ? iso(Date.parse(input.start_at)) : now,
      created_at: now,
      updated_at: now,
      deleted_at: null,
      late_data_window_minutes: 0,
      queued_server_count: null,
    };
    await this.store.transaction(() => {
      this.table.put(teamId, project);
    });
    return project;
  }

  /** Apply `patch` atomically; returns the new record, or undefined when it no longer exists. */
  async update(
    teamId: string,
    id: string,
    patch: (current: ProjectRecord) => Partial<ProjectRecord>,
  ): Promise<ProjectRecord | undefined> {
    return this.store.transaction(() => {
      const current = this.table.get(teamId, id);
      if (!current) return undefined;
      const next: ProjectRecord = { ...current, ...patch(current), updated_at: iso(this.clock.now()) };
      this.table.put(teamId, next);
      return next;
    });
  }

  /** Remove the project record itself (callers remove what lies beneath first). */
  async destroy(teamId: string, id: string): Promise<void> {
    await this.store.transaction(() => {
      this.table.remove(teamId, id);
    });
  }
}
