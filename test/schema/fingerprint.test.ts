import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Fingerprinter,
  MAX_KEY_CHARS,
  REFUSED_NOT_OBJECT,
  REFUSED_TOO_MANY_FIELDS,
} from '../../src/schema/fingerprint.js';
import type { FingerprintRules } from '../../src/schema/rules.js';
import type { Shape } from '../../src/schema/shape.js';

const base: FingerprintRules = { opaquePaths: [], trackedPaths: [], maxDepth: 10 };

function shapeOf(record: unknown, rules: Partial<FingerprintRules> = {}): Shape {
  const out = new Fingerprinter({ ...base, ...rules }).describe(record);
  assert.notEqual(typeof out, 'number', `record was refused: ${String(out)}`);
  return out as Shape;
}

function sig(record: unknown, rules: Partial<FingerprintRules> = {}): string {
  return shapeOf(record, rules).signature;
}

// Table: record → canonical signature (docs/schema.md documents this format).
const signatures: Array<[string, unknown, Partial<FingerprintRules>, string]> = [
  ['flat scalars, sorted by path', { b: 1, a: 'x', c: true, d: null }, {}, 'a:string,b:number,c:boolean,d:null'],
  ['integers and floats are one type', { n: 1.5 }, {}, 'n:number'],
  ['empty object', {}, {}, ''],
  ['nested objects', { user: { id: 1, name: 'a' } }, {}, 'user:object,user.id:number,user.name:string'],
  ['array element union', { tags: ['a', 1, 'b'] }, {}, 'tags:array,tags[]:number,tags[]:string'],
  [
    'array of objects merges keys',
    { items: [{ sku: 'a' }, { qty: 2 }] },
    {},
    'items:array,items[]:object,items[].qty:number,items[].sku:string',
  ],
  ['empty array', { tags: [] }, {}, 'tags:array'],
  ['odd keys are bracketed', { 'a.b': 1, 'x y': 2 }, {}, '["a.b"]:number,["x y"]:number'],
  ['max depth 1 keeps only top level types', { user: { id: 1 }, tags: [1] }, { maxDepth: 1 }, 'tags:array,user:object'],
  ['max depth 2', { a: { b: { c: 1 } } }, { maxDepth: 2 }, 'a:object,a.b:object'],
  [
    'opaque path hides contents',
    { meta: { x: 1, y: 'a' }, id: 1 },
    { opaquePaths: [['meta']] },
    'id:number,meta:object',
  ],
  [
    'tracked child of opaque path stays',
    { meta: { v: 1, x: 2 } },
    { opaquePaths: [['meta']], trackedPaths: [['meta', 'v']] },
    'meta:object,meta.v:number',
  ],
  ['opaque array covers its elements', { items: [{ a: 1 }, 'x'] }, { opaquePaths: [['items']] }, 'items:array'],
  [
    'tracked child inside opaque array elements',
    { items: [{ sku: 'a', z: 1 }] },
    { opaquePaths: [['items']], trackedPaths: [['items', 'sku']] },
    'items:array,items[].sku:string',
  ],
  ['tracked path outside any opaque path is a no-op', { a: 1 }, { trackedPaths: [['a']] }, 'a:number'],
  [
    'deep tracked path through opaque',
    { m: { a: { b: 1, c: 2 }, d: 3 } },
    { opaquePaths: [['m']], trackedPaths: [['m', 'a', 'b']] },
    'm:object,m.a:object,m.a.b:number',
  ],
];

for (const [name, record, rules, expected] of signatures) {
  test(`signature: ${name}`, () => {
    assert.equal(sig(record, rules), expected);
  });
}

test('key order does not change the hash; types do', () => {
  const fp = new Fingerprinter(base);
  const k1 = fp.fingerprint({ a: 1, b: 'x', c: { d: true } });
  const k2 = fp.fingerprint({ c: { d: false }, b: 'y', a: 2 });
  const k3 = fp.fingerprint({ a: '1', b: 'x', c: { d: true } });
  assert.equal(k1, k2);
  assert.notEqual(k1, k3);
});

test('the fast path and describe agree on the hash', () => {
  const fp = new Fingerprinter(base);
  const rec = { items: [{ sku: 'a' }, { sku: 'b', qty: 1 }], user: { id: 1 } };
  fp.fingerprint(rec);
  const hex = fp.last.a.toString(16).padStart(8, '0') + fp.last.b.toString(16).padStart(8, '0');
  assert.equal((fp.describe(rec) as Shape).hash, hex);
});

test('repeated array elements count once', () => {
  assert.equal(sig({ xs: [1, 2, 3] }), sig({ xs: [4] }));
  assert.equal(sig({ xs: [{ a: 1 }, { a: 2 }] }), sig({ xs: [{ a: 3 }] }));
});

test('opaque contents do not take part in identity', () => {
  const rules = { opaquePaths: [['by_day']] };
  assert.equal(
    shapeOf({ by_day: { '2024-01-01': 1 } }, rules).hash,
    shapeOf({ by_day: { '2024-01-02': 5, '2024-01-03': 'x' } }, rules).hash,
  );
  assert.notEqual(shapeOf({ by_day: { '2024-01-01': 1 } }).hash, shapeOf({ by_day: { '2024-01-02': 1 } }).hash);
});

test('bad input: non-object records are refused with a reason code', () => {
  const fp = new Fingerprinter(base);
  for (const v of [1, 'x', null, true, [1, 2], []]) assert.equal(fp.fingerprint(v), REFUSED_NOT_OBJECT);
});

test('bad input: 10,000 levels of nesting are classified by the first max_depth levels', () => {
  const deep = JSON.parse('{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000));
  const s = shapeOf(deep, { maxDepth: 3 });
  assert.equal(s.signature, 'a:object,a.a:object,a.a.a:object');
  const arr = JSON.parse('{"a":' + '['.repeat(10_000) + ']'.repeat(10_000) + '}');
  assert.equal(shapeOf(arr).entries.length, 10);
});

test('bad input: enormous keys take part by their first characters', () => {
  const long = 'k'.repeat(1_000_000);
  const s = shapeOf({ [long]: 1 });
  assert.equal(s.entries.length, 1);
  assert.equal(s.entries[0]!.segments[0]!.length, MAX_KEY_CHARS + 1);
  assert.equal(shapeOf({ [long + 'z']: 1 }).hash, s.hash);
});

test('bad input: too many fields is refused, not a crash', () => {
  const wide: Record<string, number> = {};
  for (let i = 0; i < 10_000; i++) wide['f' + i] = i;
  assert.equal(new Fingerprinter(base).fingerprint(wide), REFUSED_TOO_MANY_FIELDS);
  const wideArray = { xs: Array.from({ length: 10_000 }, (_, i) => ({ ['k' + i]: 1 })) };
  assert.equal(new Fingerprinter(base).fingerprint(wideArray), REFUSED_TOO_MANY_FIELDS);
});

test('bad input: numbers beyond float64 are numbers', () => {
  const rec = JSON.parse('{"big": 1e400, "long": 123456789012345678901234567890}');
  assert.equal(sig(rec), 'big:number,long:number');
});

test('a fingerprinter stays right past its path cache', () => {
  const fp = new Fingerprinter(base);
  for (let i = 0; i < 60_000; i++) fp.fingerprint({ ['k' + i]: i });
  const a = fp.describe({ k59999: 1, z: 'x' }) as Shape;
  const b = new Fingerprinter(base).describe({ z: 'y', k59999: 2 }) as Shape;
  assert.equal(a.hash, b.hash);
});

test('a fingerprinter that has seen many records (its sibling-order guesses warm) agrees with a fresh one on every record', () => {
  // Deterministic pseudo-random records: keys from a small pool in shuffled orders and subsets,
  // nested objects and arrays, long keys and values of every type.
  let seed = 12345;
  const rand = (n: number) => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n;
  const pool = ['a', 'b', 'c', 'd', 'e', 'x'.repeat(MAX_KEY_CHARS + 3), 'x'.repeat(MAX_KEY_CHARS) + 'y'];
  const value = (depth: number): unknown => {
    switch (rand(depth > 2 ? 4 : 6)) {
      case 0:
        return rand(100);
      case 1:
        return 's';
      case 2:
        return rand(2) === 0;
      case 3:
        return null;
      case 4:
        return record(depth + 1);
      default:
        return [value(depth + 1), value(depth + 1)];
    }
  };
  const record = (depth: number): Record<string, unknown> => {
    const keys = pool.filter(() => rand(3) > 0);
    for (let i = keys.length - 1; i > 0; i--) {
      const j = rand(i + 1);
      [keys[i], keys[j]] = [keys[j]!, keys[i]!];
    }
    const out: Record<string, unknown> = {};
    for (const k of keys) out[k] = value(depth);
    return out;
  };
  for (const rules of [base, { ...base, opaquePaths: [['b']], trackedPaths: [['b', 'c']] }, { ...base, maxDepth: 2 }]) {
    const warm = new Fingerprinter(rules);
    for (let i = 0; i < 3000; i++) {
      const r = JSON.parse(JSON.stringify(record(0))) as Record<string, unknown>;
      assert.equal(
        warm.fingerprint(r),
        new Fingerprinter(rules).fingerprint(r),
        `record ${i}: ${JSON.stringify(r).slice(0, 200)}`,
      );
    }
  }
});
