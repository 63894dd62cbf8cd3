import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { TOTAL_SERIES } from '../../src/rollup/rollup-types.js';
import { loadHasher } from '../../src/rollup/hll.js';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { SCRIPT, viewSetup, writeViewFile } from '../transform/view-helpers.js';
import { countsAndSums, rollupsOf } from './rollup-helpers.js';

const OUT = [{ name: 'ms', type: 'number' as const }];
const T0 = Date.UTC(2026, 3, 1);

/**
 * A view file nobody announces (a view's own backfill writes them so) is found by the metric
 * backfill's rescan, a scheduler job on the injected clock: not before its period has passed, and
 * counted once `runDue()` returns after it has.
 */
test('the metric backfill rescan and the compaction are scheduler jobs: an unannounced view file is counted after runDue, then compacted by the kicked job', async (t) => {
  await loadHasher();
  const clock = new ManualClock(Date.UTC(2026, 3, 2));
  const srv = await TestServer.start({ clock, env: { SLUICE_WORKERS: '1' } });
  t.after(() => srv.stop());
  const scheduler = srv.sluice.services.scheduler;
  assert.ok(scheduler.get('metric-backfill-rescan'), 'the rescan is registered with the scheduler');

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
  const metrics = `/v1/projects/${setup.project.id}/metrics`;
  const m = ok(await srv.post(metrics, { name: 'Latency', view_id: view.id, value_field: 'ms' }), 201);
  const backfill = rollupsOf(srv).backfill;
  await backfill.idle();
  const before = ok(await srv.get(`${metrics}/${m.id}`));
  assert.deepEqual([before.status, before.backfill_total_count], ['active', 0]);

  // Committed to the catalog without a change notice: only a rescan finds it.
  const rows = Array.from({ length: 10 }, (_, i) => ({ ts: T0 + i * 60_000, seq: 100 + i, values: { ms: i } }));
  await writeViewFile(srv, view, OUT, 'unannounced.parquet', rows);
  await backfill.idle();
  await scheduler.runDue();
  assert.equal(ok(await srv.get(`${metrics}/${m.id}`)).backfill_total_count, 0, 'the rescan is not due yet');

  clock.advance(2_000);
  await scheduler.runDue();
  const after = ok(await srv.get(`${metrics}/${m.id}`));
  assert.deepEqual(
    [after.status, after.backfill_total_count, after.backfill_completed_count],
    ['active', 1, 1],
    JSON.stringify(after),
  );
  const counted = await countsAndSums(srv, m.id, 1, 'hour');
  assert.deepEqual(counted.get(TOTAL_SERIES), new Map([[T0, [10, 45]]]));

  // The merge kicks the scheduler's compaction job, which runs on its own on a hand-moved clock
  // (nothing here calls rollups.idle() or runDue()).
  const compaction = scheduler.get('rollup-compaction');
  assert.ok(compaction, 'the compaction is registered with the scheduler');
  let compacted = ok(await srv.get(`${metrics}/${m.id}`));
  for (let i = 0; i < 200 && compacted.compact_percent !== 100; i++) {
    await new Promise((r) => setTimeout(r, 50));
    compacted = ok(await srv.get(`${metrics}/${m.id}`));
  }
  assert.deepEqual(
    [compacted.compact_percent, compacted.compact_completed_count],
    [100, 10],
    JSON.stringify(compacted),
  );
  assert.notEqual(compaction.lastAt(), null, 'the job ran');
});
