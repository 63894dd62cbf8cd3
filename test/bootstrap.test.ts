import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChild } from './helpers/child.js';

test('first start bootstraps an owner, a team and a key; later starts keep them; SIGTERM exits 0', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-boot-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = {
    SLUICE_DATA_DIR: dataDir,
    SLUICE_BOOTSTRAP_KEY: 'my-own-bootstrap-secret',
    SLUICE_ADMIN_EMAIL: 'Owner@Example.com',
  };

  const first = await startChild(env);
  t.after(() => first.proc.kill('SIGKILL'));
  const file = join(dataDir, 'bootstrap.json');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const creds = JSON.parse(readFileSync(file, 'utf8'));
  assert.deepEqual(Object.keys(creds).sort(), ['api_key', 'email', 'password', 'team_id', 'user_id']);
  assert.equal(creds.api_key, 'my-own-bootstrap-secret');
  assert.equal(creds.email, 'owner@example.com');
  assert.ok(creds.password.length >= 16, 'a generated password');
  assert.match(first.stdout(), /my-own-bootstrap-secret/, 'credentials are printed once');

  const auth = { authorization: 'Bearer my-own-bootstrap-secret', 'content-type': 'application/json' };
  assert.equal((await fetch(first.url + '/healthz')).status, 200);
  const created = await fetch(first.url + '/v1/projects', {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ name: 'Survivor' }),
  });
  assert.equal(created.status, 201);
  // Sign in with the printed password.
  const session = await fetch(first.url + '/v1/sessions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: creds.email, password: creds.password }),
  });
  assert.equal(session.status, 201);
  const token = ((await session.json()) as any).data.token as string;
  const asOwner = await fetch(first.url + '/v1/projects', { headers: { authorization: `Bearer ${token}` } });
  assert.equal(asOwner.status, 200, 'the printed password signs in and the session acts in the bootstrap team');

  first.proc.kill('SIGTERM');
  assert.equal(await first.exited, 0);

  const second = await startChild(env);
  t.after(() => second.proc.kill('SIGKILL'));
  assert.doesNotMatch(second.stdout(), /my-own-bootstrap-secret/, 'no second bootstrap');
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), creds);
  const list = (await (await fetch(second.url + '/v1/projects', { headers: auth })).json()) as any;
  assert.deepEqual(
    list.data.map((p: any) => p.name),
    ['Survivor'],
  );
  second.proc.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});
