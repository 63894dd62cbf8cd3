import { iso } from '../../clock.js';
import { ApiError, notFound } from '../../errors.js';
import { BILLING_PLANS, TEAM_STATUSES, type TeamRecord } from '../../accounts/records.js';
import { findTeamAccess, requireScope, requireSessionUser, requireTeamAccess } from '../../accounts/access.js';
import type { Services } from '../../services.js';
import type { Principal } from '../http/route.js';
import { listRoute } from '../http/list-route.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import type { ListQuery } from '../http/pagination.js';
import { filterParamSchema, parseFilter, parseNullableDateFilter } from '../http/filters.js';
import { params } from '../http/schemas.js';
import { billingSummary } from './billing.js';
import { assertValidLogo } from './logo.js';
import { serializeTeam } from './serialize.js';
import { teamStorageGb } from '../../schema/storage-stats.js';
import { validateTeamUpdate, type TeamChange } from './update-rules.js';
import {
  MAX_TEAMS_CREATED_PER_USER,
  TEAM_BODY_LIMIT_BYTES,
  assertBillingEmailAllowed,
  createBody,
  updateBody,
  type TeamCreateBody,
  type TeamUpdateBody,
} from './schemas.js';

type TeamParams = { team_id: string };
type TeamListQuery = ListQuery & {
  name?: string;
  status?: string;
  billing_plan?: string;
  created_at?: string;
  deleted_at?: string;
};

/** Teams the caller may see: a key its own team, a session its user's teams (scheduled ones to Owners). */
export function visibleTeams(s: Pick<Services, 'accounts'>, p: Principal): TeamRecord[] {
  const ids = p.kind === 'key' ? [p.teamId] : p.userId ? s.accounts.teamIdsOf(p.userId) : [];
  return ids.flatMap((id) => findTeamAccess(s.accounts, p, id)?.team ?? []);
}

/** The order of team lists (spec: order_by created_at|name, default name, sort default desc). */
export const teamOrder = {
  fields: { created_at: (t: TeamRecord) => t.created_at, name: (t: TeamRecord) => t.name.toLowerCase() },
  defaultOrderBy: 'name',
  defaultSort: 'desc' as const,
};

/** Teams (spec: Endpoints › Teams). */
export function teamRoutes(
  s: Pick<Services, 'accounts' | 'clock' | 'collections' | 'projects' | 'schema'>,
): RouteDef[] {
  const show = (t: TeamRecord) => serializeTeam(t, teamStorageGb(s, t.id));
  return [
    listRoute<TeamRecord, TeamListQuery>({
      path: '/v1/teams',
      scope: 'authenticated',
      access: { allowNoTeam: true, allowWhenTeamDeleted: true },
      summary: 'List the teams the caller may see',
      filters: {
        name: filterParamSchema,
        status: filterParamSchema,
        billing_plan: filterParamSchema,
        created_at: filterParamSchema,
        deleted_at: filterParamSchema,
      },
      order: teamOrder,
      serialize: show,
      items: (ctx) => {
        const q = ctx.query;
        const checks: ((t: TeamRecord) => boolean)[] = [];
        if (q.name !== undefined) {
          const f = parseFilter('name', q.name, 'text');
          checks.push((t) => f(t.name));
        }
        if (q.status !== undefined) {
          const f = parseFilter('status', q.status, 'enum', TEAM_STATUSES);
          checks.push((t) => f(t.status));
        }
        if (q.billing_plan !== undefined) {
          const f = parseFilter('billing_plan', q.billing_plan, 'enum', BILLING_PLANS);
          checks.push((t) => f(t.billing_plan));
        }
        if (q.created_at !== undefined) {
          const f = parseFilter('created_at', q.created_at, 'date');
          checks.push((t) => f(t.created_at));
        }
        const deleted = parseNullableDateFilter('deleted_at', q.deleted_at);
        checks.push((t) => deleted(t.deleted_at));
        return visibleTeams(s, ctx.principal).filter((t) => checks.every((c) => c(t)));
      },
    }),
    defineRoute<unknown, unknown, TeamParams>({
      method: 'GET',
      path: '/v1/teams/:team_id',
      scope: 'authenticated',
      allowNoTeam: true,
      allowWhenTeamDeleted: true,
      summary: 'Get a team',
      schema: { params: params({ team_id: 'team' }) },
      handler: (ctx) => ({ data: show(requireTeamAccess(s.accounts, ctx.principal, ctx.params.team_id).team) }),
    }),
    defineRoute<unknown, unknown, TeamParams>({
      method: 'GET',
      path: '/v1/teams/:team_id/billing',
      scope: 'billing:read',
      summary: 'Billing summary of the current calendar month (consumes nothing, creates no invoice)',
      schema: { params: params({ team_id: 'team' }) },
      handler: (ctx) => {
        const access = requireTeamAccess(s.accounts, ctx.principal, ctx.params.team_id);
        // The route's scope was checked in the current team; a session may name another of its teams.
        requireScope(access.scopes, 'billing:read');
        return { data: billingSummary(access.team, s.clock.now(), 0) };
      },
    }),
    defineRoute<TeamCreateBody>({
      method: 'POST',
      path: '/v1/teams',
      scope: 'authenticated',
      allowNoTeam: true,
      allowWhenTeamDeleted: true,
      allowWhenRestricted: true,
      maxBodyBytes: TEAM_BODY_LIMIT_BYTES,
      summary: 'Create a team (signed-in session only); the creator becomes its Owner',
      schema: { body: createBody },
      handler: async (ctx) => {
        const user = requireSessionUser(s.accounts, ctx.principal);
        const b = ctx.body;
        // billing_plan, status, logo_url, is_mfa_required, billing_address and
        // max_servers_per_project are ignored on create (spec); the logo is still checked.
        if (b.logo_url !== undefined) assertValidLogo('body.logo_url', b.logo_url);
        const billingEmail = b.billing_email ?? user.email;
        assertBillingEmailAllowed(
          b.billing_email !== undefined ? 'body.billing_email' : 'body.billing_email (defaulted to your email)',
          billingEmail,
        );
        const team = await s.accounts.createTeam({
          name: b.name ?? 'Team',
          billing_email: billingEmail,
          ownerUserId: user.id,
          maxCreatedByOwner: MAX_TEAMS_CREATED_PER_USER,
        });
        return { status: 201, data: show(team) };
      },
    }),
    defineRoute<TeamUpdateBody, unknown, TeamParams>({
      method: 'POST',
      path: '/v1/teams/:team_id',
      scope: 'authenticated',
      allowNoTeam: true,
      allowWhenTeamDeleted: true,
      // Restricted teams may still change billing fields to recover; update-rules enforces the rest.
      allowWhenRestricted: true,
      maxBodyBytes: TEAM_BODY_LIMIT_BYTES,
      summary: 'Update a team (signed-in session only; Owners for billing, security and account settings)',
      schema: { params: params({ team_id: 'team' }), body: updateBody },
      handler: async (ctx) => {
        requireSessionUser(s.accounts, ctx.principal);
        const access = requireTeamAccess(s.accounts, ctx.principal, ctx.params.team_id);
        const change = validateTeamUpdate(access, ctx.body);
        const updated = await s.accounts.updateTeam(access.team.id, (current) => {
          // Re-check the optimistic status guard against the committed state.
          if (ctx.body.expected_status !== undefined && current.status !== ctx.body.expected_status) {
            throw new ApiError(
              'conflict',
              `The team status is ${current.status}, not ${ctx.body.expected_status}; reload and retry`,
            );
          }
          return applyChange(current, change);
        });
        if (!updated) throw notFound(`Team ${access.team.id}`);
        return { data: show(updated) };
      },
    }),
    defineRoute<unknown, unknown, TeamParams>({
      method: 'DELETE',
      path: '/v1/teams/:team_id',
      scope: 'authenticated',
      allowNoTeam: true,
      allowWhenTeamDeleted: true,
      // The team named in the path is checked below, not the caller's current team.
      allowWhenRestricted: true,
      summary: 'Schedule a team for deletion (Owners, signed-in session only)',
      schema: { params: params({ team_id: 'team' }) },
      handler: async (ctx) => {
        requireSessionUser(s.accounts, ctx.principal);
        const access = requireTeamAccess(s.accounts, ctx.principal, ctx.params.team_id);
        if (!access.isOwner) throw new ApiError('owner_required', 'Only team Owners may delete the team');
        if (access.team.status === 'restricted')
          throw new ApiError(
            'team_restricted',
            'The team is restricted: it is read-only apart from billing fields, so it cannot be deleted now',
          );
        if (!access.team.deleted_at)
          await s.accounts.updateTeam(access.team.id, () => ({ deleted_at: iso(s.clock.now()) }));
        return { data: null };
      },
    }),
  ];
}

/** A validated team change: the fields to write, billing address merged into the current one. */

function applyChange(current: TeamRecord, change: TeamChange): Partial<TeamRecord> {
  const { billing_address, ...rest } = change;
  return {
    ...rest,
    ...(billing_address ? { billing_address: { ...current.billing_address, ...billing_address } } : {}),
  };
}
