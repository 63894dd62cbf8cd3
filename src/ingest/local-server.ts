/**
 * This single node serves every project as that project's server ordinal 0 (docs/architecture.md,
 * "Past one machine"). Its id is derived from the project id — `<project id>_s0` — so it is stable
 * across restarts and needs no record; a fleet driver would give real servers their own ids.
 */
export const LOCAL_SERVER_ORDINAL = 0;

export function localServerId(projectId: string): string {
  return `${projectId}_s${LOCAL_SERVER_ORDINAL}`;
}

export function isLocalServer(projectId: string, serverId: string): boolean {
  return serverId === localServerId(projectId);
}
