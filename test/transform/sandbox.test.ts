import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TransformSandbox } from '../../src/transform/sandbox.js';
import type { ColumnsAnswer } from '../../src/transform/harness.js';
import { decodeRunResult } from '../../src/transform/harness/decode-answer.js';
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
      assert.ok(
        ['memory', 'timeout'].includes(
          failed(
            sb.run(batch('function transform() { let a = []; for (;;) a.push(new Array(1e6).fill(1)); }', records(1))),
          ).reason,
        ),
      );
      assert.equal(okOutcome(sb.run(batch('function transform() { return {} }', records(1)))).rows, 1);
      assert.equal(sb.isolateBuilds, 2);
    } finally {
      sb.dispose();
    }
  });

  it('caps the JSON of a batch’s outputs, naming the record where it passes the cap', () => {
    const sb = new TransformSandbox({ maxOutputChars: 10_000 });
    try {
      const o = failed(
        sb.run(batch("function transform(r) { return { s: 'x'.repeat(r.id === 300 ? 20000 : 10) } }", records(400))),
      );
      assert.deepEqual([o.reason, o.recordIndex], ['output_too_large', 300]);
      assert.match(o.message, /exceed 10000 characters of JSON at record 300/);
      const c = failed(
        sb.run({
          ...batch(
            "function transform(r) { return { id: r.id, s: 'x'.repeat(r.id === 300 ? 20000 : 10) } }",
            records(400),
          ),
          fields: ['s', 'id'],
        }),
      );
      assert.deepEqual([c.reason, c.recordIndex], ['output_too_large', 300], 'the same with the outputs as columns');
      const d = failed(
        sb.run({
          ...batch(
            "function transform(r) { return { id: r.id, s: 'x'.repeat(r.id === 300 ? 20000 : 10) } }",
            records(400),
          ),
          fields: ['s', 'id'],
          types: ['string', 'number'],
        }),
      );
      assert.deepEqual(
        [d.reason, d.recordIndex],
        ['output_too_large', 300],
        'the same with a string column sent as a dictionary',
      );
      assert.match(d.message, /exceed 10000 characters of JSON at record 300/);
    } finally {
      sb.dispose();
    }
  });

  it('caches script contexts in a bounded LRU, drops one after a timeout, recompiles when a hash comes with another script', () => {
    const sb = new TransformSandbox({ maxCachedScripts: 2, cpuTimeMsPerCall: 300 });
    try {
      const script = (k: number) =>
        `let calls = 0; function transform(r) { if (r.hang) for (;;) {} return { k: ${k}, calls: ++calls } }`;
      const run = (k: number, hash = `h${k}`, recs: unknown[] = [{}]) =>
        sb.run({ ...batch(script(k), recs), scriptHash: hash });
      assert.deepEqual(okOutcome(run(1)).outputs[0], { k: 1, calls: 1 });
      assert.deepEqual(okOutcome(run(1)).outputs[0], { k: 1, calls: 2 }, 'the context is kept between calls');
      run(2);
      run(3);
      assert.equal(sb.cachedScripts, 2);
      assert.deepEqual(okOutcome(run(1)).outputs[0], { k: 1, calls: 1 }, 'evicted, loaded again');
      assert.deepEqual(
        okOutcome(run(4, 'h1')).outputs[0],
        { k: 4, calls: 1 },
        'same hash, other script: not the cached one',
      );
      assert.equal(sb.cachedScripts, 2);
      assert.equal(failed(run(4, 'h1', [{ hang: true }])).reason, 'timeout');
      assert.deepEqual(
        okOutcome(run(4, 'h1')).outputs[0],
        { k: 4, calls: 1 },
        'a context cut off by a timeout is not reused',
      );
    } finally {
      sb.dispose();
    }
  });

  it('answers number, date and boolean columns as typed arrays, string columns as JSON; a forged column answer is bad_output', () => {
    const sb = new TransformSandbox();
    try {
      const script =
        'function transform(r, ctx) { return { n: r.score, t: ctx.timestamp, b: r.ok, s: r.name, m: r.id === 5 ? "x" : r.id, few: r.id % 3 ? "a" + (r.id % 3) : null } }';
      const raw = sb.runRaw({
        ...batch(script, records(200)),
        fields: ['n', 't', 'b', 's', 'm', 'few'],
        types: ['number', 'date', 'boolean', 'string', 'number', 'string'],
      });
      if (raw.status !== 'answer' || typeof raw.answer === 'string')
        return assert.fail(`expected a column answer, got ${JSON.stringify(raw)}`);
      const [n, t, b, str, m, few] = raw.answer.columns;
      assert.ok(n instanceof Float64Array && t instanceof Float64Array && b instanceof Uint8Array);
      assert.deepEqual([n[3], t[3], b[3], b[4]], [1.5, Date.UTC(2026, 0, 1, 12, 0, 3), 0, 1]);
      assert.equal(typeof str, 'string', 'a string column of 200 distinct values went as JSON');
      assert.equal(typeof m, 'string', 'a number column that met a string went as JSON');
      assert.ok(
        typeof few === 'object' && !ArrayBuffer.isView(few),
        'a string column of few values went as a dictionary',
      );
      assert.deepEqual(
        [JSON.parse(few.strings), [...few.index.subarray(0, 4)]],
        [
          ['a1', 'a2'],
          [-1, 0, 1, -1],
        ],
      );
      const good = decodeRunResult(raw.answer, 200, 6);
      if (good.status !== 'ok' || !good.columns) return assert.fail('expected columns');
      assert.deepEqual(good.columns[5]!.slice(0, 4), [null, 'a1', 'a2', null]);
      const forge = (change: Partial<ColumnsAnswer>, records = 200) =>
        decodeRunResult({ ...(raw.answer as ColumnsAnswer), ...change }, records, 6);
      const cols = raw.answer.columns;
      const with5 = (c: unknown) => [...cols.slice(0, 5), c] as ColumnsAnswer['columns'];
      for (const [what, o] of [
        [
          'a boolean column holding 3',
          forge({ columns: [cols[0]!, cols[1]!, Uint8Array.from({ length: 200 }, () => 3), ...cols.slice(3)] }),
        ],
        [
          'columns of different lengths',
          forge({ columns: [cols[0]!, (cols[1] as Float64Array).subarray(1), ...cols.slice(2)] }),
        ],
        ['a column of another kind', forge({ columns: with5(new Int32Array(200)) })],
        ['a column that is not JSON', forge({ columns: [cols[0]!, cols[1]!, cols[2]!, '[1,', ...cols.slice(4)] })],
        [
          'a dictionary index out of range',
          forge({ columns: with5({ strings: '["a"]', index: new Int32Array(200).fill(1) }) }),
        ],
        ['a dictionary of non-strings', forge({ columns: with5({ strings: '[1]', index: new Int32Array(200) }) })],
        ['one column too few', forge({ columns: cols.slice(1) })],
        ['more outputs than records', forge({}, 100)],
        ['record indexes out of order', forge({ src: JSON.stringify(Array.from({ length: 200 }, (_, k) => 199 - k)) })],
        ['counts that are not an object', forge({ extra: '[]' })],
      ] as const) {
        assert.equal(o.status, 'failed', what);
        if (o.status === 'failed') assert.equal(o.reason, 'bad_output', what);
      }
    } finally {
      sb.dispose();
    }
  });

  it('throws when the caller breaks the input contract', () => {
    const sb = new TransformSandbox();
    try {
      const b = batch('function transform() { return {} }', records(3));
      assert.throws(
        () => sb.run({ ...b, timestamp: b.timestamp.subarray(1) }),
        /receivedAt has 3 entries, timestamp 2/,
      );
      assert.throws(
        () => sb.run({ ...b, receivedAt: b.receivedAt.subarray(1), timestamp: b.timestamp.subarray(1) }),
        /more than the 2 records/,
      );
      assert.throws(() => sb.run({ ...b, recordsText: '{"a":1}\u001e{oops' }), /record 1 is not JSON/);
      assert.throws(() => sb.run({ ...b, schemaVersion: ['a'] }), /schemaVersion has 1 entries for 3 records/);
    } finally {
      sb.dispose();
    }
  });
});
