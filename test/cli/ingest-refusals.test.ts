import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BOOTSTRAP_KEY, TestServer } from '../helpers/server.js';
import { cliEnv, runCli } from './cli-helpers.js';
import { IngestProxy } from './ingest-proxy.js';

test('cli ingest: NDJSON goes unparsed; a batch the server refuses is checked line by line once, so all its bad lines cost one round trip; bytes that are not UTF-8 go as their decoded text', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const c = cliEnv();
  t.after(c.cleanup);
  const project = (await srv.post('/v1/projects', { name: 'Shop' })).body.data;
  await srv.post(`/v1/projects/${project.id}/sources`, { name: 'web' });
  const proxy = new IngestProxy(srv.url, () => 'pass');
  await proxy.start();
  t.after(() => proxy.stop());
  const login = await runCli(['login', '--url', proxy.url], { env: c.env, input: `${BOOTSTRAP_KEY}\n` });
  assert.equal(login.code, 0, login.stderr);
  assert.equal((await runCli(['projects', 'use', project.id], { env: c.env })).code, 0);

  // 300 lines in batches of 100: batch 0 is clean, batch 1 has three bad lines and one that is not
  // UTF-8, batch 2 is clean.
  const parts: Buffer[] = [];
  for (let i = 1; i <= 300; i++) {
    if (i === 120) parts.push(Buffer.from('{"broken": \n'));
    else if (i === 150) parts.push(Buffer.from('[1, 2]\n'));
    else if (i === 170) parts.push(Buffer.from('{"timestamp": "yesterday"}\n'));
    else if (i === 190)
      parts.push(Buffer.concat([Buffer.from('{"i": 190, "s": "'), Buffer.from([0xff]), Buffer.from('"}\n')]));
    else parts.push(Buffer.from(`${JSON.stringify({ i })}\n`));
  }
  const file = join(c.configHome, 'mixed.ndjson');
  writeFileSync(file, Buffer.concat(parts));
  const r = await runCli(
    ['ingest', file, '--source', 'web', '--collection', 'events', '--batch-records', '100', '--json'],
    { env: c.env },
  );
  assert.equal(r.code, 1, 'refused records: exit 1');
  const sum = JSON.parse(r.stdout);
  assert.equal(sum.accepted, 297);
  assert.deepEqual(
    sum.refusals.map((x: { line: number; reason: string }) => [x.line, x.reason.split(':')[0]]),
    [
      [120, 'not valid JSON'],
      [150, 'a record must be a JSON object'],
      [170, 'timestamp "yesterday" is neither an ISO 8601 date-time from 1970 on nor epoch milliseconds'],
    ],
  );
  assert.equal(proxy.seen.length, 4, 'three batches, and batch 1 once more without its bad lines');
  assert.deepEqual(proxy.seen.map((s) => /-(\d+(?:-r\d+)?)$/.exec(s.key!)![1]).sort(), ['0', '1', '1-r1', '2']);
  const bodies = [...srv.sluice.services.spool.scan()].map((e) => Buffer.from(e.body).toString('utf8')).join('');
  assert.equal(bodies.split('\n').filter(Boolean).length, 297);
  assert.ok(bodies.includes('{"i": 190, "s": "\ufffd"}'), 'the line that was not UTF-8 went as its decoded text');
});
