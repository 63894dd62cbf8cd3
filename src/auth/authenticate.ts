import { ApiError } from '../errors.js';
import { SESSION_PREFIX, type AccountsRepo } from '../accounts/repo.js';
import type { Principal } from './principal.js';
import { sessionFromCookie } from './session-cookie.js';

/**
 * Resolve `Authorization: Bearer <secret>` to a Principal (docs/architecture.md, "Fixed contracts",
 * Auth). A session acts in the team named by `X-Team-Id` (default: the user's first team not
 * scheduled for deletion); a team it is not a member of is 403. Without the header, the browser's
 * session cookie is read instead (`viaCookie`).
 */
export function authenticate(accounts: AccountsRepo, headers: Record<string, string>): Principal {
  const header = headers['authorization'];
  if (!header) {
    // A browser signed in on a Sluice page sends its session as a cookie (session-cookie.ts); the
    // Authorization header wins when both are sent. Dispatch holds such writes to the CSRF check.
    const cookie = sessionFromCookie(headers);
    if (cookie?.startsWith(SESSION_PREFIX))
      return { ...sessionPrincipal(accounts, cookie, headers['x-team-id']), viaCookie: true };
    throw new ApiError('auth_missing_credentials');
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new ApiError('auth_missing_credentials', 'The Authorization header must be "Bearer <secret>"');
  const secret = match[1]!;

  if (secret.startsWith(SESSION_PREFIX)) return sessionPrincipal(accounts, secret, headers['x-team-id']);
  // Any other value is treated as an API key: SLUICE_BOOTSTRAP_KEY may be any string.
  const key = accounts.findKeyBySecret(secret);
  if (!key) throw new ApiError('auth_invalid_credentials', 'The API key is not valid: it may have been deleted');
  const team = accounts.getTeam(key.team_id);
  if (!team) throw new ApiError('auth_invalid_credentials', 'The API key belongs to a team that no longer exists');
  accounts.touchKey(key);
  return {
    kind: 'key',
    teamId: key.team_id,
    userId: null,
    keyId: key.id,
    sessionId: null,
    scopes: key.scopes,
    isOwner: false,
  };
}

function sessionPrincipal(accounts: AccountsRepo, token: string, teamHeader: string | undefined): Principal {
  const session = accounts.findSessionByToken(token);
  if (!session)
    throw new ApiError(
      'auth_invalid_credentials',
      'The session is not valid or has expired; sign in again with POST /v1/sessions',
    );
  const user = accounts.getUser(session.user_id);
  if (!user) throw new ApiError('auth_invalid_credentials', 'The session belongs to a user that no longer exists');
  // Default: the first team not scheduled for deletion (a scheduled team answers only to X-Team-Id).
  const teamIds = accounts.teamIdsOf(user.id);
  const teamId = teamHeader?.trim() || (teamIds.find((id) => !accounts.getTeam(id)?.deleted_at) ?? teamIds[0]);
  // A user in no team may still act where no team is needed (creating one); the pipeline checks.
  if (!teamId)
    return {
      kind: 'session',
      teamId: '',
      userId: user.id,
      keyId: null,
      sessionId: session.id,
      scopes: {},
      isOwner: false,
    };
  const membership = accounts.memberships.get(teamId, user.id);
  if (!membership) throw new ApiError('forbidden', `The user is not a member of team ${teamId} (X-Team-Id)`);
  const role = accounts.roles.get(teamId, membership.role_id);
  return {
    kind: 'session',
    teamId,
    userId: user.id,
    keyId: null,
    sessionId: session.id,
    scopes: role?.scopes ?? {},
    isOwner: role?.builtin === 'owner',
  };
}
