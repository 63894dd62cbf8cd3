import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BOOTSTRAP_KEY, TestServer } from '../helpers/server.js';
import { settle } from '../rollup/rollup-helpers.js';
import { cliEnv, runCli } from './cli-helpers.js';

const START = Date.UTC(2026, 0, 5, 10, 0);

test('cli resources, ingest, query and tail on a real server with the pipeline', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  t.after(() => srv.stop());
  const c = cliEnv({ SLUICE_URL: srv.url, SLUICE_API_KEY: BOOTSTRAP_KEY });
  t.after(c.cleanup);
  const cli = async (args: string[], input?: string) => {
    const r = await runCli(args, { env: c.env, ...(input !== undefined ? { input } : {}) });
    assert.equal(r.code, 0, `sluice ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };

  const project = JSON.parse(await cli(['projects', 'create', '--name', 'Shop', '--json']));
  c.env.SLUICE_PROJECT = project.id;
  const source = JSON.parse(await cli(['sources', 'create', '--name', 'web', '--json']));
  const collection = JSON.parse(
    await cli([
      'collections',
      'create',
      '--name',
      'Requests',
      '--set',
      `source_id=${source.id}`,
      '--set',
      'slug=requests',
      '--json',
    ]),
  );
  assert.equal(collection.slug, 'requests');
  const table = await cli(['collections', 'list']);
  assert.match(table, /^ID\s+NAME\s+SLUG\s+SOURCE_ID\s+CREATED_AT\n/);
  assert.match(table, new RegExp(`${collection.id}\\s+Requests\\s+requests\\s+${source.id}`));

  const viewFile = join(c.configHome, 'view.json');
  writeFileSync(
    viewFile,
    JSON.stringify({
      name: 'Latency view',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: 'function transform(r) { return { path: r.path, ms: r.ms }; }',
      output_schema: [
        { name: 'path', type: 'string' },
        { name: 'ms', type: 'number' },
      ],
    }),
  );
  const view = JSON.parse(await cli(['views', 'create', '--file', viewFile, '--json']));
  const metric = JSON.parse(
    await cli([
      'metrics',
      'create',
      '--name',
      'Latency',
      '--set',
      `view_id=${view.id}`,
      '--set',
      'group_by=["path"]',
      '--set',
      'value_field=ms',
      '--json',
    ]),
  );
  assert.deepEqual(metric.group_by, ['path']);
  assert.equal(
    (await runCli(['metrics', 'get', 'Latency', '--json'], { env: c.env })).stdout.includes(metric.id),
    true,
    'get by name',
  );

  // 3 minutes × 50 records, two paths.
  let lines = '';
  for (let i = 0; i < 150; i++)
    lines +=
      JSON.stringify({
        path: i % 2 ? '/a' : '/b',
        ms: (i % 50) + 1,
        timestamp: new Date(START + Math.floor(i / 50) * 60_000 + (i % 50) * 100).toISOString(),
      }) + '\n';
  const file = join(c.configHome, 'requests.ndjson');
  writeFileSync(file, lines);
  assert.match(
    await cli(['ingest', file, '--source', 'web', '--collection', 'requests']),
    /^150 records accepted, 0 refused/,
  );

  const args = [
    'query',
    'Latency',
    '--start',
    new Date(START).toISOString(),
    '--end',
    new Date(START + 3 * 60_000).toISOString(),
    '--interval',
    'minute',
    '--values',
    'count,max',
    '--observed',
  ];
  await settle(srv, `/v1/projects/${project.id}/metrics`, [metric.id]);
  let csv = '';
  for (let i = 0; i < 50; i++) {
    csv = await cli([...args, '--csv']);
    const counted = csv
      .trim()
      .split('\n')
      .slice(1)
      .reduce((n, row) => n + Number(row.split(',')[2] || 0), 0);
    if (counted === 150) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const rows = csv.trim().split('\n');
  assert.equal(rows[0], 'time,series,count,max');
  assert.deepEqual(rows.slice(1), [
    '2026-01-05T10:00:00.000Z,/a,25,50',
    '2026-01-05T10:00:00.000Z,/b,25,49',
    '2026-01-05T10:01:00.000Z,/a,25,50',
    '2026-01-05T10:01:00.000Z,/b,25,49',
    '2026-01-05T10:02:00.000Z,/a,25,50',
    '2026-01-05T10:02:00.000Z,/b,25,49',
  ]);
  const human = await cli(args);
  assert.match(human, /^TIME\s+SERIES\s+COUNT\s+MAX\n2026-01-05T10:00:00\.000Z\s+\/a\s+25\s+50\n/);
  const json = JSON.parse(await cli([...args, '--json']));
  assert.deepEqual(json.values, ['count', 'max']);

  // tail: the records already written from --since, then a record written while it follows.
  const tail = runCli(
    [
      'tail',
      'requests',
      '--since',
      new Date(START).toISOString(),
      '--interval',
      '100',
      '--max',
      '151',
      '--timeout',
      '60',
    ],
    { env: c.env, timeoutMs: 90_000 },
  );
  await new Promise((r) => setTimeout(r, 500));
  await cli(
    ['ingest', '-', '--source', 'web', '--collection', 'requests'],
    JSON.stringify({ path: '/late', ms: 1, timestamp: new Date(START + 10 * 60_000).toISOString() }) + '\n',
  );
  const followed = await tail;
  assert.equal(followed.code, 0, followed.stderr);
  const got = followed.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(got.length, 151);
  assert.equal(got[150].path, '/late', 'the new record came last, once');
  assert.equal(new Set(followed.stdout.trim().split('\n')).size, 151, 'no record printed twice');

  // A view by name: its output records, in event-time order.
  const viewTail = await runCli(
    [
      'tail',
      'Latency view',
      '--since',
      new Date(START).toISOString(),
      '--interval',
      '100',
      '--max',
      '151',
      '--timeout',
      '60',
    ],
    { env: c.env, timeoutMs: 90_000 },
  );
  assert.equal(viewTail.code, 0, viewTail.stderr);
  const outputs = viewTail.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(outputs.length, 151);
  assert.deepEqual(
    Object.keys(outputs[0])
      .filter((k) => !k.startsWith('_'))
      .sort(),
    ['ms', 'path'],
  );
  assert.equal(outputs[150].path, '/late');

  const del = await runCli(['metrics', 'delete', metric.id], { env: c.env });
  assert.equal(del.code, 0, del.stderr);
  assert.match(del.stdout, /scheduled for deletion/);
});
