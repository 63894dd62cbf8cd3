import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BOOTSTRAP_KEY, TestServer } from '../helpers/server.js';
import { cliEnv, runCli, type CliEnv } from './cli-helpers.js';
import { IngestProxy } from './ingest-proxy.js';

/** A server without the pipeline: what was accepted stays in the spool, counted exactly. */
async function setup(t: { after(fn: () => unknown): void }) {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const c = cliEnv();
  t.after(c.cleanup);
  const project = (await srv.post('/v1/projects', { name: 'Shop' })).body.data;
  const source = (await srv.post(`/v1/projects/${project.id}/sources`, { name: 'web' })).body.data;
  const stored = () => srv.sluice.services.spool.pendingRecords(project.id);
  return { srv, c, project, source, stored };
}

async function login(c: CliEnv, url: string, project: string): Promise<void> {
  const r = await runCli(['login', '--url', url], { env: c.env, input: `${BOOTSTRAP_KEY}\n` });
  assert.equal(r.code, 0, r.stderr);
  const use = await runCli(['projects', 'use', project], { env: c.env });
  assert.equal(use.code, 0, use.stderr);
}

function lines(n: number, bad: Record<number, string> = {}): string {
  let out = '';
  for (let i = 1; i <= n; i++) out += (bad[i] ?? JSON.stringify({ i, path: `/p${i % 5}` })) + '\n';
  return out;
}

test('cli ingest: invalid lines are reported by line number and the good lines still go in (exit 1); --atomic sends nothing', async (t) => {
  const { srv, c, project, source, stored } = await setup(t);
  await login(c, srv.url, project.id);
  const file = join(c.configHome, 'events.ndjson');
  writeFileSync(file, lines(1200, { 7: 'not json', 500: '[1,2]', 1100: '{"timestamp":"2026-02-30","x":1}' }) + '\n\n');

  const atomic = await runCli(['ingest', file, '--source', 'web', '--collection', 'events', '--atomic', '--json'], {
    env: c.env,
  });
  assert.equal(atomic.code, 1);
  const a = JSON.parse(atomic.stdout);
  assert.deepEqual(
    a.refusals.map((r: { line: number }) => r.line),
    [7, 500, 1100],
  );
  assert.equal(a.accepted, 0);
  assert.match(atomic.stderr, /3 invalid record\(s\): nothing was sent \(--atomic\)/);
  assert.equal(stored(), 0, 'nothing stored');

  const run = await runCli(
    ['ingest', file, '--source', source.id, '--collection', 'events', '--batch-records', '250'],
    { env: c.env },
  );
  assert.equal(run.code, 1, 'refused records: exit 1');
  assert.match(run.stdout, /^1197 records accepted, 3 refused \(5 batches/);
  assert.match(run.stdout, /line 7: not valid JSON/);
  assert.match(run.stdout, /line 500: a record must be a JSON object/);
  assert.match(run.stdout, /line 1100: timestamp "2026-02-30"/);
  assert.equal(stored(), 1197);

  // Refused by the server itself (no client check): the record is dropped by its line and the rest resent.
  const bad = join(c.configHome, 'server-check.ndjson');
  writeFileSync(bad, lines(40, { 13: '{"timestamp":"March 7"}', 31: '"a string"' }));
  const srvRun = await runCli(['ingest', bad, '--source', 'web', '--collection', 'events', '--no-check', '--json'], {
    env: c.env,
  });
  assert.equal(srvRun.code, 1);
  const s = JSON.parse(srvRun.stdout);
  assert.equal(s.accepted, 38);
  assert.deepEqual(
    s.refusals.map((r: { line: number }) => r.line),
    [13, 31],
  );
  assert.match(s.refusals[0].reason, /^server: /);
  assert.equal(stored(), 1197 + 38);

  const clean = join(c.configHome, 'clean.ndjson');
  writeFileSync(clean, lines(300));
  const ok = await runCli(['ingest', clean, '--source', 'web', '--collection', 'events', '--atomic'], { env: c.env });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(stored(), 1197 + 38 + 300);

  // The ingest key the CLI keeps was deleted on the server: refused, forgotten, and made anew next time.
  const keys = (await srv.get(`/v1/projects/${project.id}/sources/${source.id}/ingest_keys`)).body.data as {
    id: string;
  }[];
  for (const k of keys)
    assert.equal((await srv.delete(`/v1/projects/${project.id}/sources/${source.id}/ingest_keys/${k.id}`)).status, 200);
  const refused = await runCli(['ingest', clean, '--source', 'web', '--collection', 'events', '--retries', '0'], {
    env: c.env,
  });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /The ingest key was refused \(auth_invalid_credentials\)/);
  const fresh = await runCli(['ingest', clean, '--source', 'web', '--collection', 'events'], { env: c.env });
  assert.equal(fresh.code, 0, fresh.stderr);
  assert.equal(stored(), 1197 + 38 + 600);
});

test('cli ingest: JSON arrays (pretty-printed, brackets in strings) and CSV from stdin', async (t) => {
  const { srv, c, project, stored } = await setup(t);
  await login(c, srv.url, project.id);
  const arr = Array.from({ length: 500 }, (_, i) => ({
    i,
    s: 'a,b]"}[{',
    big: 12345678901234567890n.toString(),
    nested: { x: [i, { y: '\n' }] },
  }));
  const file = join(c.configHome, 'records.json');
  writeFileSync(file, JSON.stringify(arr, null, 2).replace('"i": 3,', '"i": 3.50,'));
  const json = await runCli(
    ['ingest', file, '--source', 'web', '--collection', 'arr', '--batch-records', '100', '--json'],
    { env: c.env },
  );
  assert.equal(json.code, 0, json.stderr);
  assert.equal(JSON.parse(json.stdout).accepted, 500);
  assert.equal(stored(), 500);
  // The bodies as sent: the number as written, not re-encoded.
  const bodies = [...srv.sluice.services.spool.scan()].map((e) => Buffer.from(e.body).toString('utf8')).join('');
  assert.match(bodies, /"i": 3\.50,/);

  const csv = 'name,amount,paid,code\nann,12.5,true,007\n"bob, jr",3,false,x\nbroken,1\ncat,-4,true,\n';
  const r = await runCli(['ingest', '-', '--format', 'csv', '--source', 'web', '--collection', 'orders', '--json'], {
    env: c.env,
    input: csv,
  });
  assert.equal(r.code, 1, 'one row does not parse');
  const sum = JSON.parse(r.stdout);
  assert.equal(sum.accepted, 3);
  assert.deepEqual(
    sum.refusals.map((x: { line: number }) => x.line),
    [4],
  );
  assert.match(sum.refusals[0].reason, /CSV: Invalid Record Length/);
  assert.equal(stored(), 503);
});

test('cli ingest: 503 Retry-After is honoured; a server gone mid-ingest resumes with --resume from the last acknowledged batch, nothing doubled', async (t) => {
  const { srv, c, project, stored } = await setup(t);
  const proxy = new IngestProxy(srv.url, (n) => (n === 2 ? { status: 503, retryAfter: '1' } : 'pass'));
  await proxy.start();
  t.after(() => proxy.stop());
  await login(c, proxy.url, project.id);
  const file = join(c.configHome, 'big.ndjson');
  writeFileSync(file, lines(1000));
  const args = [
    'ingest',
    file,
    '--source',
    'web',
    '--collection',
    'events',
    '--batch-records',
    '100',
    '--concurrency',
    '1',
    '--retries',
    '1',
    '--json',
  ];

  const started = Date.now();
  const first = await runCli(args, { env: c.env });
  assert.equal(first.code, 0, first.stderr);
  assert.ok(Date.now() - started >= 1000, 'waited the Retry-After second');
  assert.equal(proxy.seen[1]!.key, proxy.seen[2]!.key, 'the retry carries the same Idempotency-Key');
  assert.equal(stored(), 1000);

  // Batch 4 is stored but its answer lost, then the server is gone: the run stops after 3 acknowledged batches.
  writeFileSync(file, lines(1000).replaceAll('/p', '/q'));
  proxy.ingestRequests = 0;
  proxy.seen.length = 0;
  proxy.plan = (n) => (n <= 3 ? 'pass' : n === 4 ? 'lose-answer' : 'refuse');
  const broken = await runCli(args, { env: c.env });
  assert.equal(broken.code, 1);
  assert.match(broken.stderr, /300 records in 3 batches are acknowledged: run the same command with --resume/);
  assert.equal(stored(), 1000 + 400, 'batch 4 reached the spool without an answer');
  assert.equal(readdirSync(join(c.configHome, 'sluice', 'ingest')).length, 1, 'the resume state is kept');

  proxy.plan = () => 'pass';
  const resumed = await runCli([...args, '--resume'], { env: c.env });
  assert.equal(resumed.code, 0, resumed.stderr);
  const sum = JSON.parse(resumed.stdout);
  assert.equal(sum.resumed_from_batch, 3);
  assert.equal(sum.accepted, 1000, 'the summary counts the whole file');
  assert.equal(sum.batches, 7);
  assert.equal(stored(), 2000, 'batch 4 was answered from its idempotency key, not stored twice');
  assert.equal(readdirSync(join(c.configHome, 'sluice', 'ingest')).length, 0, 'a finished run leaves no state');

  const again = await runCli([...args, '--resume'], { env: c.env });
  assert.equal(again.code, 1);
  assert.match(again.stderr, /Nothing to resume/);
});
