/**
 * DistinctSketch against exact distinct counts: estimates within 2% from 0 to 1M, merge equals the
 * sketch of the union in any order, encode/decode keeps every register, canonical value bytes keep
 * "1", 1 and true apart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DistinctSketch, EXACT_MAX, SketchDecodeError, hashValue, loadHasher } from '../../src/rollup/hll.js';
import { mulberry32 } from '../helpers/seeded-random.js';
import xxhash from 'xxhash-wasm';

/** Distinct values of mixed types, in a seeded order: strings of ~20 chars, integers and floats. */
function value(i: number): string | number {
  switch (i % 3) {
    case 0:
      return `user-${i.toString(36)}-${(i * 2654435761) % 1e9}`;
    case 1:
      return i;
    default:
      return i + 0.5;
  }
}

function sketchOfRange(from: number, to: number): DistinctSketch {
  const s = new DistinctSketch();
  for (let i = from; i < to; i++) s.add(value(i));
  return s;
}

function assertWithin(estimate: number, exact: number, label: string): void {
  assert.ok(Math.abs(estimate - exact) <= 0.02 * exact, `${label}: estimate ${estimate}, exact ${exact}`);
}

// Runs first, before the hasher is loaded.
test('hashing before loadHasher() throws a message saying so', () => {
  assert.throws(() => new DistinctSketch().add('x'), /loadHasher/);
});

test('loadHasher resolves, and again at once', async () => {
  await loadHasher();
  await loadHasher();
});

test('empty sketch estimates 0, encodes in 4 bytes, round trips', () => {
  const s = new DistinctSketch();
  assert.equal(s.estimate(), 0);
  assert.deepEqual(s.encode(), Uint8Array.of(1, 14, 0, 0));
  assert.equal(DistinctSketch.decode(s.encode()).estimate(), 0);
});

for (const n of [1, 10, 1000, 100_000, 1_000_000]) {
  test(`estimate within 2% at ${n.toLocaleString('en')} distinct values, duplicates ignored`, () => {
    const s = sketchOfRange(0, n);
    assertWithin(s.estimate(), n, `n=${n}`);
    const before = s.encode();
    // Adding the same values again (a slice of them, for time) changes no register.
    for (let i = 0; i < Math.min(n, 10_000); i++) s.add(value(i));
    assert.deepEqual(s.encode(), before);
  });
}

test('estimate within 2% for 1 value added 1000 times and for 10 values at random', () => {
  const once = new DistinctSketch();
  for (let i = 0; i < 1000; i++) once.add('same');
  assertWithin(once.estimate(), 1, 'one value');
  const r = mulberry32(5);
  const ten = new DistinctSketch();
  for (let i = 0; i < 1000; i++) ten.add(`v${Math.floor(r() * 10)}`);
  assertWithin(ten.estimate(), 10, 'ten values');
});

test('canonical bytes: "1", 1 and true are distinct; 0 and −0 are one value; so are NaNs', () => {
  const s = new DistinctSketch();
  for (const v of ['1', 1, true, 'true', 1.5, '1.5', false, '', 0, -0, NaN, -NaN]) s.add(v);
  assertWithin(s.estimate(), 10, 'mixed types');
  assert.notEqual(hashValue('1'), hashValue(1));
  assert.notEqual(hashValue(true), hashValue('true'));
  assert.notEqual(hashValue(true), hashValue(false));
  assert.equal(hashValue(0), hashValue(-0));
  assert.equal(hashValue(NaN), hashValue(0 / 0));
  assert.equal(hashValue('é'), hashValue('\u00e9'));
});

test('canonical bytes are pinned: stored sketches stay mergeable only while these hashes hold', async () => {
  const { h64Raw } = await xxhash();
  const float64 = (x: number) => new Uint8Array(new Float64Array([x]).buffer); // little-endian on every Node target
  const utf8 = (text: string) => new TextEncoder().encode(text);
  assert.equal(hashValue('héllo'), h64Raw(Uint8Array.of(0x73, ...utf8('héllo'))));
  assert.equal(hashValue(''), h64Raw(Uint8Array.of(0x73)));
  assert.equal(hashValue('\ud800'), h64Raw(Uint8Array.of(0x73, 0xef, 0xbf, 0xbd)), 'lone surrogate as U+FFFD');
  assert.equal(hashValue(-2.5), h64Raw(Uint8Array.of(0x6e, ...float64(-2.5))));
  assert.equal(hashValue(-0), h64Raw(Uint8Array.of(0x6e, 0, 0, 0, 0, 0, 0, 0, 0)));
  assert.equal(hashValue(-NaN), h64Raw(Uint8Array.of(0x6e, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f)));
  assert.equal(hashValue(true), h64Raw(Uint8Array.of(0x62, 1)));
  assert.equal(hashValue(false), h64Raw(Uint8Array.of(0x62, 0)));
});

test('merge of overlapping sets estimates the union within 2%, equal to the sketch of the union, in any order', () => {
  const a = sketchOfRange(0, 60_000);
  const b = sketchOfRange(40_000, 100_000);
  const c = sketchOfRange(90_000, 120_000);
  const union = sketchOfRange(0, 120_000);
  const orders = [
    [a, b, c],
    [c, b, a],
    [b, a, c],
  ];
  for (const order of orders) {
    const merged = new DistinctSketch();
    for (const s of order) merged.merge(s);
    assertWithin(merged.estimate(), 120_000, 'union');
    assert.deepEqual(merged.encode(), union.encode());
  }
  assert.deepEqual(a.encode(), sketchOfRange(0, 60_000).encode(), 'merge leaves its argument unchanged');
  const withEmpty = sketchOfRange(0, 100);
  withEmpty.merge(new DistinctSketch());
  assert.deepEqual(withEmpty.encode(), sketchOfRange(0, 100).encode());
});

test('encode/decode round trip keeps every register, sparse and dense; sizes stay small', () => {
  for (const n of [1, 10, 100, 3000, 10_000, 100_000]) {
    const s = sketchOfRange(n, 2 * n);
    const bytes = s.encode();
    const back = DistinctSketch.decode(bytes);
    assert.equal(back.estimate(), s.estimate(), `n=${n}`);
    assert.deepEqual(back.encode(), bytes, `n=${n}`);
  }
  assert.equal(sketchOfRange(0, 10).encode().length, 4 + 8 * 10, 'ten values held exactly: 8 bytes each');
  assert.ok(sketchOfRange(0, 10_000).encode().length < 3 + 12_288, '10k values: still sparse, shorter than dense');
  assert.equal(sketchOfRange(0, 100_000).encode().length, 3 + 12_288, '100k values: dense, 6 bits a register');
});

test('addHash takes the hash modulo 2^64 and an all-zero remainder is the largest register', () => {
  const a = new DistinctSketch();
  a.addHash(0n);
  a.addHash(-1n);
  const b = new DistinctSketch();
  b.addHash(2n ** 64n);
  b.addHash(2n ** 64n - 1n);
  assert.deepEqual(a.encode(), b.encode());
  assert.deepEqual(
    a.encode(),
    Uint8Array.of(1, 14, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255),
    'held exactly, ascending',
  );
  // In registers: register 0 takes 51 (rho of 50 zero bits), the most a register holds.
  const dense = sketchOfRange(0, 100_000);
  const viaZero = DistinctSketch.decode(dense.encode());
  viaZero.addHash(0n);
  assert.equal(viaZero.encode()[3]! & 63, 51);
  const viaWrap = DistinctSketch.decode(dense.encode());
  viaWrap.addHash(2n ** 64n);
  assert.deepEqual(viaWrap.encode(), viaZero.encode());
});

test('up to EXACT_MAX distinct values the count is exact; one more turns to registers holding every value; merges agree either way', () => {
  for (const n of [1, 2, 63, EXACT_MAX]) {
    const s = sketchOfRange(0, n);
    assert.equal(s.estimate(), n, `n=${n}`);
    assert.equal(s.encode()[2], 2, `n=${n}: exact form`);
  }
  const past = sketchOfRange(0, EXACT_MAX + 1);
  assert.equal(past.encode()[2], 0, 'registers (sparse form)');
  assertWithin(past.estimate(), EXACT_MAX + 1, 'registers');
  // Exact + exact past the bound, exact + registers, registers + exact: the sketch of the union.
  const union = sketchOfRange(0, 3000);
  for (const [x, y] of [
    [sketchOfRange(0, 200), sketchOfRange(150, 3000)],
    [sketchOfRange(0, 2900), sketchOfRange(2800, 3000)],
    [sketchOfRange(2800, 3000), sketchOfRange(0, 2900)],
  ] as const) {
    x.merge(y);
    assert.deepEqual(x.encode(), union.encode());
  }
  const small = sketchOfRange(0, 100);
  small.merge(sketchOfRange(50, 150));
  assert.deepEqual(small.encode(), sketchOfRange(0, 150).encode());
  assert.equal(small.estimate(), 150);
});

test('decode refuses garbage with SketchDecodeError naming the problem', () => {
  const sparse = sketchOfRange(0, 10).encode();
  const dense = sketchOfRange(0, 100_000).encode();
  assert.equal(dense[2], 1, 'dense form');
  const refuses = (bytes: Uint8Array, message: RegExp) =>
    assert.throws(() => DistinctSketch.decode(bytes), { name: 'SketchDecodeError', message });
  refuses(new Uint8Array(0), /truncated: format version/);
  refuses(Uint8Array.of(9, 14, 0, 0), /unknown format version 9/);
  refuses(Uint8Array.of(1, 12, 0, 0), /precision 12/);
  refuses(Uint8Array.of(1, 14, 7, 0), /unknown form 7/);
  for (let len = 0; len < sparse.length; len++) refuses(sparse.subarray(0, len), /truncated/);
  for (const len of [3, 4, 100, dense.length - 1]) refuses(dense.subarray(0, len), /truncated/);
  refuses(Uint8Array.of(...sparse, 0), /trailing/);
  refuses(Uint8Array.of(1, 14, 0, 1, 1 * 64 + 52), /value 52/);
  refuses(Uint8Array.of(1, 14, 0, 1, 1 * 64 + 0), /value 0/);
  refuses(Uint8Array.of(1, 14, 0, 2, 1 * 64 + 3, 0 * 64 + 3), /not above the previous/);
  refuses(Uint8Array.of(1, 14, 2, 0), /hash count 0/);
  refuses(Uint8Array.of(1, 14, 2, 2, ...new Array(16).fill(7)), /hash 1 is not above/);
  const exact = sketchOfRange(0, 10).encode();
  for (let len = 0; len < exact.length; len++) refuses(exact.subarray(0, len), /truncated/);
  const badDense = Uint8Array.from(dense);
  badDense[3] = 63; // register 0 = 63 > 51
  refuses(badDense, /value 63/);
  const r = mulberry32(17);
  for (let i = 0; i < 2000; i++) {
    const bytes = Uint8Array.from({ length: 1 + Math.floor(r() * 40) }, () => Math.floor(r() * 256));
    bytes[0] = 1;
    bytes[1] = 14;
    try {
      DistinctSketch.decode(bytes).estimate();
    } catch (e) {
      assert.ok(e instanceof SketchDecodeError, String(e));
    }
  }
});
