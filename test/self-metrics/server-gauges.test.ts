import { test } from 'node:test';
import assert from 'node:assert/strict';
import { registry } from '../../src/self-metrics/registry.js';
import { BACKGROUND_REFRESH_MS, bindServerGauges, sampleServerGauges } from '../../src/self-metrics/server-gauges.js';

/** `name` → value of an unlabelled sample of the exposition. */
async function valueOf(name: string): Promise<number | undefined> {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(await registry.metrics());
  return m ? Number(m[1]) : undefined;
}

test('a scrape reads the scanned gauges from memory: the scans run at bind and then every BACKGROUND_REFRESH_MS, never per scrape', async () => {
  const calls = { spool: 0, merge: 0, compaction: 0 };
  const unbind = bindServerGauges({
    spoolRecords: () => ++calls.spool,
    spoolProcessingRecords: () => 0,
    spoolBytes: () => 4096,
    oldestSpooledAt: () => null,
    now: () => 0,
    workers: () => ({ threads: 2, busy: 1 }),
    rollupMergeBacklog: () => (++calls.merge, 7),
    compactionBacklog: () => (++calls.compaction, 42),
  });
  try {
    assert.deepEqual(calls, { spool: 0, merge: 1, compaction: 1 }, 'the scans ran once at bind');
    for (let i = 0; i < 50; i++) sampleServerGauges();
    assert.equal(calls.spool, 50, 'cheap gauges are read at every scrape');
    assert.deepEqual([calls.merge, calls.compaction], [1, 1], 'scans are not run by a scrape');
    assert.equal(await valueOf('sluice_rollup_merge_backlog_batches'), 7);
    assert.equal(await valueOf('sluice_rollup_compaction_backlog_rows'), 42);
    assert.equal(await valueOf('sluice_worker_utilization_ratio'), 0.5);
    // prom-client's slow collectors run off the request path too, and their values are there.
    for (const name of ['nodejs_eventloop_lag_seconds', 'process_open_fds']) {
      const metric = registry.getSingleMetric(name) as { collect?: unknown } | undefined;
      assert.ok(metric, name);
      assert.equal(metric.collect, undefined, `${name} is not collected by a scrape`);
    }
    assert.ok((await valueOf('process_open_fds'))! > 0);
    assert.ok(BACKGROUND_REFRESH_MS <= 15_000, 'fresher than a usual scrape interval');
  } finally {
    unbind();
  }
  for (let i = 0; i < 5; i++) sampleServerGauges();
  assert.equal(calls.spool, 50, 'unbound: nothing is read any more');
});
