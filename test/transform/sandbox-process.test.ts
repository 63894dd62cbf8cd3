import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TransformProcess } from '../../src/transform/sandbox-process.js';
import { batch, describeTransformContract, failed, okOutcome, records } from './transform-contract.js';

describeTransformContract('TransformProcess (child process)', (opts) => {
  const p = new TransformProcess(opts);
  return { run: (input) => p.run(input), close: () => p.close() };
});

describe('TransformProcess', () => {
  it('a script that aborts V8 (an allocation past the limit) ends the child, not this process; the next call forks again', async () => {
    const p = new TransformProcess();
    try {
      assert.equal(okOutcome(await p.run(batch('function transform(r) { return { id: r.id } }', records(2)))).rows, 2);
      const o = failed(
        await p.run(batch('function transform() { const a = []; a.length = 1e8; a.fill(1); return {} }', records(1))),
      );
      // Under CPU contention the time limit can come first (the child is then killed): contained either way.
      assert.ok(o.reason === 'memory' || o.reason === 'timeout', o.reason);
      if (o.reason === 'memory') {
        assert.equal(o.recordIndex, null);
        assert.match(
          o.message,
          /transform crashed its sandbox process, which was killed by SIGABRT: V8 could not allocate memory/,
        );
      }
      assert.equal(okOutcome(await p.run(batch('function transform(r) { return { id: r.id } }', records(2)))).rows, 2);
      assert.equal(p.processStarts, 2);
    } finally {
      await p.close();
    }
  });

  it('runs several views over one batch; a view that crashes the child fails alone, the views after it run in a new child', async () => {
    const p = new TransformProcess();
    try {
      const b = batch('unused', records(4));
      const view = (viewId: string, script: string) => ({ viewId, scriptHash: script, script });
      const outs = await p.runViews(b, [
        view('v1', 'function transform(r, ctx) { return { a: r.id, v: ctx.view_id } }'),
        view('v2', 'function transform() { const a = []; a.length = 1e8; a.fill(1); return {} }'),
        view('v3', 'function transform(r, ctx) { return r.id % 2 ? null : { b: r.id, v: ctx.view_id } }'),
      ]);
      assert.deepEqual(
        okOutcome(outs[0]!).outputs,
        [0, 1, 2, 3].map((a) => ({ a, v: 'v1' })),
      );
      assert.ok(['memory', 'timeout'].includes(failed(outs[1]!).reason));
      const third = okOutcome(outs[2]!);
      assert.deepEqual(
        [third.outputs, [...third.sources]],
        [
          [
            { b: 0, v: 'v3' },
            { b: 2, v: 'v3' },
          ],
          [0, 2],
        ],
      );
      assert.equal(p.processStarts, 2);
    } finally {
      await p.close();
    }
  });

  it('kills a child that does not answer within the time limit + grace', async () => {
    // A grace below zero makes the watchdog fire before the isolate's own timeout.
    const p = new TransformProcess({ cpuTimeMsPerCall: 2000, graceMs: -1800 });
    try {
      const started = Date.now();
      const o = failed(await p.run(batch('function transform() { for (;;) {} }', records(1))));
      assert.deepEqual([o.reason, o.recordIndex], ['timeout', null]);
      assert.match(o.message, /did not finish within 200 ms; its process was stopped/);
      assert.ok(Date.now() - started < 1500);
    } finally {
      await p.close();
    }
  });

  it('queues calls: one batch at a time, answers in order', async () => {
    const p = new TransformProcess();
    try {
      const outs = await Promise.all(
        [1, 2, 3].map((k) => p.run(batch(`function transform() { return { k: ${k} } }`, records(1)))),
      );
      assert.deepEqual(
        outs.map((o) => okOutcome(o).outputs[0]),
        [{ k: 1 }, { k: 2 }, { k: 3 }],
      );
    } finally {
      await p.close();
    }
  });

  it('rejects when the caller breaks the input contract; the child keeps serving', async () => {
    const p = new TransformProcess();
    try {
      const b = batch('function transform() { return {} }', records(3));
      await assert.rejects(p.run({ ...b, recordsText: '{"a":1}\u001e{oops' }), /record 1 is not JSON/);
      assert.equal(okOutcome(await p.run(b)).rows, 3);
      assert.equal(p.processStarts, 1);
    } finally {
      await p.close();
    }
  });
});
