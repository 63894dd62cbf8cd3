import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../src/config.js';
import { startSluice } from '../../src/server.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const KEY = 'slk_backup_test_key_00000000000000000000';

/** A real server in a child process (the backup freezes it with SIGSTOP); resolves with its URL once listening. */
function startChild(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'dist/src/main.js')], {
    env: {
      ...process.env,
      SLUICE_HOST: '127.0.0.1',
      SLUICE_PORT: '0',
      SLUICE_DATA_DIR: dataDir,
      SLUICE_BOOTSTRAP_KEY: KEY,
      SLUICE_LOG_LEVEL: 'info',
      SLUICE_WORKERS: '1',
      SLUICE_ADMIN_PASSWORD: 'admin-password',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('the server did not start in 60 s')), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /"port":(\d+)[^\n]*"msg":"listening"/.exec(buf);
      if (m) {
        clearTimeout(timer);
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume();
        resolve({ child, url: `http://127.0.0.1:${m[1]}` });
      }
    });
    child.on('exit', (code) => reject(new Error(`the server exited with ${code}`)));
  });
}

async function api(url: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const env = (await res.json()) as { data: any; error: unknown; pagination: { next_cursor: string | null } | null };
  if (!res.ok) throw new Error(`${method} ${path}: ${JSON.stringify(env.error)}`);
  return env;
}

test('a live data dir backed up under ingest (scripts/backup-live.mjs) restores with every record acknowledged before the backup, once', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-live-'));
  const backupDir = mkdtempSync(join(tmpdir(), 'sluice-backup-'));
  t.after(() => {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(backupDir, { recursive: true, force: true });
  });
  const { child, url } = await startChild(dataDir);
  t.after(() => child.kill('SIGKILL'));
  const project = (await api(url, 'POST', '/v1/projects', { name: 'Backup' })).data;
  const source = (await api(url, 'POST', `/v1/projects/${project.id}/sources`, { name: 'web' })).data;
  const ingestKey = (await api(url, 'POST', `/v1/projects/${project.id}/sources/${source.id}/ingest_keys`, {})).data
    .key as string;

  // Four producers, 5 records a request, each remembering when its 202 arrived.
  const acked = new Map<string, number>();
  let stop = false;
  const producer = async (w: number) => {
    for (let n = 0; !stop && n < 100_000; n++) {
      const ids = Array.from({ length: 5 }, (_, k) => `w${w}-${n}-${k}`);
      const res = await fetch(`${url}/ingest?key=${ingestKey}&collection=events`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson' },
        body: ids.map((id) => JSON.stringify({ id, w })).join('\n'),
      });
      await res.text();
      if (res.status === 202) for (const id of ids) acked.set(id, Date.now());
    }
  };
  const producers = [0, 1, 2, 3].map(producer);
  await sleep(1500);

  const backup = spawn(
    process.execPath,
    [join(ROOT, 'scripts/backup-live.mjs'), '--pid', String(child.pid), dataDir, backupDir],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  backup.stdout!.on('data', (d) => (out += d));
  // 'close', not 'exit': the script's stdout may still be in flight when the process has exited.
  const code = await new Promise<number | null>((r) => backup.on('close', r));
  assert.equal(code, 0, 'the backup script succeeded');
  const result = JSON.parse(out) as { frozen_at: number; thawed_at: number; pause_ms: number };
  await sleep(500);
  stop = true;
  await Promise.all(producers);
  const before = [...acked].filter(([, at]) => at < result.frozen_at).map(([id]) => id);
  const afterThaw = [...acked].filter(([, at]) => at > result.thawed_at).length;
  assert.ok(before.length >= 50, `records were acknowledged before the backup (${before.length})`);
  assert.ok(afterThaw > 0, 'ingest went on after the backup (the server was not stopped)');
  child.kill('SIGTERM');

  // Restore: a server on the copy processes what was spooled and serves everything.
  const restored = await startSluice({
    config: loadConfig({
      SLUICE_HOST: '127.0.0.1',
      SLUICE_PORT: '0',
      SLUICE_DATA_DIR: backupDir,
      SLUICE_LOG_LEVEL: 'silent',
      SLUICE_WORKERS: '1',
    }),
  });
  t.after(() => restored.stop());
  assert.ok(await restored.services.pipeline!.idle(60_000), 'the restored pipeline drains');
  const collections = (await api(restored.url, 'GET', `/v1/projects/${project.id}/collections`)).data as {
    id: string;
    slug: string;
  }[];
  const collection = collections.find((c) => c.slug === 'events')!;
  const seen = new Map<string, number>();
  let cursor: string | null = null;
  for (let page = 0; page < 1000; page++) {
    const env = await api(
      restored.url,
      'GET',
      `/v1/projects/${project.id}/collections/${collection.id}/docs?limit=200&sort=asc${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`,
    );
    for (const doc of env.data as { id: string }[]) seen.set(doc.id, (seen.get(doc.id) ?? 0) + 1);
    cursor = env.pagination?.next_cursor ?? null;
    if (!cursor) break;
  }
  t.diagnostic(
    `acknowledged before the backup: ${before.length}, after the thaw: ${afterThaw}, restored: ${seen.size}, pause ${result.pause_ms} ms`,
  );
  const missing = before.filter((id) => !seen.has(id));
  assert.deepEqual(
    missing.slice(0, 10),
    [],
    `${missing.length} of ${before.length} records acknowledged before the backup are missing`,
  );
  const twice = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  assert.deepEqual(twice.slice(0, 10), [], 'no record is stored twice');
});
