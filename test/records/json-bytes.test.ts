import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as jb from '../../src/records/json-bytes.js';
import { mulberry32 } from '../helpers/seeded-random.js';

/**
 * The JSON byte readers the NDJSON check and the record templates share (json-bytes.ts): each one
 * compared with JSON.parse on the token alone — accepted exactly when JSON.parse accepts it, ending
 * where the token ends, and a number's value what JSON.parse returns.
 */

/** JSON.parse's view of `text` as one token: its value, or undefined when it is not JSON. */
function parsed(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

/** `read` over `text` followed by a byte past the record end (`e`), which it must not read. */
function endOf(read: (b: Buffer, i: number, e: number) => number, text: string): number {
  const b = Buffer.from(`${text}"`);
  return read(b, 0, b.length - 1);
}

const NUMBERS = [
  '0',
  '-0',
  '7',
  '-12',
  '1.5',
  '0.000001',
  '0.0000001',
  '1e2',
  '1E+2',
  '-1.25e-3',
  '12.0',
  '123456789012345',
  '9007199254740993',
  '1234567890123456789',
  '0.1',
  '1e400',
  '-1e-400',
  '4.35',
  '2.2250738585072014e-308',
];
const NOT_NUMBERS = ['', '-', '01', '1.', '.5', '1e', '1e+', '+1', '--1', '0x10', 'NaN', '1.e3'];

test('numberEnd and numberValueEnd read what JSON.parse reads, and refuse what it refuses', () => {
  const out = new Float64Array(1);
  for (const text of [...NUMBERS, ...NOT_NUMBERS]) {
    const p = parsed(text);
    const end = endOf(jb.numberEnd, text);
    // A prefix may be a number (`01` reads `0`): a whole-token accept is what JSON.parse agrees with.
    assert.equal(
      end === text.length,
      p !== undefined && typeof p.value === 'number',
      `numberEnd ${JSON.stringify(text)}`,
    );
    if (p === undefined) continue;
    const b = Buffer.from(text);
    assert.equal(jb.numberValueEnd(b, 0, b.length, out, 0), b.length);
    assert.ok(Object.is(out[0], p.value), `${text}: ${out[0]} vs ${String(p.value)}`);
  }
});

test('number parts: digits, fraction and exponent of the last number read', () => {
  const b = Buffer.from('-0.00120e5');
  assert.equal(jb.numberEnd(b, 0, b.length), b.length);
  assert.equal(jb.numberNegative, true);
  assert.equal(jb.numberIntegerDigits, 0);
  assert.equal(jb.numberFractionDigits, 5);
  assert.equal(jb.numberDigits, 3);
  assert.equal(jb.numberFractionEnd, 8);
  assert.equal(jb.numberHasExponent, true);
  assert.equal(jb.numberExponent, 5);
  assert.equal(jb.numberMantissa[0], 120);
});

test('seeded numbers: values equal JSON.parse, bit for bit', () => {
  const rnd = mulberry32(21);
  const out = new Float64Array(1);
  const digits = (n: number) => Array.from({ length: n }, () => String(Math.floor(rnd() * 10))).join('');
  for (let k = 0; k < 5000; k++) {
    const int = rnd() < 0.3 ? '0' : String(1 + Math.floor(rnd() * 9)) + digits(Math.floor(rnd() * 18));
    const frac = rnd() < 0.5 ? `.${digits(1 + Math.floor(rnd() * 18))}` : '';
    const exp = rnd() < 0.3 ? `e${rnd() < 0.5 ? '-' : ''}${Math.floor(rnd() * 30)}` : '';
    const text = `${rnd() < 0.3 ? '-' : ''}${int}${frac}${exp}`;
    const b = Buffer.from(text);
    assert.equal(jb.numberValueEnd(b, 0, b.length, out, 0), b.length, text);
    assert.ok(Object.is(out[0], JSON.parse(text)), `${text}: ${out[0]}`);
  }
});

test('stringEnd accepts JSON strings (escapes flagged) and refuses the rest; plainStringEnd refuses escapes', () => {
  const cases: Array<[string, boolean]> = [
    ['"abc"', false],
    ['""', false],
    ['"é ☃"', false],
    ['"a\\"b"', true],
    ['"\\\\"', true],
    ['"\\/\\b\\f\\n\\r\\t"', true],
    ['"\\u00e9\\uABCD"', true],
  ];
  for (const [text, escaped] of cases) {
    assert.ok(parsed(text) !== undefined, text);
    assert.equal(endOf(jb.stringEnd, text), Buffer.byteLength(text), text);
    assert.equal(jb.stringEscaped, escaped, text);
    assert.equal(endOf(jb.plainStringEnd, text), escaped ? -1 : Buffer.byteLength(text), text);
  }
  for (const text of ['"abc', '"\\x"', '"\\u12"', '"\\u12G4"', '"a\tb"', '"a\nb"', '"\\', '"\\u123']) {
    assert.equal(parsed(text), undefined, text);
    assert.equal(endOf(jb.stringEnd, text), -1, text);
  }
});

test('literals, whitespace and the byte classes', () => {
  for (const word of ['true', 'false', 'null']) {
    assert.equal(
      endOf((b, i, e) => jb.literalEnd(b, i, e, word), word),
      word.length,
    );
    assert.equal(
      endOf((b, i, e) => jb.literalEnd(b, i, e, word), word.slice(0, -1)),
      -1,
    );
  }
  assert.equal(
    endOf((b, i, e) => jb.literalEnd(b, i, e, 'true'), 'tru'),
    -1,
  );
  assert.equal(
    endOf((b, i, e) => jb.literalEnd(b, i, e, 'null'), 'nul1'),
    -1,
  );
  const b = Buffer.from(' \t\r\n x');
  assert.equal(jb.skipSpace(b, 0, b.length), 5);
  assert.equal(jb.skipSpace(b, 0, 3), 3);
  for (let c = 0; c < 256; c++) {
    const ch = String.fromCharCode(c);
    assert.equal(jb.isSpace(c), ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n');
    assert.equal(jb.isDigit(c), /[0-9]/.test(ch));
    assert.equal(jb.isHex(c), /[0-9a-fA-F]/.test(ch));
  }
});

test('numberSkip reads the grammar numberEnd reads, ending where it ends, and writes no number parts', () => {
  const rnd = mulberry32(5);
  const texts = [...NUMBERS, ...NOT_NUMBERS, '1e+', '-', '0.5e', '7.', '-0.0e-0'];
  for (let k = 0; k < 2000; k++) {
    const pick = (s: string) => s[Math.floor(rnd() * s.length)]!;
    texts.push(Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => pick('0123456789-+.eE')).join(''));
  }
  for (const text of texts) {
    const want = endOf(jb.numberEnd, text);
    const parts = [jb.numberMantissa[0], jb.numberDigits, jb.numberFractionEnd, jb.numberExponent];
    assert.equal(endOf(jb.numberSkip, text), want, JSON.stringify(text));
    assert.deepEqual([jb.numberMantissa[0], jb.numberDigits, jb.numberFractionEnd, jb.numberExponent], parts);
    // Before the end of the record (`e`) it stops as numberEnd does.
    const b = Buffer.from(text);
    for (let e = 0; e <= b.length; e++) assert.equal(jb.numberSkip(b, 0, e), jb.numberEnd(b, 0, e), `${text} to ${e}`);
  }
});

test('trueEnd, falseEnd and nullEnd match their word whole, and only before the record end', () => {
  for (const [read, word] of [
    [jb.trueEnd, 'true'],
    [jb.falseEnd, 'false'],
    [jb.nullEnd, 'null'],
  ] as const) {
    assert.equal(endOf(read, word), word.length, word);
    for (let k = 0; k < word.length; k++) {
      assert.equal(endOf(read, word.slice(0, k)), -1, `${word} cut at ${k}`);
      const wrong = `${word.slice(0, k)}x${word.slice(k + 1)}`;
      assert.equal(endOf(read, wrong), -1, wrong);
    }
    const b = Buffer.from(` ${word},`);
    assert.equal(read(b, 1, b.length), 1 + word.length);
    assert.equal(read(b, 1, word.length), -1, 'the record ends inside the word');
  }
});
