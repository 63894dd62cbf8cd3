import { ApiError, notFound } from '../errors.js';
import { hasScope, type ScopeRequirement, type Scopes } from '../auth/scopes.js';
import type { Principal } from '../auth/principal.js';
import type { AccountsRepo } from './repo.js';
import type { TeamRecord, UserRecord } from './records.js';

/** The signed-in user of a session principal; an API key gets 403 session_required. */
export function requireSessionUser(repo: AccountsRepo, p: Principal): UserRecord {
  const user = p.kind === 'session' && p.userId ? repo.getUser(p.userId) : undefined;
  if (!user) throw new ApiError('session_required');
  return user;
}

/** Throw 403 forbidden unless `scopes` grant `required`. */
export function requireScope(scopes: Scopes, required: ScopeRequirement): void {
  if (!hasScope(scopes, required)) throw new ApiError('forbidden', `This operation needs the ${required} scope`);
}

/** Who made a change, for `updated_by`: the session's user id or the API key's id. */
export function actorId(p: Principal): string | null {
  return p.userId ?? p.keyId;
}

/** What a caller may do in one team: its scopes there and whether it is an Owner of it. */
export interface TeamAccess {
  team: TeamRecord;
  scopes: Scopes;
  isOwner: boolean;
}

/**
 * The caller's access to `teamId`, or undefined when it may not see it: an API key sees only its
 * own team, a session the teams its user belongs to; a team scheduled for deletion only its Owners.
 */
export function findTeamAccess(repo: AccountsRepo, p: Principal, teamId: string): TeamAccess | undefined {
  const team = repo.getTeam(teamId);
  if (!team) return undefined;
  let access: TeamAccess;
  if (p.kind === 'key') {
    if (p.teamId !== teamId) return undefined;
    access = { team, scopes: p.scopes, isOwner: false };
  } else {
    const membership = p.userId ? repo.memberships.get(teamId, p.userId) : undefined;
    if (!membership) return undefined;
    const role = repo.roles.get(teamId, membership.role_id);
    access = { team, scopes: role?.scopes ?? {}, isOwner: role?.builtin === 'owner' };
  }
  if (team.deleted_at && !access.isOwner) return undefined;
  return access;
}

/** `findTeamAccess` or 404 (a team the caller may not see is indistinguishable from none). */
export function requireTeamAccess(repo: AccountsRepo, p: Principal, teamId: string): TeamAccess {
  const access = findTeamAccess(repo, p, teamId);
  if (!access) throw notFound(`Team ${teamId}`);
  return access;
}
