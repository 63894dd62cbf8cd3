import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../src/log.js';
import { RerunJob } from '../../src/transform/rerun-job.js';

/** RerunJob: a request is never lost, whenever it lands relative to the end of a pass. */

const log = createLogger('silent');

/** Resolves after `n` microtask hops. */
async function hops(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

test('a request landing any number of microtasks after a pass ends runs the pass again', async () => {
  // The pass ends, and `depth` microtasks later (as a commit continuation would) a new request comes:
  // at every depth, including the ones inside the job's own bookkeeping, a second pass must run.
  for (let depth = 0; depth < 12; depth++) {
    let passes = 0;
    let job: RerunJob;
    let requested: Promise<void> = Promise.resolve();
    const pass = async () => {
      passes++;
      await hops(1);
      if (passes === 1) requested = hops(depth + 1).then(() => job.request());
    };
    job = new RerunJob(pass, log, 'test pass');
    job.request();
    await requested;
    await hops(1);
    await requested;
    await job.idle();
    assert.equal(passes, 2, `a request ${depth} microtasks after the pass ended was lost`);
  }
});

test('requests while a pass runs fold into one more pass; a failing pass is retried on the next request', async () => {
  let passes = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const job = new RerunJob(
    async () => {
      passes++;
      if (passes === 1) await gate;
      if (passes === 2) throw new Error('boom');
    },
    log,
    'test pass',
  );
  job.request();
  job.request();
  job.request();
  release();
  await job.idle();
  assert.equal(passes, 2, 'three requests during one pass: one more pass');
  job.request();
  await job.idle();
  assert.equal(passes, 3, 'after a failed pass the next request runs it');
  await job.stop();
  job.request();
  await job.idle();
  assert.equal(passes, 3, 'a stopped job runs nothing');
});
