import type { ProjectRecord } from './records.js';
import type { Services } from '../services.js';

/** Destroy a project and everything beneath it at once (force delete, or the 7-day purge). */
export async function destroyProject(s: Services, project: ProjectRecord): Promise<void> {
  await s.activity.forget(project.id);
  await s.projects.destroy(project.team_id, project.id);
}
