import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TransformInput, TransformOutcome, TransformSandboxOptions } from '../../src/transform/sandbox.js';
import { coerceColumns } from '../../src/transform/output-schema.js';

/**
 * What every way of running a view transform must do, run against each implementation
 * (in-thread `TransformSandbox`, child-process `TransformProcess`), as hono's router tests share
 * one suite.
 */

export interface TransformRunner {
  run(input: TransformInput): Promise<TransformOutcome>;
  close(): Promise<void>;
}

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

/** A batch of `records` for `script`; record i's event time is T0 + i s, received 1.5 s later. */
export function batch(script: string, records: unknown[], times?: number[]): TransformInput {
  const timestamp = Float64Array.from(times ?? records.map((_, i) => T0 + i * 1000));
  return {
    scriptHash: script,
    script,
    recordsText: records.map((r) => JSON.stringify(r)).join('\u001e'),
    viewId: 'view_1',
    schemaVersion: 'sv_1',
    receivedAt: timestamp.map((t) => t + 1500),
    timestamp,
  };
}

export const records = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: i, name: `n${i}`, score: i * 0.5, ok: i % 2 === 0, nested: { x: i } }));

/** An ok outcome with row outputs (the call named no fields). */
export function okOutcome(o: TransformOutcome) {
  if (o.status !== 'ok') assert.fail(`expected ok, got ${o.reason}: ${o.message}`);
  if (o.outputs === undefined) assert.fail('expected row outputs, got columns');
  return o;
}

/** An ok outcome with column outputs (the call named its fields). */
export function okColumns(o: TransformOutcome) {
  if (o.status !== 'ok') assert.fail(`expected ok, got ${o.reason}: ${o.message}`);
  if (o.columns === undefined) assert.fail('expected columns, got row outputs');
  return o;
}
export function failed(o: TransformOutcome) {
  if (o.status !== 'failed') assert.fail('expected a failed outcome');
  return o;
}

export function describeTransformContract(
  name: string,
  make: (opts: TransformSandboxOptions) => TransformRunner,
): void {
  describe(`${name}: the transform contract`, () => {
    const sb = make({ cpuTimeMsPerCall: 400 });
    after(() => sb.close());
    const run = (input: TransformInput) => sb.run(input);
    const works = async () =>
      assert.equal(okOutcome(await run(batch('function transform(r) { return { id: r.id } }', records(3)))).rows, 3);

    it('projects five fields per record, with its ctx (ISO times) and its record index', async () => {
      const script = `function transform(r, ctx) {
  return { id: r.id, name: r.name, x: r.nested.x, view: ctx.view_id, at: ctx.timestamp };
}`;
      const o = okOutcome(await run(batch(script, records(300))));
      assert.equal(o.rows, 300);
      assert.deepEqual(o.outputs[17], {
        id: 17,
        name: 'n17',
        x: 17,
        view: 'view_1',
        at: new Date(T0 + 17_000).toISOString(),
      });
      assert.deepEqual([...o.sources.slice(0, 4)], [0, 1, 2, 3]);
      assert.equal(o.sources[299], 299);
    });

    it('passes the whole documented ctx, and only it; schema_version per batch or per record', async () => {
      const o = okOutcome(await run(batch('function transform(r, ctx) { return { ctx } }', [{}])));
      assert.deepEqual(o.outputs[0], {
        ctx: {
          view_id: 'view_1',
          schema_version: 'sv_1',
          received_at: new Date(T0 + 1500).toISOString(),
          timestamp: new Date(T0).toISOString(),
        },
      });
      const perRecord = {
        ...batch('function transform(r, ctx) { return { v: ctx.schema_version } }', [{}, {}, {}, {}]),
        schemaVersion: ['a', null, 'b', 'a'],
      };
      assert.deepEqual(okOutcome(await run(perRecord)).outputs, [{ v: 'a' }, { v: null }, { v: 'b' }, { v: 'a' }]);
      const indexed = { ...perRecord, schemaVersion: { values: ['b', 'a'], index: Int32Array.from([1, 1, 0, 1]) } };
      assert.deepEqual(okOutcome(await run(indexed)).outputs, [{ v: 'a' }, { v: 'a' }, { v: 'b' }, { v: 'a' }]);
      await assert.rejects(
        async () => run({ ...perRecord, schemaVersion: { values: ['a'], index: Int32Array.from([0, 0, 1, 0]) } }),
        /schemaVersion index out of range at 2/,
      );
    });

    it('formats ctx times exactly as Date#toISOString, across days, before 1970, fractions, far years; an invalid time is null', async () => {
      const times = [
        T0,
        T0 + 1,
        T0 + 86_399_999,
        T0 + 86_400_000,
        -1,
        -86_400_001,
        0,
        1.5,
        -1.5,
        253402300799999,
        253402300800000,
        -62167219200001,
        8.64e15,
        -8.64e15,
      ];
      for (let i = 0; i < 300; i++) times.push(Math.floor(Math.sin(i) * 4e12));
      const o = okOutcome(
        await run(
          batch(
            'function transform(r, ctx) { return { t: ctx.timestamp } }',
            times.map(() => ({})),
            times,
          ),
        ),
      );
      assert.deepEqual(
        o.outputs.map((x) => x.t),
        times.map((t) => new Date(t).toISOString()),
      );
      const bad = okOutcome(
        await run(batch('function transform(r, ctx) { return { t: ctx.timestamp } }', [{}, {}], [NaN, 9e15])),
      );
      assert.deepEqual(bad.outputs, [{ t: null }, { t: null }]);
    });

    it('an array return gives one output per element, each with its source index; null and [] skip the record', async () => {
      const script =
        'function transform(r) { const k = r.id % 4; return k === 0 ? null : k === 1 ? [] : k === 2 ? { a: r.id } : [{ a: r.id }, { a: -r.id }]; }';
      const o = okOutcome(await run(batch(script, records(1000))));
      const want: Array<[number, number]> = [];
      for (let i = 0; i < 1000; i++) {
        if (i % 4 === 2) want.push([i, i]);
        if (i % 4 === 3) want.push([i, i], [i, -i]);
      }
      assert.equal(o.rows, want.length);
      assert.deepEqual(
        o.outputs.map((x, k) => [o.sources[k], x.a]),
        want,
      );
    });

    it('fails the batch on the first record that throws, naming the record, the error and its place', async () => {
      const script = `function transform(r) {
  const q = r.id === 17 ? undefined : r.nested;
  return { x: q.x };
}`;
      const o = failed(await run(batch(script, records(40))));
      assert.equal(o.reason, 'threw');
      assert.equal(o.recordIndex, 17);
      assert.equal(
        o.message,
        "transform threw on record 17: TypeError: Cannot read properties of undefined (reading 'x') (line 3, column 17)",
      );
      const s = failed(
        await run(batch('function transform(r) { if (r.id === 2) throw "boom"; return {}; }', records(5))),
      );
      assert.deepEqual([s.reason, s.recordIndex, s.message], ['threw', 2, 'transform threw on record 2: boom']);
    });

    it('refuses a return that is not a plain object, an array of them, or null', async () => {
      const cases: Array<[string, RegExp]> = [
        ['return 5', /returned a number for record 3/],
        ['return "x"', /returned a string for record 3/],
        ['return', /returned undefined for record 3/],
        ['return true', /returned a boolean for record 3/],
        ['return new Date(0)', /returned a Date object for record 3/],
        ['return new Map()', /returned a Map object for record 3/],
        ['return [{ a: 1 }, 2]', /an array holding a number at position 1 for record 3/],
        ['return [[{}]]', /an array holding an array at position 0 for record 3/],
      ];
      for (const [body, message] of cases) {
        const script = `function transform(r) { if (r.id !== 3) return {}; ${body} }`;
        const o = failed(await run(batch(script, records(5))));
        assert.equal(o.reason, 'bad_output', body);
        assert.equal(o.recordIndex, 3, body);
        assert.match(o.message, message);
      }
      const p = failed(await run(batch('async function transform(r) { return {} }', records(2))));
      assert.deepEqual([p.reason, p.recordIndex], ['bad_output', 0]);
      assert.match(p.message, /Promise/);
    });

    it('refuses outputs JSON cannot hold (cycles, BigInt), naming the record — also past the first chunk', async () => {
      const cyc = failed(
        await run(
          batch('function transform(r) { const o = { a: 1 }; if (r.id === 700) o.self = o; return o; }', records(1000)),
        ),
      );
      assert.deepEqual([cyc.reason, cyc.recordIndex], ['bad_output', 700]);
      assert.match(
        cyc.message,
        /the output of record 700 cannot be converted to JSON: TypeError: Converting circular structure/,
      );
      const big = failed(
        await run(batch('function transform(r) { return r.id === 4 ? [{}, { n: 1n }] : {}; }', records(9))),
      );
      assert.deepEqual([big.reason, big.recordIndex], ['bad_output', 4]);
      assert.match(big.message, /BigInt/);
    });

    it("with the view's fields named, answers one column per field: values in output order, missing → null, other keys counted", async () => {
      const script = `function transform(r) {
  if (r.id % 5 === 1) return null;
  const o = { name: r.name, id: r.id, f: () => 1, u: undefined };
  if (r.id % 3 === 0) o.more = r.nested;
  if (r.id % 7 === 0) o.toString = 'own';
  return r.id % 5 === 2 ? [o, { id: -r.id, nested: r.nested }] : o;
}`;
      const fields = ['id', 'name', 'nested', 'f', 'toString'];
      const o = okColumns(await run({ ...batch(script, records(300)), fields }));
      const want: Array<[number, unknown[]]> = [];
      const extra: Record<string, number> = {};
      const count = (k: string) => (extra[k] = (extra[k] ?? 0) + 1);
      for (const r of records(300)) {
        if (r.id % 5 === 1) continue;
        want.push([r.id, [r.id, r.name, null, null, r.id % 7 === 0 ? 'own' : null]]);
        if (r.id % 3 === 0) count('more');
        if (r.id % 5 === 2) want.push([r.id, [-r.id, null, r.nested, null, null]]);
      }
      assert.equal(o.rows, want.length);
      assert.deepEqual(
        [...o.sources],
        want.map((w) => w[0]),
      );
      assert.deepEqual(
        o.columns,
        fields.map((_, k) => want.map((w) => w[1][k])),
      );
      assert.deepEqual(o.extra, extra, 'keys outside the fields are counted (functions and undefined are not values)');
      const none = okColumns(
        await run({ ...batch('function transform() { return null }', records(3)), fields: ['a'] }),
      );
      assert.deepEqual([none.rows, none.columns, none.extra], [0, [[]], {}]);
    });

    it("with the fields' types named, typed columns store what JSON columns store: NaN, ±Infinity, -0, booleans, ctx times, a column meeting another type midway", async () => {
      const script = `function transform(r, ctx) {
  const i = r.id;
  return {
    n: i === 7 ? NaN : i === 8 ? -Infinity : i === 9 ? -0 : i === 10 ? null : i % 11 === 0 ? undefined : i * 1.5,
    late: i === 200 ? '12.5' : i,
    early: i === 3 ? true : i,
    b: i % 3 === 0 ? null : i % 3 === 1,
    bmix: i === 150 ? 'true' : i % 2 === 0,
    t: i % 2 ? ctx.timestamp : ctx.received_at,
    tmix: i === 250 ? '2026-01-01T00:00:00Z' : ctx.timestamp,
    s: i === 5 ? 5 : 'x' + i,
    few: i % 7 === 0 ? null : i % 5 === 0 ? undefined : 'k' + (i % 3),
    fewmix: i === 260 ? { o: 1 } : i === 270 ? 'x'.repeat(3) : 'k' + (i % 2),
    many: i < 100 ? 'same' : 'v' + i,
    f: () => 1,
    nope: i % 4 ? i : undefined,
  };
}`;
      const types = [
        'number',
        'number',
        'number',
        'boolean',
        'boolean',
        'date',
        'date',
        'string',
        'string',
        'string',
        'string',
        'number',
        'number',
      ] as const;
      const fields = ['n', 'late', 'early', 'b', 'bmix', 't', 'tmix', 's', 'few', 'fewmix', 'many', 'f', 'missing'];
      const typed = okColumns(await run({ ...batch(script, records(300)), fields, types: [...types] }));
      const plain = okColumns(await run({ ...batch(script, records(300)), fields }));
      const schema = fields.map((name, k) => ({ name, type: types[k]! }));
      assert.deepEqual(
        coerceColumns(typed.columns, typed.extra, schema),
        coerceColumns(plain.columns, plain.extra, schema),
        'the same stored values and counts either way',
      );
      assert.deepEqual([typed.rows, [...typed.sources]], [plain.rows, [...plain.sources]]);
      assert.deepEqual(
        typed.columns[0]!.slice(6, 12),
        [9, null, null, 0, null, null],
        'NaN, -Infinity, null, undefined → null; -0 → 0',
      );
      assert.ok(Object.is(typed.columns[0]![9], 0));
      assert.deepEqual(
        [typed.columns[5]![1], typed.columns[5]![2]],
        [T0 + 1000, T0 + 2000 + 1500],
        'ctx.timestamp / ctx.received_at in a date field: its epoch ms',
      );
      assert.deepEqual(typed.columns[12], new Array(300).fill(null));
      assert.deepEqual(typed.columns[8]!.slice(0, 6), [null, 'k1', 'k2', 'k0', 'k1', null]);
      assert.deepEqual(
        [typed.columns[10]![99], typed.columns[10]![100], typed.columns[10]![299]],
        ['same', 'v100', 'v299'],
        "a string column past the dictionary's size goes on as JSON",
      );
      assert.deepEqual(typed.extra, { nope: 225 });
      const none = okColumns(
        await run({
          ...batch('function transform() { return null }', records(3)),
          fields: ['a', 'b'],
          types: ['number', 'boolean'],
        }),
      );
      assert.deepEqual([none.rows, none.columns], [0, [[], []]]);
    });

    it('with fields named, refuses outputs JSON cannot hold and getters that throw, naming the record', async () => {
      const fields = ['a', 'self', 'n'];
      const cyc = failed(
        await run({
          ...batch(
            'function transform(r) { const o = { a: 1 }; if (r.id === 700) o.self = o; return o; }',
            records(1000),
          ),
          fields,
        }),
      );
      assert.deepEqual([cyc.reason, cyc.recordIndex], ['bad_output', 700]);
      assert.match(
        cyc.message,
        /the output of record 700 cannot be converted to JSON: TypeError: Converting circular structure/,
      );
      const big = failed(
        await run({
          ...batch('function transform(r) { return r.id === 4 ? [{}, { n: 1n }] : {}; }', records(9)),
          fields,
        }),
      );
      assert.deepEqual([big.reason, big.recordIndex], ['bad_output', 4]);
      assert.match(big.message, /BigInt/);
      const getter = failed(
        await run({
          ...batch(
            'function transform(r) { return r.id === 6 ? { get a() { throw new Error("no a") } } : { a: 1 }; }',
            records(9),
          ),
          fields,
        }),
      );
      assert.deepEqual([getter.reason, getter.recordIndex], ['bad_output', 6]);
      assert.match(getter.message, /the output of record 6 cannot be converted to JSON: Error: no a/);
    });

    it('drops function and undefined values as JSON does (the column reads null)', async () => {
      const o = okOutcome(
        await run(batch('function transform(r) { return { a: 1, f: () => 1, u: undefined } }', [{}])),
      );
      assert.deepEqual(o.outputs, [{ a: 1 }]);
    });

    it('an infinite loop times out within the limit, naming the record; the next call works', async () => {
      const started = Date.now();
      const o = failed(
        await run(batch('function transform(r) { if (r.id === 5) while (true) {} return {}; }', records(10))),
      );
      const took = Date.now() - started;
      assert.equal(o.reason, 'timeout');
      assert.equal(o.recordIndex, 5);
      assert.match(o.message, /transform timed out on record 5: the batch did not finish within 400 ms/);
      assert.ok(took < 400 + 5000, `returned after ${took} ms (stopped by the limit, not left running)`);
      await works();
    });

    it('a memory bomb fails with memory, naming the record; the next call works', async () => {
      const o = failed(
        await run(batch('function transform(r) { let a = []; for (;;) a.push(new Array(1e6).fill(1)); }', records(2))),
      );
      // On a machine short of CPU the wall-clock time limit can stop the bomb first: contained either way.
      assert.ok(o.reason === 'memory' || o.reason === 'timeout', o.reason);
      assert.equal(o.recordIndex, 0);
      if (o.reason === 'memory') assert.match(o.message, /transform ran out of memory on record 0 \(limit 128 MB\)/);
      await works();
    });

    it('contains a 100 MB string output (cap or memory limit); the next call works', async () => {
      const o = failed(await run(batch("function transform(r) { return { s: 'x'.repeat(1e8) } }", records(1))));
      assert.ok(o.reason === 'output_too_large' || o.reason === 'memory', o.reason);
      assert.equal(o.recordIndex, 0);
      assert.match(o.message, /record 0/);
      await works();
    });

    it('stops a 100 MB string before converting it to JSON (fast on Node 20 and 22): row outputs, named fields, a later record', async () => {
      const script =
        "function transform(r) { return r.id === 1 ? { id: r.id, s: 'x'.repeat(1e8) } : { id: r.id, s: 'small' } }";
      for (const fields of [null, ['s'], ['id', 's']]) {
        const started = Date.now();
        const o = failed(await run({ ...batch(script, records(3)), ...(fields ? { fields } : {}) }));
        assert.equal(o.reason, 'output_too_large', `fields ${fields}: ${o.reason}: ${o.message}`);
        assert.equal(o.recordIndex, 1);
        assert.match(o.message, /at record 1/);
        // Well inside the 400 ms limit: the string is not copied (Node 22 needs seconds to convert it).
        assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
      }
      await works();
    });

    it('has only the ECMAScript builtins: no require, timers, process, fetch, WebAssembly, shared memory', async () => {
      const script = `function transform() {
  return { t: [typeof require, typeof setTimeout, typeof setInterval, typeof process, typeof fetch, typeof WebAssembly, typeof SharedArrayBuffer, typeof Atomics, typeof module, typeof globalThis.Buffer].join() };
}`;
      const o = okOutcome(await run(batch(script, [{}])));
      assert.equal(o.outputs[0]!.t, Array(10).fill('undefined').join());
    });

    it('keeps each script in its own context: globals and prototypes one script changes do not reach another', async () => {
      const evil = `Array.prototype.push = function () { return 0 }; JSON.stringify = () => '[]'; String.prototype.slice = () => '';
globalThis.shared = 'evil';
function transform(r) { return { id: r.id, push: [].push.length } }`;
      const e = okOutcome(await run(batch(evil, records(3))));
      assert.deepEqual(
        e.outputs.map((x) => x.id),
        [0, 1, 2],
        'the harness captured its builtins before the script ran',
      );
      const other = okOutcome(
        await run(batch('function transform(r) { return { shared: typeof shared, p: [1].push(2) } }', records(1))),
      );
      assert.deepEqual(other.outputs[0], { shared: 'undefined', p: 2 });
    });

    it('finds transform however it is declared', async () => {
      for (const script of [
        'const transform = (r) => ({ id: r.id })',
        'let transform = function (r) { return { id: r.id } }',
        'var transform = (r) => ({ id: r.id })',
        'globalThis.transform = (r) => ({ id: r.id })',
      ]) {
        assert.deepEqual(okOutcome(await run(batch(script, records(1)))).outputs, [{ id: 0 }], script);
      }
    });

    it('reports a script that does not load: syntax (with place), no transform, top-level throw or loop', async () => {
      const syn = failed(await run(batch('function transform(r) {\n  return r +;\n}', records(1))));
      assert.deepEqual(
        [syn.reason, syn.recordIndex, syn.message],
        ['syntax', null, "SyntaxError: Unexpected token ';' (line 2, column 13)"],
      );
      for (const script of ['var y = 1;', 'const transform = 5;', 'function transformer() {}']) {
        assert.equal(failed(await run(batch(script, records(1)))).reason, 'no_transform_function', script);
      }
      const top = failed(
        await run(batch('const a = null;\nconst b = a.x;\nfunction transform() { return {} }', records(1))),
      );
      assert.deepEqual([top.reason, top.recordIndex], ['threw', null]);
      assert.equal(
        top.message,
        "the script threw while loading: TypeError: Cannot read properties of null (reading 'x') (line 2, column 13)",
      );
      const loop = failed(await run(batch('for (;;) {}\nfunction transform() { return {} }', records(1))));
      assert.deepEqual([loop.reason, loop.recordIndex], ['timeout', null]);
    });

    it('runs an empty batch', async () => {
      assert.equal(okOutcome(await run(batch('function transform() { return {} }', []))).rows, 0);
    });
  });
}
