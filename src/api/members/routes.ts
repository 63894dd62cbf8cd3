import { ApiError, invalidField, notFound } from '../../errors.js';
import { hasScope } from '../../auth/scopes.js';
import {
  changeMemberRole,
  getMember,
  inviteMember,
  listMembers,
  removeMember,
  type MemberView,
} from '../../accounts/memberships.js';
import type { RoleRecord } from '../../accounts/records.js';
import type { Services } from '../../services.js';
import { idSchema } from '../../ids.js';
import { listRoute } from '../http/list-route.js';
import { defineRoute, type Principal, type RouteDef } from '../http/route.js';
import type { ListQuery } from '../http/pagination.js';
import { object, params, text } from '../http/schemas.js';
import { assertMayGrant } from '../keys/routes.js';
import { emailSchema } from '../users/routes.js';
import { serializeMember } from '../users/serialize.js';

type TeamParams = { team_id: string };
type MemberParams = TeamParams & { user_id: string };

const inviteBody = object({ email: emailSchema, role_id: idSchema('role'), name: text(1, 100) }, ['email']);
const changeBody = object({ role_id: idSchema('role') }, ['role_id']);

const memberOrder = {
  fields: {
    joined_at: (m: MemberView & { id: string }) => m.membership.created_at,
    email: (m: MemberView & { id: string }) => m.user.email,
    name: (m: MemberView & { id: string }) => (m.user.name ?? '').toLowerCase(),
  },
  defaultOrderBy: 'joined_at',
  defaultSort: 'asc' as const,
};

/** Member endpoints act only in the caller's current team; any other team id answers 404. */
function requireCurrentTeam(p: Principal, teamId: string): void {
  if (p.teamId !== teamId) throw notFound(`Team ${teamId}`);
}

function requireMember(s: Pick<Services, 'accounts'>, teamId: string, userId: string): MemberView {
  const m = getMember(s.accounts, teamId, userId);
  if (!m) throw notFound(`Member ${userId}`);
  return m;
}

function requireRole(s: Pick<Services, 'accounts'>, teamId: string, roleId: string): RoleRecord {
  const role = s.accounts.roles.get(teamId, roleId);
  if (!role)
    throw invalidField('body.role_id', `names no role of this team (${roleId}); list roles with GET /v1/roles`);
  return role;
}

/**
 * Giving someone a role grants its scopes: the caller must hold them, and only Owners may hand
 * out (or take away) the Owner role.
 */
function assertMayAssign(p: Principal, role: RoleRecord, previous: RoleRecord | undefined): void {
  if ((role.builtin === 'owner' || previous?.builtin === 'owner') && !p.isOwner) {
    throw new ApiError('owner_required', 'Only team Owners may assign or remove the Owner role');
  }
  assertMayGrant(p, role.scopes);
}

/** Team members (designed in docs/accounts.md). */
export function memberRoutes(s: Pick<Services, 'accounts'>): RouteDef[] {
  return [
    listRoute<MemberView & { id: string }, ListQuery, TeamParams>({
      path: '/v1/teams/:team_id/users',
      scope: 'users:read',
      summary: 'List the members of the team with their roles',
      params: params({ team_id: 'team' }),
      order: memberOrder,
      items: (ctx) => {
        requireCurrentTeam(ctx.principal, ctx.params.team_id);
        return listMembers(s.accounts, ctx.params.team_id).map((m) => ({ ...m, id: m.user.id }));
      },
      serialize: serializeMember,
    }),
    defineRoute<unknown, unknown, MemberParams>({
      method: 'GET',
      path: '/v1/teams/:team_id/users/:user_id',
      scope: 'users:read',
      summary: 'Get a member of the team',
      schema: { params: params({ team_id: 'team', user_id: 'user' }) },
      handler: (ctx) => {
        requireCurrentTeam(ctx.principal, ctx.params.team_id);
        return { data: serializeMember(requireMember(s, ctx.params.team_id, ctx.params.user_id)) };
      },
    }),
    defineRoute<{ email: string; role_id?: string; name?: string }, unknown, TeamParams>({
      method: 'POST',
      path: '/v1/teams/:team_id/users',
      scope: 'users:write',
      summary: 'Invite a user by email (created without a password if new) and add them to the team',
      schema: { params: params({ team_id: 'team' }), body: inviteBody },
      handler: async (ctx) => {
        const p = ctx.principal;
        const teamId = ctx.params.team_id;
        requireCurrentTeam(p, teamId);
        const role = ctx.body.role_id
          ? requireRole(s, teamId, ctx.body.role_id)
          : s.accounts.builtinRole(teamId, 'member');
        if (!role) throw new ApiError('server_error', 'The team has no Member role');
        assertMayAssign(p, role, undefined);
        const { member, inviteToken, inviteExpiresAt } = await inviteMember(s.accounts, {
          teamId,
          email: ctx.body.email,
          name: ctx.body.name ?? null,
          roleId: role.id,
        });
        return {
          status: 201,
          data: { ...serializeMember(member), invite_token: inviteToken, invite_expires_at: inviteExpiresAt },
        };
      },
    }),
    defineRoute<{ role_id: string }, unknown, MemberParams>({
      method: 'POST',
      path: '/v1/teams/:team_id/users/:user_id',
      scope: 'users:write',
      summary: "Change a member's role",
      schema: { params: params({ team_id: 'team', user_id: 'user' }), body: changeBody },
      handler: async (ctx) => {
        const p = ctx.principal;
        const { team_id: teamId, user_id: userId } = ctx.params;
        requireCurrentTeam(p, teamId);
        const current = requireMember(s, teamId, userId);
        const role = requireRole(s, teamId, ctx.body.role_id);
        assertMayAssign(p, role, current.role);
        const updated = await changeMemberRole(s.accounts, teamId, userId, role.id);
        if (!updated) throw notFound(`Member ${userId}`);
        return { data: serializeMember({ membership: updated, user: current.user, role }) };
      },
    }),
    defineRoute<unknown, unknown, MemberParams>({
      method: 'DELETE',
      path: '/v1/teams/:team_id/users/:user_id',
      // users:delete, except that a signed-in user may always leave a team (checked below).
      scope: 'authenticated',
      summary: 'Remove a member from the team (users:delete; anyone may remove themself)',
      schema: { params: params({ team_id: 'team', user_id: 'user' }) },
      handler: async (ctx) => {
        const p = ctx.principal;
        const { team_id: teamId, user_id: userId } = ctx.params;
        requireCurrentTeam(p, teamId);
        const self = p.userId === userId;
        if (!self && !hasScope(p.scopes, 'users:delete'))
          throw new ApiError('forbidden', 'This operation needs the users:delete scope (anyone may remove themself)');
        const current = requireMember(s, teamId, userId);
        if (!self && current.role?.builtin === 'owner' && !p.isOwner)
          throw new ApiError('owner_required', 'Only team Owners may remove an Owner');
        if (!(await removeMember(s.accounts, teamId, userId))) throw notFound(`Member ${userId}`);
        return { data: null };
      },
    }),
  ];
}
