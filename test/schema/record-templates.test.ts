import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecordTemplates, matchedEventTime, stringValue, type Template } from '../../src/pipeline/record-templates.js';
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
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

function numberText(r: () => number): string {
  const digits = (n: number) => Array.from({ length: n }, () => Math.floor(r() * 10)).join('');
  const int = r() < 0.2 ? '0' : String(1 + Math.floor(r() * 9)) + digits(Math.floor(r() * 20));
  const frac = r() < 0.5 ? '' : '.' + digits(1 + Math.floor(r() * 20));
  const exp = r() < 0.7 ? '' : (r() < 0.5 ? 'e' : 'E') + ['', '+', '-'][Math.floor(r() * 3)] + String(Math.floor(r() * (r() < 0.9 ? 30 : 400)));
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
  const strings = ['""', '"plain"', '"héllo ✓"', '"日本語"', '"emoji 🎉"', `"it's"`, '"del\u007f"', JSON.stringify('quote " back \\ nl \n tab \t ctl \u0001'), '"\\u00e9\\u2713\\/\\b\\f\\r"', '"\\ud83c\\udf89 pair, \\udc00 lone"'];
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
  for (const [i, text] of ['{"a":[{"b":1}]}', '{"a":[[1]]}', '{"a":1,"a":"x"}', '{"a\\u0062":1}', '[{"a":1}]', '"text"', '{"a":1} {"a":2}', deep].entries()) {
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
  const deep = Array.from({ length: 29 }, (_, d) => `{"${long(d)}":`).join('') + '{' + Array.from({ length: 2000 }, (_, k) => `"${k}":null`).join(',') + '}' + '}'.repeat(29);
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
  assert.equal(small.learn(one, 0, one.length, 1, 'h'), small.match(one, 0, one.length), 'the same skeleton again costs nothing');
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
  const texts = ['{"x":1}', '{"x":"s"}', '{"x":true}', '{"x":null}', '{"x":1,"y":2}', '{"x":{"y":1}}', '{}', ' {"x":1} '];
  const learnedTemplates = texts.map((t, key) => {
    const b = buf(t);
    return templates.learn(b, 0, b.length, key, `h${key}`);
  });
  assert.ok(learnedTemplates.every((t) => t !== null));
  const again = buf('{"x":5}');
  assert.equal(templates.learn(again, 0, again.length, 0, 'h0'), learnedTemplates[0], 'the same skeleton is one template');
  for (const [text, key] of [['{"x":-3}', 0], ['{"x":""}', 1], ['{"x":false}', 2], ['{"x":null}', 3], ['{"x":0,"y":1e2}', 4], ['{"x":{"y":-0}}', 5], ['{}', 6], [' {"x":9} ', 7]] as const) {
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
  for (const text of ['{"tags":["a",1,null],"none":[],"n":1}', '{"tags":["a",1,null,true,1],"none":[],"n":1}', '{"tags":["a",1,1,true],"none":[],"n":1}', '{"tags":["a",1,null,true],"none":[1],"n":1}', '{"tags":["a",1,null,true],"none":[],"n":1']) {
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
  const texts = ['{"n":1.5,"s":"é","b":false,"z":null,"o":{"t":"x"}}', '{"n":-2,"s":"","b":true,"z":null,"o":{"t":"✓"}}'];
  const spec: FileSpec = { kind: 'version', dir: 'v', versionId: 'v', shapeHash: null, keys: [1], rows: texts.length, columns };
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
  assert.deepEqual(got, [[1.5, -2], ['é', ''], [false, true], [null, null], [null, null], ['x', '✓'], [null, null], [null, null]]);

  // A JSON column reading an object: the record is parsed for it.
  const jsonSpec: FileSpec = { ...spec, dir: 'w', columns: [{ name: 'o', segments: ['o'], type: 'json' }, columns[0]!] };
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
  const arrayTexts = ['{"l":["a\\"b",1.50,-0,1e400,null,true,"é"],"n":1}', '{"l":["",2,3,4,null,false,"\\ud800"],"n":2}'];
  const arrays = learned(arrayTexts[0]!, 2);
  const arraySpec: FileSpec = { kind: 'version', dir: 'a', versionId: 'a', shapeHash: null, keys: [2], rows: 2, columns: [{ name: 'l', segments: ['l'], type: 'json' }, { name: 'n', segments: ['n'], type: 'number' }] };
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
  assert.equal(new SpeculativeFields(new FieldLayouts()).takeMatch(template, templates.values, buf(texts[0]!), 0, 10), false, 'no layout: not taken');
});
