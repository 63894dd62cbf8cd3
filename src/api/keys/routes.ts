import { ApiError, invalidField, notFound } from '../../errors.js';
import { hasScope, normalizeScopes, scopesNotHeld, scopesSchema, type Scopes } from '../../auth/scopes.js';
import { actorId } from '../../accounts/access.js';
import type { ApiKeyRecord } from '../../accounts/records.js';
import type { Services } from '../../services.js';
import { defineRoute, type Principal, type RouteDef } from '../http/route.js';
import { listRoute } from '../http/list-route.js';
import { object, params, text } from '../http/schemas.js';

type KeyParams = { key_id: string };

const scopes = { ...scopesSchema, errorHint: 'must map scope names to arrays of actions (read, write, delete)' };
const createBody = object({ name: text(2, 60), scopes }, ['name']);
const updateBody = object({ name: text(2, 60), scopes });

/** The key as the API shows it (spec: Key); never the secret or its hash. */
export function serializeKey(k: ApiKeyRecord) {
  return {
    object: 'key',
    id: k.id,
    last4: k.last4,
    created_at: k.created_at,
    updated_at: k.updated_at,
    scopes: k.scopes,
    team_id: k.team_id,
    name: k.name,
    updated_by: k.updated_by,
    last_used_at: k.last_used_at,
  };
}

/**
 * Spec: a caller may grant only scopes its own authorization has. `requested` minus what the
 * subject already holds must be held by the caller; otherwise 403 naming what is missing.
 */
export function assertMayGrant(caller: Principal, requested: Scopes, alreadyHeld: Scopes = {}): void {
  const added = normalizeScopes(
    Object.fromEntries(
      Object.entries(requested).map(([name, actions]) => [
        name,
        actions.filter((a) => !alreadyHeld[name as keyof Scopes]?.includes(a)),
      ]),
    ),
  );
  const missing = scopesNotHeld(caller.scopes, added);
  if (missing.length > 0) {
    throw new ApiError('forbidden', `You can grant only scopes you hold; you lack: ${missing.join(', ')}`, {
      details: { missing_scopes: missing },
    });
  }
}

function requireKey(s: Pick<Services, 'accounts'>, teamId: string, keyId: string): ApiKeyRecord {
  const key = s.accounts.getKey(teamId, keyId);
  if (!key) throw notFound(`API key ${keyId}`);
  return key;
}

/** API keys of the caller's team (spec: Endpoints › API keys). */
export function keyRoutes(s: Pick<Services, 'accounts'>): RouteDef[] {
  return [
    listRoute<ApiKeyRecord>({
      path: '/v1/keys',
      scope: 'keys:read',
      summary: 'List API keys of the team',
      order: {
        fields: { created_at: (k) => k.created_at, name: (k) => k.name.toLowerCase() },
        defaultOrderBy: 'created_at',
        defaultSort: 'desc',
      },
      items: (ctx) => s.accounts.listKeys(ctx.principal.teamId),
      serialize: serializeKey,
    }),
    defineRoute<unknown, unknown, KeyParams>({
      method: 'GET',
      path: '/v1/keys/:key_id',
      scope: 'keys:read',
      summary: 'Get an API key',
      schema: { params: params({ key_id: 'key' }) },
      handler: (ctx) => ({ data: serializeKey(requireKey(s, ctx.principal.teamId, ctx.params.key_id)) }),
    }),
    defineRoute<{ name: string; scopes?: Scopes }>({
      method: 'POST',
      path: '/v1/keys',
      scope: 'keys:write',
      summary: 'Create an API key; the secret (api_key) is returned only in this response',
      schema: { body: createBody },
      handler: async (ctx) => {
        const p = ctx.principal;
        // Omitted scopes: the caller's own, so a key never does more than its creator.
        const granted = normalizeScopes(ctx.body.scopes ?? p.scopes);
        assertMayGrant(p, granted);
        const { key, secret } = await s.accounts.createKey({
          teamId: p.teamId,
          name: ctx.body.name,
          scopes: granted,
          updatedBy: actorId(p),
        });
        return { status: 201, data: { ...serializeKey(key), api_key: secret } };
      },
    }),
    defineRoute<{ name?: string; scopes?: Scopes }, unknown, KeyParams>({
      method: 'POST',
      path: '/v1/keys/:key_id',
      scope: 'keys:write',
      summary: 'Rename an API key or change its scopes',
      schema: { params: params({ key_id: 'key' }), body: updateBody },
      handler: async (ctx) => {
        const p = ctx.principal;
        if (ctx.body.name === undefined && ctx.body.scopes === undefined)
          throw invalidField('body', 'must contain name or scopes');
        const current = requireKey(s, p.teamId, ctx.params.key_id);
        const scopes = ctx.body.scopes === undefined ? undefined : normalizeScopes(ctx.body.scopes);
        if (scopes) assertMayGrant(p, scopes, current.scopes);
        const updated = await s.accounts.updateKey(
          p.teamId,
          current.id,
          { ...(ctx.body.name !== undefined ? { name: ctx.body.name } : {}), ...(scopes ? { scopes } : {}) },
          actorId(p),
        );
        if (!updated) throw notFound(`API key ${current.id}`);
        return { data: serializeKey(updated) };
      },
    }),
    defineRoute<unknown, unknown, KeyParams>({
      method: 'DELETE',
      path: '/v1/keys/:key_id',
      // keys:delete, except that a key may always delete itself (checked below).
      scope: 'authenticated',
      // A key may delete itself (logout) even while the team is restricted; other deletions may not.
      allowWhenRestricted: true,
      summary: 'Delete an API key (needs keys:delete, except a key may always delete itself)',
      schema: { params: params({ key_id: 'key' }) },
      handler: async (ctx) => {
        const p = ctx.principal;
        const self = p.kind === 'key' && p.keyId === ctx.params.key_id;
        if (!self && !hasScope(p.scopes, 'keys:delete'))
          throw new ApiError(
            'forbidden',
            'This operation needs the keys:delete scope (a key may always delete itself)',
          );
        if (!self && s.accounts.getTeam(p.teamId)?.status === 'restricted') throw new ApiError('team_restricted');
        if (!(await s.accounts.deleteKey(p.teamId, ctx.params.key_id))) throw notFound(`API key ${ctx.params.key_id}`);
        return { data: null };
      },
    }),
  ];
}
