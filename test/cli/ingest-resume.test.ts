import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BOOTSTRAP_KEY, TestServer } from '../helpers/server.js';
import { cliEnv, runCli } from './cli-helpers.js';
import { IngestProxy } from './ingest-proxy.js';

/** The batch index an idempotency key names (`<run id>-<batch>` or `<run id>-<batch>-r<version>`). */
function batchOf(key: string | undefined): number {
  const m = /-(\d+)(?:-r\d+)?$/.exec(key ?? '');
  assert.ok(m, `an idempotency key naming its batch: ${key}`);
  return Number(m[1]);
}

test('cli ingest: the server goes away with 4 batches in flight; --resume sends none of the acknowledged batches again and stores every record exactly once', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const c = cliEnv();
  t.after(c.cleanup);
  const project = (await srv.post('/v1/projects', { name: 'Shop' })).body.data;
  await srv.post(`/v1/projects/${project.id}/sources`, { name: 'web' });
  const stored = () => srv.sluice.services.spool.pendingRecords(project.id);

  // Batch 10 reaches the server but its answers are lost; 11 and 12 are acknowledged after it (out of
  // order); from 13 on the server is gone. Only 0–9 are acknowledged in a row from the start.
  const proxy = new IngestProxy(srv.url, (_n, key) => {
    const b = batchOf(key);
    return b < 10 || b === 11 || b === 12 ? 'pass' : b === 10 ? 'lose-answer' : 'refuse';
  });
  await proxy.start();
  t.after(() => proxy.stop());
  const login = await runCli(['login', '--url', proxy.url], { env: c.env, input: `${BOOTSTRAP_KEY}\n` });
  assert.equal(login.code, 0, login.stderr);
  assert.equal((await runCli(['projects', 'use', project.id], { env: c.env })).code, 0);

  const file = join(c.configHome, 'events.ndjson');
  let text = '';
  // Line 350 (batch 3) is not JSON: found when the server refuses batch 3, and still reported after --resume.
  for (let i = 1; i <= 3000; i++) text += i === 350 ? 'not json\n' : `${JSON.stringify({ i, path: `/p${i % 7}` })}\n`;
  writeFileSync(file, text);
  const args = ['ingest', file, '--source', 'web', '--collection', 'events', '--batch-records', '100'];
  const run = [...args, '--concurrency', '4', '--retries', '1', '--json'];

  const broken = await runCli(run, { env: c.env });
  assert.equal(broken.code, 1, broken.stdout);
  assert.match(broken.stderr, /999 records in 10 batches are acknowledged: run the same command with --resume/);
  assert.equal(stored(), 1299, 'batches 0–12 reached the spool (10 without an answer)');
  const first = new Set(proxy.seen.map((s) => batchOf(s.key)));
  assert.ok(first.has(13), 'batches past the gap were in flight when the server went away');

  proxy.seen.length = 0;
  proxy.plan = () => 'pass';
  const resumed = await runCli([...run, '--resume'], { env: c.env });
  assert.equal(resumed.code, 1, `exit 1: a record was refused (${resumed.stderr})`);
  const sum = JSON.parse(resumed.stdout);
  assert.equal(sum.resumed_from_batch, 10);
  assert.equal(sum.accepted, 2999, 'the summary counts the whole file');
  assert.deepEqual(
    sum.refusals.map((r: { line: number }) => r.line),
    [350],
    'the refusal found in an acknowledged batch is kept for the resumed run',
  );
  const sent = proxy.seen.map((s) => batchOf(s.key));
  assert.equal(Math.min(...sent), 10, 'no acknowledged batch of the recorded prefix is sent again');
  assert.deepEqual(
    [...new Set(sent)].sort((a, b) => a - b),
    Array.from({ length: 20 }, (_, i) => 10 + i),
    'every batch from the first unacknowledged one on, once',
  );
  assert.equal(sent.length, 20, 'each once (no retry was needed)');
  assert.equal(stored(), 2999, 'batches 10–12 were answered from their idempotency keys: every record exactly once');
  assert.equal(readdirSync(join(c.configHome, 'sluice', 'ingest')).length, 0, 'a finished run leaves no state');
});
