import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BOOTSTRAP_KEY, TestServer } from '../helpers/server.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';

/** Debian's `prometheus` package (promtool and the server); the test is skipped without it. */
function has(bin: string): boolean {
  return spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

const missing = !has('promtool') || !has('prometheus');

test('GET /metrics passes `promtool check metrics` and a real Prometheus scrapes it with a key', {
  skip: missing ? 'the prometheus binaries are not installed (apt-get install prometheus)' : false,
}, async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const fx = await createIngestKey(srv);
  assert.equal(
    (
      await ingest(srv.url, `key=${fx.secret}&collection=a`, ndjson([{ a: 1 }, { a: 2 }]), {
        'content-type': 'application/x-ndjson',
      })
    ).status,
    202,
  );
  const text = await (
    await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` } })
  ).text();
  const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(check.status, 0, `promtool check metrics: ${check.stdout}${check.stderr}`);

  const dir = mkdtempSync(join(tmpdir(), 'sluice-prom-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s, scrape_timeout: 1s }',
      'scrape_configs:',
      '  - job_name: sluice',
      `    authorization: { credentials: "${BOOTSTRAP_KEY}" }`,
      `    static_configs: [{ targets: ["${new URL(srv.url).host}"] }]`,
      '',
    ].join('\n'),
  );
  const prom = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=error',
    ],
    { stdio: 'ignore' },
  );
  t.after(() => {
    prom.kill('SIGKILL');
  });
  const query = async (q: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`);
    return (await res.json()) as { data: { result: { value: [number, string] }[] } };
  };
  let up: string | undefined;
  let records: string | undefined;
  for (let i = 0; i < 120 && (up !== '1' || records === undefined); i++) {
    await sleep(250);
    try {
      up = (await query('up{job="sluice"}')).data.result[0]?.value[1];
      records = (await query('sluice_ingest_records_total{job="sluice",outcome="accepted"}')).data.result[0]?.value[1];
    } catch {
      // Prometheus is still starting.
    }
  }
  assert.equal(up, '1', 'the scrape target is up');
  assert.ok(Number(records) >= 2, `the accepted records were scraped: ${records}`);
});
