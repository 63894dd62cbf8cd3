import { invalidField, notFound } from '../../errors.js';
import { normalizeScopes, scopesSchema, type Scopes } from '../../auth/scopes.js';
import { createRole, deleteRole, updateRole } from '../../accounts/roles.js';
import type { RoleRecord } from '../../accounts/records.js';
import type { Services } from '../../services.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { listRoute } from '../http/list-route.js';
import { object, params, text } from '../http/schemas.js';
import { assertMayGrant } from '../keys/routes.js';

type RoleParams = { role_id: string };
type RoleBody = { name?: string; description?: string | null; scopes?: Scopes };

const scopes = { ...scopesSchema, errorHint: 'must map scope names to arrays of actions (read, write, delete)' };
const description = {
  type: ['string', 'null'],
  maxLength: 500,
  errorHint: 'must be a string of at most 500 characters, or null',
};
const createBody = object({ name: text(1, 60), description, scopes }, ['name', 'scopes']);
const updateBody = object({ name: text(1, 60), description, scopes });

/** A role as the API shows it; `builtin` is `owner` or `member` for the two built-in roles, else null. */
export function serializeRole(s: Pick<Services, 'accounts'>, r: RoleRecord) {
  return {
    object: 'role',
    id: r.id,
    team_id: r.team_id,
    name: r.name,
    description: r.description,
    scopes: r.scopes,
    builtin: r.builtin,
    members_count: s.accounts.memberships.list(r.team_id).filter((m) => m.role_id === r.id).length,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

function requireRole(s: Pick<Services, 'accounts'>, teamId: string, roleId: string): RoleRecord {
  const role = s.accounts.roles.get(teamId, roleId);
  if (!role) throw notFound(`Role ${roleId}`);
  return role;
}

/** Roles of the caller's team (designed in docs/accounts.md). */
export function roleRoutes(s: Pick<Services, 'accounts'>): RouteDef[] {
  return [
    listRoute<RoleRecord>({
      path: '/v1/roles',
      scope: 'roles:read',
      summary: 'List the roles of the team, built-in ones included',
      order: {
        fields: { created_at: (r) => r.created_at, name: (r) => r.name.toLowerCase() },
        defaultOrderBy: 'name',
        defaultSort: 'asc',
      },
      items: (ctx) => s.accounts.roles.list(ctx.principal.teamId),
      serialize: (r) => serializeRole(s, r),
    }),
    defineRoute<unknown, unknown, RoleParams>({
      method: 'GET',
      path: '/v1/roles/:role_id',
      scope: 'roles:read',
      summary: 'Get a role',
      schema: { params: params({ role_id: 'role' }) },
      handler: (ctx) => ({ data: serializeRole(s, requireRole(s, ctx.principal.teamId, ctx.params.role_id)) }),
    }),
    defineRoute<Required<Pick<RoleBody, 'name' | 'scopes'>> & RoleBody>({
      method: 'POST',
      path: '/v1/roles',
      scope: 'roles:write',
      summary: 'Create a custom role',
      schema: { body: createBody },
      handler: async (ctx) => {
        const granted = normalizeScopes(ctx.body.scopes);
        assertMayGrant(ctx.principal, granted);
        const role = await createRole(s.accounts, ctx.principal.teamId, {
          name: ctx.body.name,
          description: ctx.body.description ?? null,
          scopes: granted,
        });
        return { status: 201, data: serializeRole(s, role) };
      },
    }),
    defineRoute<RoleBody, unknown, RoleParams>({
      method: 'POST',
      path: '/v1/roles/:role_id',
      scope: 'roles:write',
      summary: 'Change a custom role (built-in roles cannot change)',
      schema: { params: params({ role_id: 'role' }), body: updateBody },
      handler: async (ctx) => {
        const teamId = ctx.principal.teamId;
        const b = ctx.body;
        if (b.name === undefined && b.description === undefined && b.scopes === undefined)
          throw invalidField('body', 'must contain name, description or scopes');
        const current = requireRole(s, teamId, ctx.params.role_id);
        const granted = b.scopes === undefined ? undefined : normalizeScopes(b.scopes);
        if (granted && !current.builtin) assertMayGrant(ctx.principal, granted, current.scopes);
        const updated = await updateRole(s.accounts, teamId, current.id, {
          ...(b.name !== undefined ? { name: b.name } : {}),
          ...(b.description !== undefined ? { description: b.description } : {}),
          ...(granted ? { scopes: granted } : {}),
        });
        if (!updated) throw notFound(`Role ${current.id}`);
        return { data: serializeRole(s, updated) };
      },
    }),
    defineRoute<unknown, unknown, RoleParams>({
      method: 'DELETE',
      path: '/v1/roles/:role_id',
      scope: 'roles:delete',
      summary: 'Delete a custom role no member holds',
      schema: { params: params({ role_id: 'role' }) },
      handler: async (ctx) => {
        if (!(await deleteRole(s.accounts, ctx.principal.teamId, ctx.params.role_id)))
          throw notFound(`Role ${ctx.params.role_id}`);
        return { data: null };
      },
    }),
  ];
}
