import { ApiError } from '../../errors.js';
import { hashPassword, verifyPassword } from '../../auth/password.js';
import { requireSessionUser } from '../../accounts/access.js';
import type { Services } from '../../services.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { object } from '../http/schemas.js';

const signInBody = object(
  {
    email: { type: 'string', minLength: 1, maxLength: 254, errorHint: 'must be the email address of the account' },
    password: { type: 'string', minLength: 1, maxLength: 1024, errorHint: 'must be the password of the account' },
  },
  ['email', 'password'],
);

// One message for an unknown email and a wrong password, so sign-in does not reveal which accounts exist.
const BAD_SIGN_IN = 'The email or password is not correct';

/** Sign in (POST /v1/sessions) and sign out (DELETE /v1/sessions). */
export function sessionRoutes(s: Pick<Services, 'accounts'>): RouteDef[] {
  // Verified against when the email is unknown, so both failures cost the same scrypt time.
  let decoy: Promise<string> | null = null;
  return [
    defineRoute<{ email: string; password: string }>({
      method: 'POST',
      path: '/v1/sessions',
      scope: 'authenticated',
      auth: 'none',
      summary: 'Sign in with email and password; returns a session token',
      schema: { body: signInBody },
      handler: async (ctx) => {
        const user = s.accounts.getUserByEmail(ctx.body.email.trim());
        const hash = user?.password_hash ?? (await (decoy ??= hashPassword('decoy-password-never-matches')));
        const ok = await verifyPassword(ctx.body.password, hash);
        if (!user || !user.password_hash || !ok) throw new ApiError('auth_invalid_credentials', BAD_SIGN_IN);
        const { token, session } = await s.accounts.createSession(user.id);
        return { status: 201, data: { object: 'session', token, user_id: user.id, expires_at: session.expires_at } };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/sessions',
      scope: 'authenticated',
      allowNoTeam: true,
      allowWhenTeamDeleted: true,
      allowWhenRestricted: true,
      summary: 'Sign out: end the session that makes this request',
      handler: async (ctx) => {
        const user = requireSessionUser(s.accounts, ctx.principal);
        const session = ctx.principal.sessionId ? s.accounts.sessions.get(user.id, ctx.principal.sessionId) : undefined;
        if (session) await s.accounts.deleteSession(session);
        return { data: null };
      },
    }),
  ];
}
