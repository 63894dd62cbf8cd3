import { ApiError, invalidField, notFound } from '../../errors.js';
import { verifyPassword } from '../../auth/password.js';
import { findTeamAccess, requireScope, requireSessionUser } from '../../accounts/access.js';
import { listMembers } from '../../accounts/memberships.js';
import type { TeamRecord, UserRecord } from '../../accounts/records.js';
import type { Services } from '../../services.js';
import { listRoute } from '../http/list-route.js';
import { teamStorageGb } from '../../schema/storage-stats.js';
import { defineRoute, type Principal, type RouteDef } from '../http/route.js';
import type { ListQuery } from '../http/pagination.js';
import { object, params, text } from '../http/schemas.js';
import { serializeTeam } from '../teams/serialize.js';
import { teamOrder } from '../teams/routes.js';
import { serializeUser } from './serialize.js';

type UserParams = { user_id: string };

export const emailSchema = {
  type: 'string',
  format: 'email',
  maxLength: 254,
  errorHint: 'must be an email address of at most 254 characters',
};
const updateBody = object({
  name: { ...text(1, 100), type: ['string', 'null'], errorHint: 'must be a string of 1 to 100 characters, or null' },
  email: emailSchema,
});
const passwordBody = object(
  {
    password: text(8, 128),
    current_password: {
      type: 'string',
      minLength: 1,
      maxLength: 1024,
      errorHint: 'must be the password currently set',
    },
  },
  ['password'],
);

const userOrder = {
  fields: {
    created_at: (u: UserRecord) => u.created_at,
    email: (u: UserRecord) => u.email,
    name: (u: UserRecord) => (u.name ?? '').toLowerCase(),
  },
  defaultOrderBy: 'email',
  defaultSort: 'asc' as const,
};

/**
 * A user the caller may see: itself, or (with users:read) a member of the caller's team.
 * Anyone else answers 404.
 */
function requireVisibleUser(s: Pick<Services, 'accounts'>, p: Principal, userId: string): UserRecord {
  const user = s.accounts.getUser(userId);
  if (user && p.userId === userId) return user;
  if (!user || !p.teamId || !s.accounts.memberships.get(p.teamId, userId)) throw notFound(`User ${userId}`);
  requireScope(p.scopes, 'users:read');
  return user;
}

/** Only the signed-in user may change its own account. */
function requireSelf(s: Pick<Services, 'accounts'>, p: Principal, userId: string): UserRecord {
  const user = requireSessionUser(s.accounts, p);
  if (user.id !== userId) {
    requireVisibleUser(s, p, userId); // 404 for users the caller cannot see at all
    throw new ApiError('forbidden', 'Only the user themself can change their account');
  }
  return user;
}

/** Users (spec: Users, roles, team members — designed in docs/accounts.md). */
export function userRoutes(s: Pick<Services, 'accounts' | 'collections' | 'projects' | 'schema'>): RouteDef[] {
  return [
    listRoute<UserRecord>({
      path: '/v1/users',
      scope: 'users:read',
      summary: "List the users of the caller's team",
      order: userOrder,
      items: (ctx) => listMembers(s.accounts, ctx.principal.teamId).map((m) => m.user),
      serialize: serializeUser,
    }),
    defineRoute<unknown, unknown, UserParams>({
      method: 'GET',
      path: '/v1/users/:user_id',
      scope: 'authenticated',
      allowNoTeam: true,
      allowWhenTeamDeleted: true,
      summary: "Get a user: yourself, or (users:read) a member of the caller's team",
      schema: { params: params({ user_id: 'user' }) },
      handler: (ctx) => ({ data: serializeUser(requireVisibleUser(s, ctx.principal, ctx.params.user_id)) }),
    }),
    defineRoute<{ name?: string | null; email?: string }, unknown, UserParams>({
      method: 'POST',
      path: '/v1/users/:user_id',
      scope: 'authenticated',
      allowNoTeam: true,
      allowWhenTeamDeleted: true,
      allowWhenRestricted: true,
      summary: 'Change your own name or email (signed-in session only)',
      schema: { params: params({ user_id: 'user' }), body: updateBody },
      handler: async (ctx) => {
        const user = requireSelf(s, ctx.principal, ctx.params.user_id);
        if (ctx.body.name === undefined && ctx.body.email === undefined)
          throw invalidField('body', 'must contain name or email');
        const updated = await s.accounts.updateUser(user.id, ctx.body);
        if (!updated) throw notFound(`User ${user.id}`);
        return { data: serializeUser(updated) };
      },
    }),
    defineRoute<{ password: string; current_password?: string }, unknown, UserParams>({
      method: 'POST',
      path: '/v1/users/:user_id/enable_password',
      scope: 'authenticated',
      allowNoTeam: true,
      allowWhenTeamDeleted: true,
      allowWhenRestricted: true,
      summary: 'Set or change your own password; signs out your other sessions',
      schema: { params: params({ user_id: 'user' }), body: passwordBody },
      handler: async (ctx) => {
        const user = requireSelf(s, ctx.principal, ctx.params.user_id);
        if (user.password_hash) {
          if (ctx.body.current_password === undefined)
            throw invalidField('body.current_password', 'is required because the account already has a password');
          if (!(await verifyPassword(ctx.body.current_password, user.password_hash)))
            throw new ApiError('current_password_invalid');
        }
        const updated = await s.accounts.setPassword(user.id, ctx.body.password, ctx.principal.sessionId);
        if (!updated) throw notFound(`User ${user.id}`);
        return { data: serializeUser(updated) };
      },
    }),
    listRoute<TeamRecord, ListQuery, UserParams>({
      path: '/v1/users/:user_id/teams',
      scope: 'authenticated',
      access: { allowNoTeam: true, allowWhenTeamDeleted: true },
      summary: 'Teams of a user that the caller may also see (yourself: all your teams)',
      params: params({ user_id: 'user' }),
      order: teamOrder,
      items: (ctx) => {
        const p = ctx.principal;
        const user = requireVisibleUser(s, p, ctx.params.user_id);
        // Another user's teams are shown only where the caller could see the team anyway.
        return s.accounts.teamIdsOf(user.id).flatMap((id) => findTeamAccess(s.accounts, p, id)?.team ?? []);
      },
      serialize: (t) => serializeTeam(t, teamStorageGb(s, t.id)),
    }),
  ];
}
