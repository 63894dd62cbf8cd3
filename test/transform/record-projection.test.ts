import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { recordReads, type ReadTree } from '../../src/transform/script-reads.js';
import { projectionOf, projectRecord } from '../../src/transform/record-projection.js';
import { TransformSandbox } from '../../src/transform/sandbox.js';
import { makeNestedRecords } from '../../bench/transform/nested-records.js';
import { NESTED_VIEW, FLAT_VIEW, MIXED_VIEW } from '../../bench/transform/view-scripts.js';
import { batch } from './transform-contract.js';
import { writeTransformScript } from '../../src/transform/script-writer.js';

/** A generated (auto mode) script reading nested status fields, as the mapping generator writes it. */
const GENERATED = writeTransformScript({
  versionId: 'sch_1',
  versionNumber: 1,
  fields: [
    {
      name: 'user',
      type: 'string',
      paths: [
        ['user', 'screen_name'],
        ['user', 'name'],
      ],
      note: 'exact match',
    },
    { name: 'tags', type: 'array', paths: [['entities', 'hashtags', null, 'text']], note: 'leaf name' },
    { name: 'followers', type: 'number', paths: [['user', 'followers_count']], note: 'exact match' },
    { name: 'place', type: 'string', paths: [['place', 'full_name']], note: 'optional key' },
  ],
});

/**
 * Records cut down to what their script reads (docs/views.md, "What the script is given"): the
 * analysis of scripts, the byte-level cut, and — the contract — every script answering the same
 * over cut and whole records, in a real isolate.
 */

/** A read tree as plain JSON: 'whole', '?' (only tested), or an object of keys. */
function shown(t: ReadTree | null): unknown {
  if (t === null) return null;
  if (t.whole) return 'whole';
  if (t.keys.size === 0) return '?';
  return Object.fromEntries([...t.keys].map(([k, v]) => [k, shown(v)]));
}
const reads = (script: string) => shown(recordReads(script));

/** `text` (one record, maybe with white space around it) cut for `script`. */
function cut(script: string, text: string): string {
  const bytes = Buffer.from(text + '\n{"next":1}');
  const out = Buffer.alloc(bytes.length);
  const p = projectionOf(`test:${script}`, script);
  assert.ok(p !== null, 'the script has a projection');
  const end = projectRecord(bytes, 0, Buffer.byteLength(text), p, out, 0);
  return out.subarray(0, end).toString();
}

describe('script reads: what a script reads of its record', () => {
  it('follows static member chains, optional chains, literal keys and destructuring', () => {
    assert.deepEqual(reads(NESTED_VIEW.script), {
      id_str: 'whole',
      user: { screen_name: 'whole', followers_count: 'whole' },
      entities: { hashtags: 'whole' },
      extended_entities: '?',
    });
    assert.deepEqual(reads(FLAT_VIEW.script), { event: 'whole', ts: 'whole', ctx: { ip: 'whole', ua: 'whole' } });
    assert.deepEqual(reads("function transform(r) { return { a: r?.a?.b, c: r['c'].d, e: r.items[0].name } }"), {
      a: { b: 'whole' },
      c: { d: 'whole' },
      items: { 0: { name: 'whole' } },
    });
    assert.deepEqual(
      reads('function transform({ a, b: { c, d: { e = 1 } }, "f-g": h }, ctx) { return { a, c, e, h } }'),
      { a: 'whole', b: { c: 'whole', d: { e: 'whole' } }, 'f-g': 'whole' },
    );
    assert.deepEqual(reads('function transform(r) { const { x, y: [first] } = r.p; return { x, first } }'), {
      p: { x: 'whole', y: 'whole' },
    });
    assert.deepEqual(reads('function transform(r = {}) { return { n: r.n } }'), { n: 'whole' });
    assert.equal(reads('function transform() { return { n: 1 } }'), '?');
  });

  it('gives whole what is used as a value: passed, returned, iterated, compared, keys of, read with a computed key, called on', () => {
    assert.deepEqual(reads('function transform(r) { return { k: Object.keys(r.a), n: r.b.c.length } }'), {
      a: 'whole',
      b: { c: { length: 'whole' } },
    });
    assert.deepEqual(
      reads('function transform(r) { return { t: r.tags.map((x) => x.id), u: r.user.name.toUpperCase() } }'),
      { tags: 'whole', user: { name: 'whole' } },
    );
    assert.deepEqual(reads('function transform(r) { const k = "a"; return { v: r.m[k] } }'), { m: 'whole' });
    assert.deepEqual(
      reads(
        'function transform(r) { for (const x of r.list) {} for (const k in r.obj) {} return { s: `${r.t.u}`, e: r.p === r.q, i: "z" in r.w } }',
      ),
      { list: 'whole', obj: 'whole', t: { u: 'whole' }, p: 'whole', q: 'whole', w: 'whole' },
    );
    assert.deepEqual(reads('function transform(r) { const { a, ...rest } = r.o; return { a, rest } }'), { o: 'whole' });
    assert.deepEqual(
      reads(
        'function transform(r) { r.a.b = 1; r.c.n += 1; delete r.d.e; return { a: r.a.b, x: r.f || 0, y: r.g ?? 0 } }',
      ),
      { a: { b: 'whole' }, c: { n: 'whole' }, d: '?', f: 'whole', g: 'whole' },
    );
  });

  it('gives objects only tested as "?" (typeof, !, == null, === undefined, tests, the left of &&)', () => {
    assert.deepEqual(
      reads(
        'function transform(r) { if (r.a) {} while (!r.b) break; return { c: typeof r.c, d: r.d == null, e: r.e !== undefined, f: r.f === void 0, g: r.g ? 1 : 0, h: r.h && r.h.i } }',
      ),
      { a: '?', b: '?', c: '?', d: '?', e: '?', f: '?', g: '?', h: { i: 'whole' } },
    );
  });

  it("reads a generated script's get(record, [keys]) helper calls as the paths they name", () => {
    assert.deepEqual(reads(GENERATED), {
      user: { screen_name: 'whole', name: 'whole', followers_count: 'whole' },
      entities: { hashtags: 'whole' },
      place: { full_name: 'whole' },
    });
    // Only the helper exactly as generated: changed, it is the script's own code again.
    assert.equal(reads(GENERATED.replace('return value === undefined ? null : value;', 'return value;')), null);
    assert.equal(
      reads(GENERATED.replace('get(record, ["place", "full_name"])', 'get(record, ["place", ctx.view_id])')),
      null,
    );
    assert.equal(reads(GENERATED + '\nget = (v) => v;\n'), null);
  });

  it('gives the whole record when the record itself is used, or when the script could see around the analysis', () => {
    const whole = [
      'function transform(r) { return r }',
      'function transform(r) { return { ...r } }',
      'function transform(r) { return { n: JSON.stringify(r) } }',
      'function transform(r) { return { k: Object.keys(r) } }',
      'function transform(r) { return { h: r.hasOwnProperty("a") } }',
      'function transform(r) { return { a: r[Object.keys(r)[0]] } }',
      'function transform(r) { return { a: arguments[0].a } }',
      'function transform(r) { return { a: eval("r.a") } }',
      'function transform(r) { with (r) { return { a } } }',
      'function transform(r) { const f = (r) => r.a; return { a: f(r) } }',
      'function transform(r) { try { return { a: r.a } } catch (r) { return null } }',
      'function transform(r) { let undefined = 1; return { a: r.a === undefined } }',
      'function transform(r) { return { a: r.a } } function transform(r) { return r }',
      'function transform(r) { return { a: r.a } } transform = (r) => r',
      'const transform = (r) => ({ a: r.a })',
      'function transform(r) { return { a: r.a } } Object.defineProperty(Object.prototype, "x", { get() { return Object.keys(this) } })',
      'function transform(r) { return { a: r.a.constructor } }',
      'function transform(r) { return { a: r.a.__proto__ } }',
      'function transform(r) { ({ a: r } = { a: 1 }); return { a: r.a } }',
      'function transform([first]) { return { first } }',
      'function transform(r) { return { a: r.a } ',
    ];
    for (const script of whole) assert.equal(reads(script), null, script);
  });

  it('never fails the batch: a script nested past the stack gets whole records', () => {
    const deep = 'function transform(r) { return { a: ' + '['.repeat(100_000) + 'r.a' + ']'.repeat(100_000) + ' } }';
    assert.equal(projectionOf('deep', deep), null);
  });
});

describe('record projection: the bytes given to the script', () => {
  const script =
    'function transform(r) { return { a: r.a, b: r.o.b, t: typeof r.big, l: r.list[0], z: r.s && r.s.z } }';

  it('keeps the keys read, in the order sent, with their bytes as sent; tested objects as {} and []', () => {
    const rec =
      ' { "x" : [1, {"a": 2}], "o": {"c": "\\"}{", "b": 1.50e3}, "a": "é\\u00e9", "big": {"k": [1,2,3]}, "list": [ {"y": 1} ], "s": [], "q": null } ';
    assert.equal(cut(script, rec), '{"o":{"b":1.50e3},"a":"é\\u00e9","big":{},"list":[ {"y": 1} ],"s":[]}');
    assert.equal(cut(script, '{"big":[1,2],"s":{"z":{"deep":true},"w":1}}'), '{"big":[],"s":{"z":{"deep":true}}}');
    assert.equal(cut(script, '{"a":null,"o":"text","big":7}'), '{"a":null,"o":"text","big":7}');
    assert.equal(cut(script, '{}'), '{}');
    assert.equal(cut('function transform() { return {} }', '{"a":1,"b":{"c":2}}'), '{}');
  });

  it('matches keys sent with escapes, and long keys', () => {
    const long = 'k'.repeat(40);
    assert.equal(
      cut(`function transform(r) { return { a: r.a, l: r.${long} } }`, `{"\\u0061":1,"b":2,"${long}":3}`),
      `{"\\u0061":1,"${long}":3}`,
    );
  });

  it('gives the record whole when a key it reads is sent twice, or the bytes are not one object', () => {
    const twice = '{"a":1,"o":{"b":1},"a":2}';
    assert.equal(cut(script, twice), twice);
    assert.equal(cut(script, '{"o":{"b":1,"b":2}}'), '{"o":{"b":1,"b":2}}');
    // Repeated keys the script does not read are dropped with the rest.
    assert.equal(cut(script, '{"x":1,"x":2,"a":3}'), '{"a":3}');
    assert.equal(cut(script, '[1,2]'), '[1,2]');
    assert.equal(cut(script, '{"a":1'), '{"a":1');
    assert.equal(cut(script, '{"a":1} {"a":2}'), '{"a":1} {"a":2}');
  });
});

describe('record projection: scripts answer the same over cut and whole records (real isolate)', () => {
  const sb = new TransformSandbox({ cpuTimeMsPerCall: 5000 });
  after(() => sb.dispose());

  /** The outcome of `script` over `texts` given whole, and cut. */
  function both(script: string, texts: string[]) {
    const p = projectionOf(`contract:${script}`, script);
    assert.ok(p !== null, `the script has a projection: ${script}`);
    const cutTexts = texts.map((t) => {
      const bytes = Buffer.from(t);
      const out = Buffer.alloc(bytes.length);
      return out.subarray(0, projectRecord(bytes, 0, bytes.length, p, out, 0)).toString();
    });
    const whole = {
      ...batch(script, []),
      recordsText: texts.join('\u001e'),
      receivedAt: new Float64Array(texts.length).fill(1.7e12),
      timestamp: new Float64Array(texts.length).fill(1.7e12),
    };
    return {
      whole: sb.run(whole),
      cut: sb.run({ ...whole, scriptHash: `${script}#cut`, recordsText: cutTexts.join('\u001e') }),
      saved: texts.join('').length - cutTexts.join('').length,
    };
  }

  it('the bench views over nested statuses in several key orders, and flat events', () => {
    const statuses = makeNestedRecords(300, 7, { keyOrders: 4 }).map((r) => JSON.stringify(r));
    for (const view of [NESTED_VIEW, MIXED_VIEW]) {
      const r = both(view.script, statuses);
      assert.deepEqual(r.cut, r.whole);
      assert.equal(r.whole.status, 'ok');
      assert.ok(r.saved > statuses.join('').length / 2, 'most of each status is not given');
    }
    const generated = both(GENERATED, statuses);
    assert.deepEqual(generated.cut, generated.whole);
    assert.ok(generated.saved > statuses.join('').length / 2);
    const flat = Array.from({ length: 50 }, (_, i) =>
      JSON.stringify({ event: `e${i}`, ts: i, ctx: { ip: '10.0.0.1', ua: 'x', extra: [i] }, other: { deep: i } }),
    );
    assert.deepEqual(both(FLAT_VIEW.script, flat).cut, both(FLAT_VIEW.script, flat).whole);
  });

  it('scripts reading, testing, destructuring, failing and returning subtrees', () => {
    const texts = [
      '{"user":{"name":"ann","tags":["a","b"],"meta":{"x":1}},"media":[{"url":"u1"}],"n":3,"pad":"' +
        'p'.repeat(500) +
        '"}',
      '{"user":{"name":"bob"},"n":null,"opt":{"on":true}}',
      '{"user":{"name":"cy","meta":null},"media":[],"n":-0,"opt":{"on":false,"more":[1]}}',
      '{"user":"not an object","n":1e400}',
      '{"__proto__":{"name":"proto"},"user":{"__proto__":{"name":"inner"},"name":"dee"}}',
    ];
    const scripts = [
      'function transform(r) { return { name: r.user.name, n: r.n, has: !!r.media, first: r.media && r.media[0] ? r.media[0].url : null } }',
      'function transform(r) { return { meta: r.user.meta, t: typeof r.opt, on: r.opt?.on ?? null } }',
      'function transform({ user: { name, tags = [] }, opt }) { return { name, tags: tags.join("|"), opt: opt === undefined ? null : Object.keys(opt).join() } }',
      'function transform(r) { if (r.user.meta == null) return null; return { x: r.user.meta.x } }',
      'function transform(r) { return { l: r.user.name.length, u: r.user.name.toUpperCase() } }',
      'function transform(r) { r.user.seen = true; return { seen: r.user.seen, name: r.user.name } }',
      'function transform(r) { return [{ a: r.n }, { a: r.user.name }] }',
    ];
    for (const script of scripts) {
      const r = both(script, texts);
      assert.deepEqual(r.cut, r.whole, script);
    }
    // A script that fails fails the same way, naming the same record.
    const failing = both('function transform(r) { return { d: r.opt.on } }', texts);
    assert.equal(failing.whole.status, 'failed');
    assert.deepEqual(failing.cut, failing.whole);
  });
});
