import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecordTemplates, matchedEventTime } from '../../src/pipeline/record-templates.js';
import { K_ARRAY, stringValue, type Template } from '../../src/records/template-slots.js';
import { Fingerprinter } from '../../src/schema/fingerprint.js';
import { hashHex } from '../../src/schema/hash.js';
import type { FingerprintRules } from '../../src/schema/rules.js';
import { FieldLayouts, SpeculativeFields } from '../../src/pipeline/speculative-fields.js';
import type { FileSpec } from '../../src/pipeline/file-plan.js';

const buf = (text: string) => Buffer.from(text, 'utf8');

function learned(text: string, key = 1): { templates: RecordTemplates; template: Template } {
  const templates = new RecordTemplates();
  const b = buf(text);
  const template = templates.learn(b, 0, b.length, key, `hash${key}`);
  assert.ok(template, `learned from ${text}`);
  return { templates, template };
}

function match(templates: RecordTemplates, text: string): Template | null {
  // Bytes around the record: a match must stay inside its range.
  const b = buf(`9"${text}1,`);
  return templates.match(b, 2, b.length - 2);
}

/** Deterministic pseudo-random numbers (no flaky seeds). */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

function numberText(r: () => number): string {
  const digits = (n: number) => Array.from({ length: n }, () => Math.floor(r() * 10)).join('');
  const int = r() < 0.2 ? '0' : String(1 + Math.floor(r() * 9)) + digits(Math.floor(r() * 20));
  const frac = r() < 0.5 ? '' : '.' + digits(1 + Math.floor(r() * 20));
  const exp =
    r() < 0.7
      ? ''
      : (r() < 0.5 ? 'e' : 'E') +
        ['', '+', '-'][Math.floor(r() * 3)] +
        String(Math.floor(r() * (r() < 0.9 ? 30 : 400)));
  return (r() < 0.3 ? '-' : '') + int + frac + exp;
}

test('a record matching a template is read as JSON.parse reads it: numbers, strings and booleans', () => {
  // `s` is the JSON text of a string: plain, or with the escapes JSON has.
  const skeleton = (s: string, n: string, b: boolean) => `{"s":${s},"n":${n},"b":${b},"z":null,"o":{"t":${s}}}`;
  const { templates, template } = learned(skeleton('"a"', '1', true));
  assert.deepEqual([...template.kinds], [1, 2, 3, 1]);
  assert.deepEqual(template.paths, ['["s"]', '["n"]', '["b"]', '["o","t"]']);
  assert.ok(template.nulls.has('["z"]') && template.objects.has('["o"]'));
  const r = rng(7);
  const strings = [
    '""',
    '"plain"',
    '"héllo ✓"',
    '"日本語"',
    '"emoji 🎉"',
    `"it's"`,
    '"del\u007f"',
    JSON.stringify('quote " back \\ nl \n tab \t ctl \u0001'),
    '"\\u00e9\\u2713\\/\\b\\f\\r"',
    '"\\ud83c\\udf89 pair, \\udc00 lone"',
  ];
  for (let i = 0; i < 5000; i++) {
    const s = strings[i % strings.length]!;
    const n = numberText(r);
    const text = skeleton(s, n, i % 2 === 0);
    const parsed = JSON.parse(text) as { s: string; n: number; b: boolean; o: { t: string } };
    const b = buf(text);
    assert.equal(templates.match(b, 0, b.length), template, text);
    const v = templates.values;
    assert.equal(stringValue(v, b, 0), parsed.s);
    assert.equal(v.escaped[0], s.includes('\\') ? 1 : 0);
    assert.ok(Object.is(v.nums[1], parsed.n), `${n}: ${v.nums[1]} vs ${parsed.n}`);
    assert.equal(v.nums[2] === 1, parsed.b);
    assert.equal(stringValue(v, b, 3), parsed.o.t);
  }
});

test('records a template cannot read exactly are not matched (they take the slow path)', () => {
  const { templates, template } = learned('{"s":"a","n":1,"b":true,"o":{"t":null}}');
  assert.equal(match(templates, '{"s":"zz","n":-2.5e3,"b":false,"o":{"t":null}}'), template);
  for (const text of [
    '{"s":"a\\xb","n":1,"b":true,"o":{"t":null}}', // escapes JSON does not have
    '{"s":"a\\u12G4","n":1,"b":true,"o":{"t":null}}',
    '{"s":"a\\u12","n":1,"b":true,"o":{"t":null}}',
    '{"s":"a\tb","n":1,"b":true,"o":{"t":null}}', // a raw control character (invalid JSON)
    '{"s": "a","n":1,"b":true,"o":{"t":null}}', // other whitespace
    '{"n":1,"s":"a","b":true,"o":{"t":null}}', // another key order
    '{"s":"a","n":1,"b":true,"o":{"t":null},"x":1}', // an extra key
    '{"s":"a","n":1,"b":true,"o":{}}', // a missing key
    '{"s":"a","n":1,"b":true,"o":{"t":1}}', // a value where the template has null
    '{"s":1,"n":1,"b":true,"o":{"t":null}}', // another type
    '{"s":"a","n":"1","b":true,"o":{"t":null}}',
    '{"s":"a","n":[1],"b":true,"o":{"t":null}}',
    '{"s":"a","n":01,"b":true,"o":{"t":null}}', // not JSON numbers
    '{"s":"a","n":1.,"b":true,"o":{"t":null}}',
    '{"s":"a","n":.5,"b":true,"o":{"t":null}}',
    '{"s":"a","n":-,"b":true,"o":{"t":null}}',
    '{"s":"a","n":1e,"b":true,"o":{"t":null}}',
    '{"s":"a","n":1e+,"b":true,"o":{"t":null}}',
    '{"s":"a","n":+1,"b":true,"o":{"t":null}}',
    '{"s":"a","n":1,"b":tru,"o":{"t":null}}',
    '{"s":"a","n":1,"b":truex,"o":{"t":null}}',
    '{"s":"a","n":1,"b":true,"o":{"t":null}}}', // trailing bytes
    '{"s":"a","n":1,"b":true,"o":{"t":null}', // truncated
    '{"s":"a',
  ]) {
    assert.equal(match(templates, text), null, text);
  }
});

test('templates are not learned from records they could misread', () => {
  const templates = new RecordTemplates();
  const deep = '{"a":'.repeat(40) + '1' + '}'.repeat(40);
  for (const [i, text] of [
    '{"a":[1,{"b":1}]}',
    '{"a":[1,[2]]}',
    '{"a":[{"b":1,"b":2}]}',
    '{"a":1,"a":"x"}',
    '{"a\\u0062":1}',
    '[{"a":1}]',
    '"text"',
    '{"a":1} {"a":2}',
    deep,
  ].entries()) {
    const b = buf(text);
    assert.equal(templates.learn(b, 0, b.length, 100 + i, 'h'), null, text);
  }
  const invalid = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]);
  assert.equal(templates.learn(invalid, 0, invalid.length, 200, 'h'), null, 'not valid UTF-8');
  const ok = buf('{"a":1,"l":[1,"x",null,true]}');
  assert.ok(templates.learn(ok, 0, ok.length, 1, 'h'));
  assert.equal(templates.wants(-1), false, 'refused rows have no shape to learn');
});

test('what a template may hold is bounded: path text, entries, literal bytes, and memory per processor', () => {
  const templates = new RecordTemplates();
  // Nesting under long keys makes every path longer than the last (the text grows quadratically).
  const long = (d: number) => `k${d}`.padEnd(250, 'x');
  const deep =
    Array.from({ length: 29 }, (_, d) => `{"${long(d)}":`).join('') +
    '{' +
    Array.from({ length: 2000 }, (_, k) => `"${k}":null`).join(',') +
    '}' +
    '}'.repeat(29);
  const record = `{"x":1,"d":${deep}}`;
  const b = buf(record);
  assert.equal(templates.learn(b, 0, b.length, 1, 'h'), null, 'too much path text');
  const wide = buf(`{${Array.from({ length: 1100 }, (_, k) => `"${k}":null`).join(',')}}`);
  assert.equal(templates.learn(wide, 0, wide.length, 2, 'h'), null, 'too many entries (nulls count)');
  const keys = buf(`{${Array.from({ length: 80 }, (_, k) => `"${String(k).padEnd(250, 'k')}":1`).join(',')}}`);
  assert.equal(templates.learn(keys, 0, keys.length, 3, 'h'), null, 'too many literal bytes');

  const budget = { bytes: 2000 };
  const small = new RecordTemplates(budget);
  const one = buf('{"a":1,"b":"x"}');
  assert.ok(small.learn(one, 0, one.length, 1, 'h'));
  const spent = 2000 - budget.bytes;
  assert.ok(spent > 0 && spent < 1000, `a small template costs little (${spent})`);
  assert.equal(
    small.learn(one, 0, one.length, 1, 'h'),
    small.match(one, 0, one.length),
    'the same skeleton again costs nothing',
  );
  assert.equal(2000 - budget.bytes, spent);
  const big = buf(`{${Array.from({ length: 40 }, (_, k) => `"field_${k}":${k}`).join(',')}}`);
  assert.equal(small.learn(big, 0, big.length, 2, 'h'), null, 'past the budget');
  assert.equal(small.wants(2), true, 'a shape past the budget is not given up');
});

test('a record a template cannot be learned from does not stop its shape from being learned', () => {
  const templates = new RecordTemplates();
  const odd = buf('{"\\u0061":1}');
  assert.equal(templates.learn(odd, 0, odd.length, 5, 'h'), null);
  assert.equal(templates.wants(5), true);
  const plain = buf('{"a":1}');
  assert.ok(templates.learn(plain, 0, plain.length, 5, 'h'));
  for (let k = 0; k < 8; k++) templates.learn(odd, 0, odd.length, 6, 'h');
  assert.equal(templates.wants(6), false, 'a shape that keeps failing is given up');
});

test('shapes that start alike share steps of the trie and each record finds its own template', () => {
  const templates = new RecordTemplates();
  const texts = [
    '{"x":1}',
    '{"x":"s"}',
    '{"x":true}',
    '{"x":null}',
    '{"x":1,"y":2}',
    '{"x":{"y":1}}',
    '{}',
    ' {"x":1} ',
  ];
  const learnedTemplates = texts.map((t, key) => {
    const b = buf(t);
    return templates.learn(b, 0, b.length, key, `h${key}`);
  });
  assert.ok(learnedTemplates.every((t) => t !== null));
  const again = buf('{"x":5}');
  assert.equal(
    templates.learn(again, 0, again.length, 0, 'h0'),
    learnedTemplates[0],
    'the same skeleton is one template',
  );
  for (const [text, key] of [
    ['{"x":-3}', 0],
    ['{"x":""}', 1],
    ['{"x":false}', 2],
    ['{"x":null}', 3],
    ['{"x":0,"y":1e2}', 4],
    ['{"x":{"y":-0}}', 5],
    ['{}', 6],
    [' {"x":9} ', 7],
  ] as const) {
    assert.equal(match(templates, text)?.key, key, text);
  }
  assert.equal(match(templates, '{"x":1,"y":"s"}'), null);
});

test('arrays of scalars are part of a skeleton: elements are values, the length is fixed', () => {
  const { templates, template } = learned('{"tags":["a",1,null,true],"none":[],"n":1}');
  assert.deepEqual(template.arrays.get('["tags"]'), [0, 1, -1, 2]);
  assert.deepEqual(template.arrays.get('["none"]'), []);
  assert.deepEqual(template.paths, ['["tags",null]', '["tags",null]', '["tags",null]', '["n"]']);
  const b = buf('{"tags":["\\u00e9",-2.5e1,null,false],"none":[],"n":7}');
  assert.equal(templates.match(b, 0, b.length), template);
  assert.equal(stringValue(templates.values, b, 0), 'é');
  assert.equal(templates.values.nums[1], -25);
  assert.equal(templates.values.nums[2], 0);
  for (const text of [
    '{"tags":["a",1,null],"none":[],"n":1}',
    '{"tags":["a",1,null,true,1],"none":[],"n":1}',
    '{"tags":["a",1,1,true],"none":[],"n":1}',
    '{"tags":["a",1,null,true],"none":[1],"n":1}',
    '{"tags":["a",1,null,true],"none":[],"n":1',
  ]) {
    assert.equal(match(templates, text), null, text);
  }
});

test('the event time of a matched record is its timestamp, as decode reads it', () => {
  const { templates, template } = learned('{"timestamp":"2026-01-01T00:00:00Z","v":1}');
  const at = (text: string) => {
    const b = buf(text);
    assert.equal(templates.match(b, 0, b.length), template, text);
    return matchedEventTime(template, templates.values, b, 42);
  };
  assert.equal(at('{"timestamp":"2026-03-04T05:06:07.890Z","v":2}'), Date.parse('2026-03-04T05:06:07.890Z'));
  assert.equal(at('{"timestamp":"2026-02-30","v":2}'), 42, 'not a date: the receive time');
  const numeric = learned('{"timestamp":1767225600000}');
  const b = buf('{"timestamp":1767225600123}');
  assert.ok(numeric.templates.match(b, 0, b.length));
  assert.equal(matchedEventTime(numeric.template, numeric.templates.values, b, 42), 1767225600123);
  const absent = learned('{"at":1767225600000}');
  assert.equal(matchedEventTime(absent.template, absent.templates.values, buf('{"at":1}'), 42), 42);
});

test('matched records fill speculative field columns as parsed records do; a JSON column over an object parses the record', () => {
  const columns = [
    { name: 'n', segments: ['n'], type: 'number' as const },
    { name: 's', segments: ['s'], type: 'string' as const },
    { name: 'b', segments: ['b'], type: 'boolean' as const },
    { name: 'wrong', segments: ['s'], type: 'number' as const },
    { name: 'z', segments: ['z'], type: 'string' as const },
    { name: 'o.t', segments: ['o', 't'], type: 'string' as const },
    { name: 'o', segments: ['o'], type: 'number' as const },
    { name: 'absent', segments: ['q', 'r'], type: 'boolean' as const },
  ];
  const texts = [
    '{"n":1.5,"s":"é","b":false,"z":null,"o":{"t":"x"}}',
    '{"n":-2,"s":"","b":true,"z":null,"o":{"t":"✓"}}',
  ];
  const spec: FileSpec = {
    kind: 'version',
    dir: 'v',
    versionId: 'v',
    shapeHash: null,
    keys: [1],
    rows: texts.length,
    columns,
  };
  const { templates, template } = learned(texts[0]!);
  const layouts = new FieldLayouts();
  layouts.learn([spec]);
  const fields = new SpeculativeFields(layouts);
  for (const text of texts) {
    const b = buf(text);
    assert.equal(templates.match(b, 0, b.length), template);
    assert.equal(fields.takeMatch(template, templates.values, b, 0, b.length), true);
  }
  const got = fields.buildersFor(spec)!.map((c) => [...c.vector()]);
  assert.deepEqual(got, [
    [1.5, -2],
    ['é', ''],
    [false, true],
    [null, null],
    [null, null],
    ['x', '✓'],
    [null, null],
    [null, null],
  ]);

  // A JSON column reading an object: the record is parsed for it.
  const jsonSpec: FileSpec = {
    ...spec,
    dir: 'w',
    columns: [{ name: 'o', segments: ['o'], type: 'json' }, columns[0]!],
  };
  const jsonLayouts = new FieldLayouts();
  jsonLayouts.learn([jsonSpec]);
  const jsonFields = new SpeculativeFields(jsonLayouts);
  for (const text of texts) {
    const b = buf(text);
    templates.match(b, 0, b.length);
    jsonFields.takeMatch(template, templates.values, b, 0, b.length);
  }
  assert.deepEqual(
    jsonFields.buildersFor(jsonSpec)!.map((c) => [...c.vector()]),
    [
      ['{"t":"x"}', '{"t":"✓"}'],
      [1.5, -2],
    ],
  );
  // A JSON column over an array of scalars: JSON.stringify's text, rebuilt from the values.
  const arrayTexts = [
    '{"l":["a\\"b",1.50,-0,1e400,null,true,"é"],"n":1}',
    '{"l":["",2,3,4,null,false,"\\ud800"],"n":2}',
  ];
  const arrays = learned(arrayTexts[0]!, 2);
  const arraySpec: FileSpec = {
    kind: 'version',
    dir: 'a',
    versionId: 'a',
    shapeHash: null,
    keys: [2],
    rows: 2,
    columns: [
      { name: 'l', segments: ['l'], type: 'json' },
      { name: 'n', segments: ['n'], type: 'number' },
    ],
  };
  const arrayLayouts = new FieldLayouts();
  arrayLayouts.learn([arraySpec]);
  const arrayFields = new SpeculativeFields(arrayLayouts);
  for (const text of arrayTexts) {
    const b = buf(text);
    assert.equal(arrays.templates.match(b, 0, b.length), arrays.template, text);
    arrayFields.takeMatch(arrays.template, arrays.templates.values, b, 0, b.length);
  }
  assert.deepEqual(
    arrayFields.buildersFor(arraySpec)!.map((c) => [...c.vector()]),
    [arrayTexts.map((t) => JSON.stringify((JSON.parse(t) as { l: unknown }).l)), [1, 2]],
  );
  assert.equal(
    new SpeculativeFields(new FieldLayouts()).takeMatch(template, templates.values, buf(texts[0]!), 0, 10),
    false,
    'no layout: not taken',
  );
});

/** A stand-in for the worker's loop: match, else parse, fingerprint and learn. Asserts every match has the parsed record's shape. */
function worker(rules: FingerprintRules = { opaquePaths: [], trackedPaths: [], maxDepth: 6 }) {
  const templates = new RecordTemplates();
  const fp = new Fingerprinter(rules);
  return {
    templates,
    /** The template `text` matched (null: it was parsed, and maybe learned). */
    offer(text: string): Template | null {
      const b = buf(text);
      const t = templates.match(b, 0, b.length);
      const key = fp.fingerprint(JSON.parse(text));
      if (t !== null) {
        assert.equal(t.key, key, `a match has the shape of the parsed record: ${text}`);
        assert.equal(t.hash, hashHex(fp.last.a, fp.last.b));
        return t;
      }
      if (templates.wants(key)) templates.learn(b, 0, b.length, key, hashHex(fp.last.a, fp.last.b));
      return null;
    },
  };
}

test('an array of objects is one value: its element skeleton repeated any number of times, an empty array a shape of its own', () => {
  const w = worker();
  const el = (t: string, i: number) => `{"text":${JSON.stringify(t)},"indices":[${i},${i + 8}],"u":null}`;
  const record = (n: number, tail = 1) =>
    `{"id":${tail},"tags":[${Array.from({ length: n }, (_, k) => el(`t${k}`, k)).join(',')}],"n":${tail}}`;
  assert.equal(w.offer(record(2)), null, 'learned');
  const t = w.offer(record(1))!;
  assert.ok(t, 'one element matches the template learned from two');
  assert.deepEqual([...t.kinds], [2, K_ARRAY, 2]);
  assert.deepEqual(t.paths, ['["id"]', '["tags"]', '["n"]']);
  assert.ok(
    t.nestedArrays.has('["tags"]') && !t.arrays.has('["tags"]') && t.nulls.size === 0,
    'nothing inside the array is described as a path',
  );
  for (const n of [1, 3, 7, 40]) {
    const text = record(n, n);
    assert.equal(w.offer(text), t, `${n} elements`);
    const v = w.templates.values;
    const b = buf(text);
    assert.equal(
      b.toString('utf8', v.starts[1]!, v.ends[1]!),
      JSON.stringify((JSON.parse(text) as { tags: unknown }).tags),
    );
    assert.equal(v.escaped[1], 0, 'written as JSON.stringify writes it');
    assert.equal(v.nums[2], n);
  }
  // A long array is learned as one element: bounds count what the template holds.
  const long = worker();
  assert.equal(long.offer(record(1000)), null);
  assert.ok(long.offer(record(1)), 'learned from 1,000 elements (more entries than a template may hold)');
  // The same with separators that differ: read as it is, every element counts, too many to learn.
  const mixed = worker();
  const uneven = `{"id":1,"tags":[${el('x', 0)}, ${Array.from({ length: 1100 }, (_, k) => el('x', k)).join(',')}],"n":1}`;
  assert.equal(mixed.offer(uneven), null);
  assert.equal(mixed.offer(uneven), null, 'not learned');
  assert.equal(w.offer(record(0)), null, 'an empty array is another shape: parsed, learned');
  assert.notEqual(w.offer(record(0)), t);
  assert.ok(w.offer(record(0)));
  assert.equal(w.offer(record(3)), t);
  // Other element skeletons: parsed (the shape may differ, and then the fingerprint says so).
  for (const text of [
    `{"id":1,"tags":[${el('a', 1)},{"text":"b","indices":[1,2],"u":null,"x":1}],"n":1}`, // a key more in one element
    `{"id":1,"tags":[${el('a', 1)},{"indices":[1,2],"text":"b","u":null}],"n":1}`, // another key order
    `{"id":1,"tags":[${el('a', 1)},{"text":"b","indices":[1,2],"u":1}],"n":1}`, // a value where the skeleton has null
    `{"id":1,"tags":[${el('a', 1)},{"text":"b","indices":[1],"u":null}],"n":1}`, // another inner length
    `{"id":1,"tags":[${el('a', 1)},{"text":1,"indices":[1,2],"u":null}],"n":1}`, // another type
    `{"id":1,"tags":[${el('a', 1)}, ${el('b', 2)}],"n":1}`, // whitespace between elements
    `{"id":1,"tags":[ ${el('a', 1)}],"n":1}`,
    `{"id":1,"tags":[${el('a', 1)},2],"n":1}`,
    `{"id":1,"tags":[${el('a', 1)},[1]],"n":1}`,
  ]) {
    assert.notEqual(w.offer(text), t, text);
  }
  for (const text of [
    `{"id":1,"tags":[${el('a', 1)},],"n":1}`,
    `{"id":1,"tags":[${el('a', 1)}${el('b', 2)}],"n":1}`,
    `{"id":1,"tags":[${el('a', 1)},${el('b', 2)}`,
    `{"id":1,"tags":[${el('a', 1)}],"n":1}}`,
  ]) {
    const b = buf(text);
    assert.equal(w.templates.match(b, 0, b.length), null, `not JSON: ${text}`);
  }
});

test('arrays of objects keep the shape the fingerprint gives under any rules: nested arrays, elements that differ, opaque paths, max depth', () => {
  const r = rng(11);
  const rulesList: FingerprintRules[] = [
    { opaquePaths: [], trackedPaths: [], maxDepth: 6 },
    { opaquePaths: [['media']], trackedPaths: [['media', 'id']], maxDepth: 6 },
    { opaquePaths: [], trackedPaths: [], maxDepth: 2 },
  ];
  const size = () => `{"w":${Math.floor(r() * 2000)},"h":${Math.floor(r() * 2000)},"resize":"fit"}`;
  const variant = (k: number) => (k === 0 ? `{"bitrate":${Math.floor(r() * 1e6)},"url":"u${k}"}` : `{"url":"v${k}"}`);
  const media = () =>
    `{"id":${Math.floor(r() * 9e15)},"sizes":[${Array.from({ length: 1 + Math.floor(r() * 3) }, size).join(',')}],"variants":[${variant(0)},${variant(1)}],"box":[[[${r()},${r()}],[${r()},${r()}]]]}`;
  const record = () =>
    `{"media":[${Array.from({ length: 1 + Math.floor(r() * 3) }, media).join(',')}],"n":${Math.floor(r() * 100)}}`;
  for (const rules of rulesList) {
    const w = worker(rules);
    let matched = 0;
    for (let i = 0; i < 300; i++) if (w.offer(record()) !== null) matched++;
    assert.ok(matched > 250, `${JSON.stringify(rules)}: ${matched} of 300 matched`);
  }
  // Elements of different skeletons (`variants`) are read as they are: another count is parsed.
  const w = worker();
  const fixed = (n: number) => `{"v":[${Array.from({ length: n }, (_, k) => variant(k)).join(',')}]}`;
  assert.equal(w.offer(fixed(2)), null);
  assert.ok(w.offer(fixed(2)));
  assert.equal(w.offer(fixed(3)), null, 'another count of differing elements');
});

test('an array column takes the matched bytes when JSON.stringify would write them, else the array parsed and stringified', () => {
  const texts = [
    '{"a":[{"s":"plain é ✓","n":12,"f":-0.5,"t":true,"z":null,"o":{}}],"e":{},"n":1}',
    '{"a":[{"s":"q\\"uote","n":12,"f":-0.5,"t":true,"z":null,"o":{}}],"e":{},"n":2}',
    '{"a":[{"s":"\\u00e9","n":1.50,"f":1e2,"t":false,"z":null,"o":{}},{"s":"","n":-0,"f":0.0000001,"t":true,"z":null,"o":{}}],"e":{},"n":3}',
    '{"a":[{"s":"x","n":12345678901234567,"f":9007199254740991,"t":true,"z":null,"o":{}}],"e":{},"n":4}',
    '{"a":[{"s":"x","n":0,"f":0.000001,"t":true,"z":null,"o":{}},{"s":"y","n":-7,"f":123.25,"t":true,"z":null,"o":{}}],"e":{},"n":5}',
  ];
  const verbatim = [0, 1, 1, 1, 0];
  const w = worker();
  w.offer(texts[0]!);
  const spec: FileSpec = {
    kind: 'version',
    dir: 'v',
    versionId: 'v',
    shapeHash: null,
    keys: [],
    rows: texts.length,
    columns: [
      { name: 'a', segments: ['a'], type: 'json' },
      { name: 'e', segments: ['e'], type: 'json' },
      { name: 'a2', segments: ['a'], type: 'string' },
      { name: 'n', segments: ['n'], type: 'number' },
    ],
  };
  let template: Template | null = null;
  const layouts = new FieldLayouts();
  const fields = () => new SpeculativeFields(layouts);
  let spec2: FileSpec | null = null;
  let f: SpeculativeFields | null = null;
  texts.forEach((text, i) => {
    const b = buf(text);
    const t = w.offer(text)!;
    assert.ok(t, text);
    if (template === null) {
      template = t;
      spec2 = { ...spec, keys: [t.key] };
      layouts.learn([spec2]);
      f = fields();
    }
    assert.equal(t, template);
    assert.equal(w.templates.values.escaped[0], verbatim[i], text);
    assert.equal(f!.takeMatch(t, w.templates.values, b, 0, b.length), true);
  });
  assert.deepEqual(
    f!.buildersFor(spec2!)!.map((c) => [...c.vector()]),
    [
      texts.map((t) => JSON.stringify((JSON.parse(t) as { a: unknown }).a)),
      texts.map(() => '{}'),
      texts.map(() => null),
      [1, 2, 3, 4, 5],
    ],
  );
  // A skeleton with whitespace or integer-like keys is never its own JSON.stringify text.
  for (const text of ['{"a":[ {"s":"x"} ]}', '{"a":[{"s": "x"}]}', '{"a":[{"b":1,"2":3}]}']) {
    const one = worker();
    one.offer(text);
    const b = buf(text);
    assert.ok(one.templates.match(b, 0, b.length), text);
    assert.equal(one.templates.values.escaped[0], 1, text);
    const layout = new FieldLayouts();
    const s2: FileSpec = {
      ...spec,
      dir: 'x',
      rows: 1,
      keys: [one.templates.match(b, 0, b.length)!.key],
      columns: [spec.columns[0]!],
    };
    layout.learn([s2]);
    const sf = new SpeculativeFields(layout);
    sf.takeMatch(one.templates.match(b, 0, b.length)!, one.templates.values, b, 0, b.length);
    assert.deepEqual(
      [...sf.buildersFor(s2)![0]!.vector()],
      [JSON.stringify((JSON.parse(text) as { a: unknown }).a)],
      text,
    );
  }
});
