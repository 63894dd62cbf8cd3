import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childApi, startChild, type ChildServer } from '../helpers/child.js';
import { startHttpsServer, testCa, type LocalServer } from '../helpers/test-ca.js';

/**
 * The way the acceptance of this API runs Sluice: a real process with NODE_EXTRA_CA_CERTS (the
 * test CA) and SLUICE_ALLOW_PRIVATE_TARGETS=1, fetching from a local HTTPS server. Header values
 * reach the endpoint and never the log.
 */

const KEY = 'slk_pulls_acceptance_key_000000000000000000';
const SECRET = 'Bearer never-logged-0123456789';
let child: ChildServer;
let site: LocalServer;
let dataDir: string;
let authSeen: string | undefined;

before(async () => {
  site = await startHttpsServer((req, res) => {
    authSeen = req.headers.authorization;
    res.setHeader('content-type', 'text/csv');
    res.end('a,b\n1,2\n3,4\n');
  });
  dataDir = mkdtempSync(join(tmpdir(), 'sluice-pull-accept-'));
  child = await startChild(
    {
      SLUICE_DATA_DIR: dataDir,
      SLUICE_BOOTSTRAP_KEY: KEY,
      SLUICE_PIPELINE: '0',
      SLUICE_LOG_LEVEL: 'debug',
      NODE_EXTRA_CA_CERTS: testCa().caPath,
      SLUICE_ALLOW_PRIVATE_TARGETS: '1',
    },
    60_000,
  );
});

after(async () => {
  child.proc.kill('SIGTERM');
  await child.exited;
  await site.close();
  rmSync(dataDir, { recursive: true, force: true });
});

test('pulls fetch local HTTPS under NODE_EXTRA_CA_CERTS with private targets allowed; header values never logged', async () => {
  const api = (method: string, path: string, body?: unknown) => childApi(child.url, KEY, method, path, body);
  const project = await api('POST', '/v1/projects', { name: 'Acceptance' });
  const source = await api('POST', `/v1/projects/${project.id}/sources`, { name: 'Src' });
  const pull = await api('POST', `/v1/projects/${project.id}/pulls`, {
    name: 'Local',
    source_id: source.id,
    endpoint_url: site.url('/x.csv'),
    headers: { Authorization: SECRET },
  });
  const t = await api('POST', `/v1/projects/${project.id}/pulls/${pull.id}/test`);
  assert.deepEqual([t.ok, t.status, t.record_count, t.error], [true, 200, 2, null]);
  assert.equal(authSeen, SECRET, 'the header value is sent');
  const check = await api('POST', `/v1/projects/${project.id}/checks`, {
    name: 'Local',
    source_id: source.id,
    collection_slug: 'up',
    endpoint_url: site.url('/'),
  });
  assert.equal((await api('POST', `/v1/projects/${project.id}/checks/${check.id}/test`)).ok, true);
  // The public-address rule is lifted, never the HTTPS one.
  await assert.rejects(
    api('POST', `/v1/projects/${project.id}/pulls`, {
      name: 'Plain',
      source_id: source.id,
      endpoint_url: `http://127.0.0.1:${site.port}/`,
    }),
    /body\.endpoint_url/,
  );
  assert.ok(child.stdout().length > 0);
  assert.ok(!child.stdout().includes('never-logged'), 'no header value in the log');
});
