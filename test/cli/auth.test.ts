import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { BOOTSTRAP_KEY, TestServer } from '../helpers/server.js';
import { cliEnv, runCli } from './cli-helpers.js';

test('cli login with a key: stored under its profile in $XDG_CONFIG_HOME/sluice/config.json, mode 0600; whoami; logout deletes the key itself', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const c = cliEnv();
  t.after(c.cleanup);
  // A key of its own, with no keys:delete scope: logout still works (a key may always delete itself).
  const made = await srv.post('/v1/keys', { name: 'ci laptop', scopes: { projects: ['read'] } });
  assert.equal(made.status, 201);
  const key = made.body.data.api_key as string;

  const login = await runCli(['login', '--url', srv.url, '--profile', 'ci'], { env: c.env, input: `${key}\n` });
  assert.equal(login.code, 0, login.stderr);
  assert.match(login.stdout, /Signed in: API key "ci laptop"/);
  const path = join(c.configHome, 'sluice', 'config.json');
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.equal(statSync(join(c.configHome, 'sluice')).mode & 0o777, 0o700);
  const config = JSON.parse(readFileSync(path, 'utf8'));
  assert.equal(config.default_profile, 'ci', 'the first profile becomes the default');
  assert.deepEqual(
    { ...config.profiles.ci },
    { url: srv.url, api_key: key, key_id: made.body.data.id, team_id: made.body.data.team_id },
  );

  const who = await runCli(['whoami', '--json'], { env: c.env });
  assert.equal(who.code, 0, who.stderr);
  const me = JSON.parse(who.stdout);
  assert.equal(me.key_id, made.body.data.id);
  assert.equal(me.profile, 'ci');
  assert.deepEqual(me.scopes, { projects: ['read'] });

  const out = await runCli(['logout'], { env: c.env });
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /the key was deleted on the server/);
  assert.equal((await srv.get(`/v1/keys/${made.body.data.id}`)).status, 404, 'the key deleted itself');
  assert.equal(JSON.parse(readFileSync(path, 'utf8')).profiles.ci.api_key, undefined, 'and is gone from the config');

  const after = await runCli(['whoami'], { env: c.env });
  assert.equal(after.code, 1);
  assert.match(after.stderr, /Not signed in/);
});

test('cli login with email and password creates a key named after the machine and ends the session', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const c = cliEnv();
  t.after(c.cleanup);
  const login = await runCli(['login', '--url', srv.url, '--email', 'admin@localhost', '--json'], {
    env: c.env,
    input: 'admin-password\n',
  });
  assert.equal(login.code, 0, login.stderr);
  const me = JSON.parse(login.stdout);
  assert.equal(me.kind, 'key');
  assert.equal(me.profile, 'default');
  const key = (await srv.get(`/v1/keys/${me.key_id}`)).body.data;
  assert.equal(key.name, `sluice cli on ${hostname()}`.slice(0, 60));

  const wrong = await runCli(['login', '--url', srv.url, '--profile', 'other', '--email', 'admin@localhost'], {
    env: c.env,
    input: 'not-the-password\n',
  });
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /key refused|auth_invalid_credentials/);
});

test('cli: a bad key is "not signed in / key refused", exit 1; SLUICE_URL and SLUICE_API_KEY work without a config', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const c = cliEnv();
  t.after(c.cleanup);
  const bad = await runCli(['projects', 'list'], {
    env: { ...c.env, SLUICE_URL: srv.url, SLUICE_API_KEY: 'slk_not_a_key' },
  });
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /Not signed in or key refused \(auth_invalid_credentials\)/);
  const badJson = await runCli(['projects', 'list', '--json'], {
    env: { ...c.env, SLUICE_URL: srv.url, SLUICE_API_KEY: 'slk_not_a_key' },
  });
  assert.equal(JSON.parse(badJson.stdout).error.code, 'auth_invalid_credentials');

  const good = await runCli(['whoami', '--json'], {
    env: { ...c.env, SLUICE_URL: srv.url, SLUICE_API_KEY: BOOTSTRAP_KEY },
  });
  assert.equal(good.code, 0, good.stderr);
  assert.equal(JSON.parse(good.stdout).url, srv.url);

  const none = await runCli(['whoami'], { env: { ...c.env, SLUICE_URL: srv.url } });
  assert.equal(none.code, 1);
  assert.match(none.stderr, /Not signed in: run `sluice login`/);

  const gone = await runCli(['whoami'], {
    env: { ...c.env, SLUICE_URL: 'http://127.0.0.1:9', SLUICE_API_KEY: BOOTSTRAP_KEY },
  });
  assert.equal(gone.code, 1);
  assert.match(gone.stderr, /Cannot reach http:\/\/127\.0\.0\.1:9/);
});

test('cli usage: unknown commands and flags exit 2 with usage; --help on every command has examples, exit 0', async (t) => {
  const c = cliEnv();
  t.after(c.cleanup);
  const unknown = await runCli(['frobnicate'], { env: c.env });
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command 'frobnicate'/);
  const flag = await runCli(['projects', 'list', '--frob'], { env: c.env });
  assert.equal(flag.code, 2);
  assert.match(flag.stderr, /unknown option '--frob'/);
  const missing = await runCli(['ingest'], { env: c.env });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /missing required argument 'file'/);
  const badValue = await runCli(['ingest', 'x.ndjson', '--concurrency', '0', '--ingest-key', 'k'], { env: c.env });
  assert.equal(badValue.code, 2);
  assert.match(badValue.stderr, /--concurrency must be an integer/);
  for (const args of [[], ['login'], ['ingest'], ['query'], ['tail'], ['pulls'], ['monitors', 'create']]) {
    const help = await runCli([...args, '--help'], { env: c.env });
    assert.equal(help.code, 0, `${args.join(' ')} --help: ${help.stderr}`);
    assert.match(help.stdout, /Examples:\n {2}\$ sluice/, `${args.join(' ')} --help shows examples`);
  }
});
