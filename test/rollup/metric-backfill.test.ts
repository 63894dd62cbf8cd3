import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { SCRIPT, viewSetup, writeViewFile, type FileRow } from '../transform/view-helpers.js';
import { bucketStart, TOTAL_SERIES } from '../../src/rollup/rollup-types.js';
import { seriesHash } from '../../src/rollup/series-hash.js';
import { loadHasher } from '../../src/rollup/hll.js';
import { countsAndSums, settle } from './rollup-helpers.js';

/** Issue 12, Deliver 6: a metric over a view that already has files backfills them, resumes after a restart, never counts a file twice. */

const OUT = [
  { name: 'host', type: 'string' as const },
  { name: 'ms', type: 'number' as const },
];
const T0 = Date.UTC(2026, 3, 1);

test('backfill over existing view files: exact per hour, resumable across a restart, newest first', async (t) => {
  await loadHasher();
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  t.after(() => srv.stop());
  const setup = await viewSetup(srv);
  const view = ok(
    await srv.post(setup.views, {
      name: 'Timings',
      collection_id: setup.collection.id,
      transform_script: SCRIPT,
      transform_mode: 'manual',
      output_schema: OUT,
    }),
    201,
  );
  const want = new Map<string, Map<number, [number, number | null]>>();
  const files = 24;
  for (let f = 0; f < files; f++) {
    const rows: FileRow[] = Array.from({ length: 50 }, (_, i) => ({
      ts: T0 + f * 3_600_000 + i * 61_000,
      seq: 1000 + f * 100 + i,
      values: { host: `h${i % 3}`, ms: i % 9 === 0 ? null : i * 1.5 },
    }));
    await writeViewFile(srv, view, OUT, `f${f}.parquet`, rows);
    for (const r of rows) {
      for (const s of [TOTAL_SERIES, seriesHash([r.values.host])]) {
        if (!want.has(s)) want.set(s, new Map());
        const start = bucketStart('hour', r.ts);
        const [c, sum] = want.get(s)!.get(start) ?? [0, null];
        const ms = r.values.ms as number | null;
        want.get(s)!.set(start, [c + 1, ms === null ? sum : (sum ?? 0) + ms]);
      }
    }
  }
  const metrics = `/v1/projects/${setup.project.id}/metrics`;
  const m = ok(
    await srv.post(metrics, { name: 'Latency', view_id: view.id, group_by: ['host'], value_field: 'ms' }),
    201,
  );

  // Restart once the backfill has counted some files (bounded wait; a fast machine may finish first).
  const deadline = Date.now() + 30_000;
  let seen: any = m;
  while (Date.now() < deadline && seen.backfill_completed_count < 1) {
    await new Promise((r) => setTimeout(r, 5));
    seen = ok(await srv.get(`${metrics}/${m.id}`));
  }
  t.diagnostic(`restarted at ${seen.status} ${seen.backfill_completed_count}/${seen.backfill_total_count} files`);
  assert.equal(seen.backfill_total_count, files);
  assert.ok(seen.backfill_started_at);
  await srv.restart();
  await settle(srv, metrics, [m.id]);
  const done = ok(await srv.get(`${metrics}/${m.id}`));
  assert.deepEqual(
    [done.status, done.backfill_total_count, done.backfill_completed_count, done.backfill_percent],
    ['active', files, files, 100],
  );
  assert.ok(done.backfill_completed_at >= done.backfill_started_at);
  assert.deepEqual(await countsAndSums(srv, m.id, 1, 'hour', [...want.keys()]), want, 'every file counted once');
  assert.equal(ok(await srv.get(`${metrics}/${m.id}/series`)).length, 3);
  // Nothing left to do: another restart changes nothing.
  await srv.restart();
  await settle(srv, metrics, [m.id]);
  assert.deepEqual(await countsAndSums(srv, m.id, 1, 'hour', [...want.keys()]), want);
});
