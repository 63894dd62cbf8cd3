import type { MemberView } from '../../accounts/memberships.js';
import type { UserRecord } from '../../accounts/records.js';

/** A user as the API shows it: never the password hash, only whether one is set. */
export function serializeUser(u: UserRecord) {
  return {
    object: 'user',
    id: u.id,
    email: u.email,
    name: u.name,
    has_password: u.password_hash !== null,
    created_at: u.created_at,
    updated_at: u.updated_at,
  };
}

/** A user's place in a team: the user's fields plus role and team. */
export function serializeMember(m: MemberView) {
  return {
    ...serializeUser(m.user),
    object: 'team_member',
    role_id: m.membership.role_id,
    role_name: m.role?.name ?? null,
    team_id: m.membership.team_id,
    joined_at: m.membership.created_at,
  };
}
