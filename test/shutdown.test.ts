import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChild } from './helpers/child.js';

test('SIGTERM lets an in-flight request finish, then exits 0', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-term-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const child = await startChild({ SLUICE_DATA_DIR: dataDir, SLUICE_BOOTSTRAP_KEY: 'term-key' });
  t.after(() => child.proc.kill('SIGKILL'));

  // Start a request whose body arrives in two parts, and send SIGTERM between them.
  const response = new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = request(
      child.url + '/v1/projects',
      {
        method: 'POST',
        headers: {
          authorization: 'Bearer term-key',
          'content-type': 'application/json',
          'transfer-encoding': 'chunked',
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.write('{"name":');
    setTimeout(() => {
      child.proc.kill('SIGTERM');
      setTimeout(() => req.end('"Late"}'), 300);
    }, 200);
  });
  const r = await response;
  assert.equal(r.status, 201);
  assert.equal(r.body.data.name, 'Late');
  assert.equal(await child.exited, 0);
});
