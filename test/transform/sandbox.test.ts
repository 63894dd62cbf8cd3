import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TransformSandbox } from '../../src/transform/sandbox.js';
import { batch, describeTransformContract, failed, okOutcome, records } from './transform-contract.js';

describeTransformContract('TransformSandbox (in thread)', (opts) => {
  const sb = new TransformSandbox(opts);
  return { run: async (input) => sb.run(input), close: async () => sb.dispose() };
});

describe('TransformSandbox', () => {
  it('rebuilds the isolate after the memory limit', () => {
    const sb = new TransformSandbox();
    try {
      assert.equal(okOutcome(sb.run(batch('function transform() { return {} }', records(1)))).rows, 1);
      assert.equal(sb.isolateBuilds, 1);
      assert.ok(['memory', 'timeout'].includes(failed(sb.run(batch('function transform() { let a = []; for (;;) a.push(new Array(1e6).fill(1)); }', records(1)))).reason));
      assert.equal(okOutcome(sb.run(batch('function transform() { return {} }', records(1)))).rows, 1);
      assert.equal(sb.isolateBuilds, 2);
    } finally {
      sb.dispose();
    }
  });

  it('caps the JSON of a batch’s outputs, naming the record where it passes the cap', () => {
    const sb = new TransformSandbox({ maxOutputChars: 10_000 });
    try {
      const o = failed(sb.run(batch("function transform(r) { return { s: 'x'.repeat(r.id === 300 ? 20000 : 10) } }", records(400))));
      assert.deepEqual([o.reason, o.recordIndex], ['output_too_large', 300]);
      assert.match(o.message, /exceed 10000 characters of JSON at record 300/);
      const c = failed(sb.run({ ...batch("function transform(r) { return { id: r.id, s: 'x'.repeat(r.id === 300 ? 20000 : 10) } }", records(400)), fields: ['s', 'id'] }));
      assert.deepEqual([c.reason, c.recordIndex], ['output_too_large', 300], 'the same with the outputs as columns');
    } finally {
      sb.dispose();
    }
  });

  it('caches script contexts in a bounded LRU, drops one after a timeout, recompiles when a hash comes with another script', () => {
    const sb = new TransformSandbox({ maxCachedScripts: 2, cpuTimeMsPerCall: 300 });
    try {
      const script = (k: number) => `let calls = 0; function transform(r) { if (r.hang) for (;;) {} return { k: ${k}, calls: ++calls } }`;
      const run = (k: number, hash = `h${k}`, recs: unknown[] = [{}]) => sb.run({ ...batch(script(k), recs), scriptHash: hash });
      assert.deepEqual(okOutcome(run(1)).outputs[0], { k: 1, calls: 1 });
      assert.deepEqual(okOutcome(run(1)).outputs[0], { k: 1, calls: 2 }, 'the context is kept between calls');
      run(2);
      run(3);
      assert.equal(sb.cachedScripts, 2);
      assert.deepEqual(okOutcome(run(1)).outputs[0], { k: 1, calls: 1 }, 'evicted, loaded again');
      assert.deepEqual(okOutcome(run(4, 'h1')).outputs[0], { k: 4, calls: 1 }, 'same hash, other script: not the cached one');
      assert.equal(sb.cachedScripts, 2);
      assert.equal(failed(run(4, 'h1', [{ hang: true }])).reason, 'timeout');
      assert.deepEqual(okOutcome(run(4, 'h1')).outputs[0], { k: 4, calls: 1 }, 'a context cut off by a timeout is not reused');
    } finally {
      sb.dispose();
    }
  });

  it('throws when the caller breaks the input contract', () => {
    const sb = new TransformSandbox();
    try {
      const b = batch('function transform() { return {} }', records(3));
      assert.throws(() => sb.run({ ...b, timestamp: b.timestamp.subarray(1) }), /receivedAt has 3 entries, timestamp 2/);
      assert.throws(() => sb.run({ ...b, receivedAt: b.receivedAt.subarray(1), timestamp: b.timestamp.subarray(1) }), /more than the 2 records/);
      assert.throws(() => sb.run({ ...b, recordsText: '{"a":1}\u001e{oops' }), /record 1 is not JSON/);
      assert.throws(() => sb.run({ ...b, schemaVersion: ['a'] }), /schemaVersion has 1 entries for 3 records/);
    } finally {
      sb.dispose();
    }
  });
});
