import assert from 'node:assert/strict';
import type { ApiResponse, TestServer } from '../helpers/server.js';
import { allScopes } from '../../src/auth/scopes.js';

/** Assert a success status and return `data`. */
export function ok<T = any>(res: ApiResponse<T>, status = 200): T {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${JSON.stringify(res.body.error)}`);
  assert.equal(res.body.error, null);
  assert.equal(res.body.status, status);
  return res.body.data;
}

/** Assert an error envelope with `code`; when `field` is given, error.details must name it. */
export function fails(res: ApiResponse, status: number, code: string, field?: string): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.error?.code, code);
  assert.equal(res.body.data, null);
  if (field) {
    const fields = (res.body.error?.details ?? []).map((d: { field: string }) => d.field);
    assert.ok(fields.includes(field), `details should name ${field}: ${JSON.stringify(res.body.error)}`);
  }
}

export async function createProject(srv: TestServer, name = 'Shop'): Promise<any> {
  return ok(await srv.post('/v1/projects', { name }), 201);
}

export async function createSource(srv: TestServer, projectId: string, name: string): Promise<any> {
  return ok(await srv.post(`/v1/projects/${projectId}/sources`, { name }), 201);
}

/** A second team with its own all-scope API key; returns the key's secret. */
export async function otherTeamToken(srv: TestServer): Promise<string> {
  const accounts = srv.sluice.services.accounts;
  const user = await accounts.createUser({
    email: `other-${Date.now()}-${Math.random()}@example.com`,
    name: 'Other',
    password: 'other-password',
  });
  const team = await accounts.createTeam({ name: 'Other', billing_email: user.email, ownerUserId: user.id });
  const { secret } = await accounts.createKey({
    teamId: team.id,
    name: 'Other key',
    scopes: allScopes(),
    updatedBy: user.id,
  });
  return secret;
}

/** A key of the bootstrap team with only the given scopes. */
export async function scopedToken(srv: TestServer, scopes: Record<string, string[]>): Promise<string> {
  const accounts = srv.sluice.services.accounts;
  const teamId = srv.sluice.bootstrap?.team_id ?? [...accounts.teams.all()][0]!.value.id;
  const { secret } = await accounts.createKey({ teamId, name: 'Scoped', scopes: scopes as any, updatedBy: null });
  return secret;
}
