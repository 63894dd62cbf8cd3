import { iso } from '../clock.js';
import { ApiError } from '../errors.js';
import { newId } from '../ids.js';
import type { Scopes } from '../auth/scopes.js';
import type { AccountsRepo } from './repo.js';
import type { RoleRecord } from './records.js';

function assertNameFree(repo: AccountsRepo, teamId: string, name: string, exceptId: string | null): void {
  const folded = name.toLowerCase();
  const clash = repo.roles.list(teamId).find((r) => r.id !== exceptId && r.name.toLowerCase() === folded);
  if (clash) throw new ApiError('conflict', `The team already has a role named "${clash.name}" (${clash.id})`);
}

function assertEditable(role: RoleRecord): void {
  if (role.builtin)
    throw new ApiError('builtin_role_immutable', `${role.name} is a built-in role; it cannot be changed or deleted`);
}

/** Create a custom role; names are unique within the team, case-insensitively. */
export async function createRole(
  repo: AccountsRepo,
  teamId: string,
  input: { name: string; description: string | null; scopes: Scopes },
): Promise<RoleRecord> {
  const now = iso(repo.clock.now());
  const role: RoleRecord = {
    id: newId('role'),
    team_id: teamId,
    name: input.name,
    description: input.description,
    scopes: input.scopes,
    builtin: null,
    created_at: now,
    updated_at: now,
  };
  await repo.store.transaction(() => {
    assertNameFree(repo, teamId, role.name, null);
    repo.roles.put(teamId, role);
  });
  return role;
}

/** Change a custom role; built-in roles refuse. Undefined when the role does not exist. */
export async function updateRole(
  repo: AccountsRepo,
  teamId: string,
  roleId: string,
  patch: { name?: string; description?: string | null; scopes?: Scopes },
): Promise<RoleRecord | undefined> {
  return repo.store.transaction(() => {
    const current = repo.roles.get(teamId, roleId);
    if (!current) return undefined;
    assertEditable(current);
    if (patch.name !== undefined) assertNameFree(repo, teamId, patch.name, roleId);
    const next: RoleRecord = { ...current, updated_at: iso(repo.clock.now()) };
    if (patch.name !== undefined) next.name = patch.name;
    if (patch.description !== undefined) next.description = patch.description;
    if (patch.scopes !== undefined) next.scopes = patch.scopes;
    repo.roles.put(teamId, next);
    return next;
  });
}

/** Delete a custom role no member holds. False when it does not exist. */
export async function deleteRole(repo: AccountsRepo, teamId: string, roleId: string): Promise<boolean> {
  return repo.store.transaction(() => {
    const current = repo.roles.get(teamId, roleId);
    if (!current) return false;
    assertEditable(current);
    const holders = repo.memberships.list(teamId).filter((m) => m.role_id === roleId).length;
    if (holders > 0)
      throw new ApiError('conflict', `The role is held by ${holders} member(s); give them another role first`);
    repo.roles.remove(teamId, roleId);
    return true;
  });
}
