import type { Services } from '../../services.js';
import { defineRoute, type RouteDef } from '../http/route.js';

/**
 * `GET /v1/whoami`: who the credential is (not in the spec; docs/cli.md). Any valid key or session may
 * ask, whatever its scopes: a client needs its own key id to log out (a key may always delete itself)
 * and a person needs to see which team and scopes a stored key acts with.
 */
export function whoamiRoutes(s: Pick<Services, 'accounts'>): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/whoami',
      scope: 'authenticated',
      allowWhenRestricted: true,
      allowNoTeam: true,
      summary: 'The calling key or session: its kind, id, team, user and scopes',
      handler: (ctx) => {
        const p = ctx.principal;
        const key = p.keyId ? s.accounts.getKey(p.teamId, p.keyId) : undefined;
        const user = p.userId ? s.accounts.getUser(p.userId) : undefined;
        return {
          data: {
            object: 'whoami',
            kind: p.kind,
            team_id: p.teamId || null,
            key_id: p.keyId,
            key_name: key?.name ?? null,
            user_id: p.userId,
            email: user?.email ?? null,
            scopes: p.scopes,
          },
        };
      },
    }),
  ];
}
