import { iso } from '../clock.js';
import { ApiError } from '../errors.js';
import { newId } from '../ids.js';
import { GLOBAL, INVITE_SESSION_TTL_MS, type AccountsRepo } from './repo.js';
import type { MembershipRecord, RoleRecord, UserRecord } from './records.js';

/** A membership joined with its user and role, as the member endpoints show it. */
export interface MemberView {
  membership: MembershipRecord;
  user: UserRecord;
  role: RoleRecord | undefined;
}

/** Every member of a team with user and role. */
export function listMembers(repo: AccountsRepo, teamId: string): MemberView[] {
  const roles = new Map(repo.roles.list(teamId).map((r) => [r.id, r]));
  const out: MemberView[] = [];
  for (const membership of repo.memberships.list(teamId)) {
    const user = repo.getUser(membership.user_id);
    if (user) out.push({ membership, user, role: roles.get(membership.role_id) });
  }
  return out;
}

export function getMember(repo: AccountsRepo, teamId: string, userId: string): MemberView | undefined {
  const membership = repo.memberships.get(teamId, userId);
  const user = membership && repo.getUser(userId);
  if (!membership || !user) return undefined;
  return { membership, user, role: repo.roles.get(teamId, membership.role_id) };
}

function ownerCount(repo: AccountsRepo, teamId: string, ownerRoleId: string): number {
  return repo.memberships.list(teamId).filter((m) => m.role_id === ownerRoleId).length;
}

function lastOwnerError(action: string): ApiError {
  return new ApiError('conflict', `Cannot ${action} the team's last Owner; make another member Owner first`);
}

/**
 * Add the user with `email` to a team, creating the user (without a password) if the email is
 * unknown. A user created here gets an invitation session (7 days) so they can set a password;
 * its token is returned once. Already a member: conflict.
 */
export async function inviteMember(
  repo: AccountsRepo,
  input: { teamId: string; email: string; name: string | null; roleId: string },
): Promise<{ member: MemberView; inviteToken: string | null; inviteExpiresAt: string | null }> {
  const email = input.email.toLowerCase();
  const now = iso(repo.clock.now());
  const { user, created, membership } = await repo.store.transaction(() => {
    let user = repo.getUserByEmail(email);
    let created = false;
    if (!user) {
      user = { id: newId('user'), email, name: input.name, password_hash: null, created_at: now, updated_at: now };
      repo.users.put(GLOBAL, user);
      repo.userByEmail.put(email, user.id);
      created = true;
    } else if (repo.memberships.get(input.teamId, user.id)) {
      throw new ApiError('conflict', `${email} is already a member of this team`);
    }
    const membership = repo.addMemberInTxn(input.teamId, user.id, input.roleId, now);
    return { user, created, membership };
  });
  let inviteToken: string | null = null;
  let inviteExpiresAt: string | null = null;
  if (created) {
    const { token, session } = await repo.createSession(user.id, INVITE_SESSION_TTL_MS);
    inviteToken = token;
    inviteExpiresAt = session.expires_at;
  }
  return {
    member: { membership, user, role: repo.roles.get(input.teamId, input.roleId) },
    inviteToken,
    inviteExpiresAt,
  };
}

/** Give a member another role; demoting the last Owner is a conflict. */
export async function changeMemberRole(
  repo: AccountsRepo,
  teamId: string,
  userId: string,
  roleId: string,
): Promise<MembershipRecord | undefined> {
  return repo.store.transaction(() => {
    const current = repo.memberships.get(teamId, userId);
    if (!current) return undefined;
    const owner = repo.builtinRole(teamId, 'owner');
    if (owner && current.role_id === owner.id && roleId !== owner.id && ownerCount(repo, teamId, owner.id) <= 1)
      throw lastOwnerError('demote');
    const next: MembershipRecord = { ...current, role_id: roleId, updated_at: iso(repo.clock.now()) };
    repo.memberships.put(teamId, next);
    return next;
  });
}

/** Remove a member; removing the last Owner is a conflict. */
export async function removeMember(repo: AccountsRepo, teamId: string, userId: string): Promise<boolean> {
  return repo.store.transaction(() => {
    const current = repo.memberships.get(teamId, userId);
    if (!current) return false;
    const owner = repo.builtinRole(teamId, 'owner');
    if (owner && current.role_id === owner.id && ownerCount(repo, teamId, owner.id) <= 1)
      throw lastOwnerError('remove');
    repo.removeMemberInTxn(teamId, userId);
    return true;
  });
}
