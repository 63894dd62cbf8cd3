import assert from 'node:assert/strict';
import type { TestServer } from '../helpers/server.js';

export const ADMIN_EMAIL = 'admin@localhost';
export const ADMIN_PASSWORD = 'admin-password';

/** A 1×1 PNG as a data URI. */
export const PNG_DATA_URI =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
/** JPEG magic bytes, enough to pass the format check. */
export const JPEG_DATA_URI =
  'data:image/jpeg;base64,' + Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46]).toString('base64');

/** Sign in and return the session token. */
export async function signIn(srv: TestServer, email = ADMIN_EMAIL, password = ADMIN_PASSWORD): Promise<string> {
  const r = await srv.post('/v1/sessions', { email, password }, { token: null });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.data.token;
}

/** Create an API key with `scopes` (by default with the bootstrap key) and return its id and secret. */
export async function createKey(
  srv: TestServer,
  scopes: Record<string, string[]>,
  opts: { token?: string; team?: string; name?: string } = {},
): Promise<{ id: string; secret: string }> {
  const r = await srv.post(
    '/v1/keys',
    { name: opts.name ?? 'test key', scopes },
    { ...(opts.token ? { token: opts.token } : {}), ...(opts.team ? { headers: { 'x-team-id': opts.team } } : {}) },
  );
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return { id: r.body.data.id, secret: r.body.data.api_key };
}

/** Invite `email` into the caller's team, set a password with the invite token, sign in. */
export async function inviteAndSignIn(
  srv: TestServer,
  teamId: string,
  email: string,
  opts: { token?: string; roleId?: string } = {},
): Promise<{ userId: string; token: string }> {
  const invite = await srv.post(
    `/v1/teams/${teamId}/users`,
    { email, ...(opts.roleId ? { role_id: opts.roleId } : {}) },
    { ...(opts.token ? { token: opts.token, headers: { 'x-team-id': teamId } } : {}) },
  );
  assert.equal(invite.status, 201, JSON.stringify(invite.body));
  const userId = invite.body.data.id;
  const set = await srv.post(
    `/v1/users/${userId}/enable_password`,
    { password: 'member-password' },
    { token: invite.body.data.invite_token },
  );
  assert.equal(set.status, 200, JSON.stringify(set.body));
  return { userId, token: await signIn(srv, email, 'member-password') };
}

/** Assert an error envelope with `status` and `code`; returns the error. */
export function assertError(r: { status: number; body: any }, status: number, code: string, field?: string): any {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.error?.code, code, JSON.stringify(r.body));
  assert.equal(r.body.data, null);
  if (field)
    assert.ok(
      r.body.error.details?.some((d: any) => d.field === field),
      `expected a detail for ${field}: ${JSON.stringify(r.body.error)}`,
    );
  return r.body.error;
}

/** Wait until `fn` returns a truthy value (async LMDB commits), or fail after `ms`. */
export async function eventually<T>(fn: () => Promise<T>, ms = 2000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > until) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
}
