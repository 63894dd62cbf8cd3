import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';
import { ok } from '../catalog/helpers.js';

/** Sandbox child processes of this process (forked by pipeline worker threads and the backfiller). */
function sandboxChildren(): number[] {
  const out = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null && Number(m[2]) === process.pid && m[3]!.includes('sandbox-child'))
    .map((m) => Number(m[1]));
}

test('a stopped server leaves no sandbox child process behind', async () => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '2' } });
  try {
    const fx = await createIngestKey(srv, 'sandbox lifetime');
    const q = `key=${fx.secret}&collection=orders`;
    assert.equal(
      (await ingest(srv.url, q, ndjson([{ id: 1 }]), { 'content-type': 'application/x-ndjson' })).status,
      202,
    );
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    const [collection] = ok(await srv.get(`/v1/projects/${fx.projectId}/collections`));
    const views = `/v1/projects/${fx.projectId}/views`;
    const view = ok(
      await srv.post(views, {
        name: 'Ids',
        collection_id: collection.id,
        transform_mode: 'manual',
        transform_script: 'function transform(r) { return { id: r.id }; }',
        output_schema: [{ name: 'id', type: 'number' }],
      }),
      201,
    );
    for (let i = 2; i <= 5; i++)
      assert.equal(
        (await ingest(srv.url, q, ndjson([{ id: i }]), { 'content-type': 'application/x-ndjson' })).status,
        202,
      );
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    for (let i = 0; i < 200 && ok(await srv.get(`${views}/${view.id}/records`)).length < 5; i++)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(ok(await srv.get(`${views}/${view.id}/records`)).length, 5);
    assert.ok(sandboxChildren().length > 0, 'the view ran in sandbox child processes');
  } finally {
    await srv.stop();
  }
  let left = sandboxChildren();
  for (let i = 0; i < 50 && left.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 20));
    left = sandboxChildren();
  }
  assert.deepEqual(left, [], 'every sandbox child ended with the server');
});
