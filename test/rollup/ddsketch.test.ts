/**
 * QuantileSketch against exact answers: every quantile within 1% of the lower order statistic
 * x[⌊q(n−1)⌋] (not DuckDB's quantile_disc, which takes the upper one), on seeded distributions;
 * merge equals the sketch of all data in any order; encode/decode keeps every answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MIN_INDEXABLE, QuantileSketch, RELATIVE_ACCURACY, SketchDecodeError } from '../../src/rollup/ddsketch.js';
import { ByteWriter } from '../../src/rollup/sketch-bytes.js';
import { mulberry32, normal, shuffled } from '../helpers/seeded-random.js';

const QS = [0, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1];
const N = 20_000;

const distributions: Record<string, (r: () => number) => number> = {
  uniform: (r) => r() * 1000,
  lognormal: (r) => Math.exp(3 + 2 * normal(r)),
  'negatives and positives': (r) => normal(r) * 100,
  'a third zeros': (r) => (r() < 1 / 3 ? 0 : Math.exp(normal(r)) * (r() < 0.5 ? -1 : 1)),
  'small integers (ties)': (r) => Math.floor(r() * 10) - 3,
  huge: (r) => 1e300 * (1 + r() * 1000),
  tiny: (r) => MIN_INDEXABLE * Math.exp(r() * 10),
  'whole float range, both signs': (r) => (r() < 0.5 ? -1 : 1) * Math.exp(-20 + r() * 729),
  'below MIN_INDEXABLE and above': (r) => (r() < 0.2 ? r() * MIN_INDEXABLE : r()),
};

function exactQuantile(sorted: readonly number[], q: number): number {
  return sorted[Math.floor(q * (sorted.length - 1))]!;
}

// The contract is 1%; answers are checked against the sketch's own α (plus float rounding), tighter.
assert.ok(RELATIVE_ACCURACY < 0.01);
const BOUND = RELATIVE_ACCURACY * (1 + 1e-9);

/** Within α relatively, or, below MIN_INDEXABLE, within MIN_INDEXABLE absolutely (the zero bucket). */
function assertClose(actual: number | null, exact: number, label: string): void {
  assert.notEqual(actual, null, label);
  const error = Math.abs(actual! - exact);
  if (Math.abs(exact) < MIN_INDEXABLE) assert.ok(error < MIN_INDEXABLE, `${label}: ${actual} vs exact ${exact}`);
  else
    assert.ok(
      error <= BOUND * Math.abs(exact),
      `${label}: ${actual} vs exact ${exact} (relative error ${error / Math.abs(exact)})`,
    );
}

function sketchOf(values: readonly number[]): QuantileSketch {
  const s = new QuantileSketch();
  for (const v of values) s.add(v);
  return s;
}

function answers(s: QuantileSketch): unknown[] {
  return [s.count, s.min, s.max, ...QS.map((q) => s.quantile(q))];
}

/** The encoding past the sum field: zero count and both stores. */
function bucketBytes(s: QuantileSketch): Uint8Array {
  const countBytes = Math.max(1, Math.ceil(Math.log2(s.count + 1) / 7));
  return s.encode().subarray(1 + countBytes + 24);
}

function draw(name: string, seed: number, n = N): number[] {
  const r = mulberry32(seed);
  const gen = distributions[name]!;
  return Array.from({ length: n }, () => gen(r));
}

for (const [k, name] of Object.keys(distributions).entries()) {
  test(`quantiles within α (< 1%) of exact: ${name}`, () => {
    const values = draw(name, 1000 + k);
    const s = sketchOf(values);
    const sorted = [...values].sort((a, b) => a - b);
    for (const q of QS) assertClose(s.quantile(q), exactQuantile(sorted, q), `${name} q=${q}`);
    assert.equal(s.count, N);
    assert.equal(s.min, sorted[0]);
    assert.equal(s.max, sorted[N - 1]);
    assert.equal(
      s.sum,
      values.reduce((a, b) => a + b, 0),
      'sum is the plain float sum in add order',
    );
  });

  test(`merge of parts equals the sketch of all, in any order: ${name}`, () => {
    const r = mulberry32(2000 + k);
    const values = draw(name, 1000 + k);
    const whole = sketchOf(values);
    const parts: number[][] = [[], [], [], [], []];
    for (const v of values) parts[Math.floor(r() * parts.length)]!.push(v);
    const sketches = parts.map(sketchOf);
    for (const order of [sketches, [...sketches].reverse(), shuffled(sketches, r)]) {
      const merged = new QuantileSketch();
      for (const s of order) merged.merge(s);
      assert.deepEqual(answers(merged), answers(whole));
      // The float sum may differ in its last bits (or overflow differently) with the order of additions.
      if (Number.isFinite(whole.sum)) assert.ok(Math.abs(merged.sum - whole.sum) <= 1e-9 * Math.abs(whole.sum), 'sum');
      assert.deepEqual(bucketBytes(merged), bucketBytes(whole), 'same buckets');
    }
    assert.deepEqual(answers(sketches[0]!), answers(sketchOf(parts[0]!)), 'merge leaves its argument unchanged');
  });

  test(`encode/decode round trip keeps every answer: ${name}`, () => {
    const s = sketchOf(draw(name, 3000 + k, 5000));
    const bytes = s.encode();
    const back = QuantileSketch.decode(bytes);
    assert.deepEqual(answers(back), answers(s));
    assert.equal(back.sum, s.sum);
    assert.deepEqual(back.encode(), bytes);
  });
}

test('a single value, once and many times, is answered exactly at every q', () => {
  for (const v of [0, 42.5, -7, 1e-300, 3e307]) {
    const once = sketchOf([v]);
    const many = new QuantileSketch();
    many.add(v, 1000);
    for (const q of QS) {
      assert.equal(once.quantile(q), v);
      assert.equal(many.quantile(q), v);
    }
    assert.equal(many.count, 1000);
    assert.equal(many.sum, v * 1000);
  }
});

test('add with a count is the same as adding the value that many times', () => {
  const r = mulberry32(7);
  const weighted = new QuantileSketch();
  const repeated = new QuantileSketch();
  for (let i = 0; i < 500; i++) {
    const v = normal(r) * 10;
    const c = 1 + Math.floor(r() * 5);
    weighted.add(v, c);
    for (let j = 0; j < c; j++) repeated.add(v);
  }
  assert.deepEqual(answers(weighted), answers(repeated));
});

test('empty sketch: null answers, tiny encoding, round trip; merging it changes nothing', () => {
  const empty = new QuantileSketch();
  assert.equal(empty.quantile(0.5), null);
  assert.equal(empty.count, 0);
  assert.equal(empty.sum, 0);
  assert.equal(empty.min, null);
  assert.equal(empty.max, null);
  assert.deepEqual(empty.encode(), Uint8Array.of(1, 0));
  assert.equal(QuantileSketch.decode(empty.encode()).quantile(0.5), null);
  const s = sketchOf([1, 2, 3]);
  s.merge(empty);
  assert.deepEqual(answers(s), answers(sketchOf([1, 2, 3])));
  empty.merge(s);
  assert.deepEqual(answers(empty), answers(s));
});

test('add refuses NaN, ±Infinity and bad counts with RangeError; quantile refuses q outside [0, 1]', () => {
  const s = new QuantileSketch();
  for (const v of [NaN, Infinity, -Infinity]) assert.throws(() => s.add(v), RangeError);
  for (const c of [0, -1, 1.5, NaN, 2 ** 53]) assert.throws(() => s.add(1, c), RangeError);
  assert.equal(s.count, 0, 'refused adds leave nothing behind');
  s.add(1);
  for (const q of [-0.01, 1.01, NaN]) assert.throws(() => s.quantile(q), RangeError);
});

test('encoded sizes stay compact', () => {
  const r = mulberry32(11);
  const ten = sketchOf(Array.from({ length: 10 }, () => Math.exp(3 + 2 * normal(r))));
  const tenK = sketchOf(Array.from({ length: 10_000 }, () => Math.exp(3 + 2 * normal(r))));
  assert.ok(ten.encode().length <= 60, `10 values: ${ten.encode().length} bytes`);
  assert.ok(tenK.encode().length <= 2500, `10k values: ${tenK.encode().length} bytes`);
});

test('decode refuses garbage with SketchDecodeError naming the problem', () => {
  const valid = sketchOf([-3, 0, 0, 1.5, 2, 1e6]).encode();
  assert.throws(() => QuantileSketch.decode(new Uint8Array(0)), {
    name: 'SketchDecodeError',
    message: /truncated: format version/,
  });
  assert.throws(() => QuantileSketch.decode(Uint8Array.of(2, 0)), {
    name: 'SketchDecodeError',
    message: /unknown format version 2/,
  });
  for (let len = 0; len < valid.length; len++) {
    assert.throws(
      () => QuantileSketch.decode(valid.subarray(0, len)),
      { name: 'SketchDecodeError', message: /truncated/ },
      `prefix of ${len}`,
    );
  }
  assert.throws(() => QuantileSketch.decode(Uint8Array.of(...valid, 0)), {
    name: 'SketchDecodeError',
    message: /trailing/,
  });
  const badCount = Uint8Array.from(valid);
  badCount[1] = valid[1]! + 1; // header count no longer matches the buckets
  assert.throws(() => QuantileSketch.decode(badCount), { name: 'SketchDecodeError', message: /add up to/ });
  const nanMin = Uint8Array.from(valid);
  new DataView(nanMin.buffer).setFloat64(2, NaN, true);
  assert.throws(() => QuantileSketch.decode(nanMin), { name: 'SketchDecodeError', message: /finite range/ });
  const outOfRange = (index: number) => {
    const w = new ByteWriter();
    w.byte(1);
    w.uvarint(1);
    for (const x of [1, 1, 1]) w.float64(x);
    w.uvarint(0);
    w.uvarint(1);
    w.zigzag(index);
    w.uvarint(1);
    w.uvarint(0);
    return w.finish();
  };
  assert.equal(QuantileSketch.decode(outOfRange(0)).quantile(0.5), 1, 'the hand-made blob is valid with index 0');
  for (const index of [-1152, 39_433, 2 ** 40]) {
    assert.throws(() => QuantileSketch.decode(outOfRange(index)), {
      name: 'SketchDecodeError',
      message: /outside \[-1151, 39432\]/,
    });
  }
  // Random bytes after a valid version: either refused as a SketchDecodeError or a readable sketch.
  const r = mulberry32(99);
  for (let i = 0; i < 2000; i++) {
    const bytes = Uint8Array.from({ length: 1 + Math.floor(r() * 40) }, () => Math.floor(r() * 256));
    bytes[0] = 1;
    try {
      const s = QuantileSketch.decode(bytes);
      s.quantile(0.5);
    } catch (e) {
      assert.ok(e instanceof SketchDecodeError, String(e));
    }
  }
});

test('quantiles(qs) answers exactly what quantile answers for each q, from one walk', () => {
  const rand = mulberry32(23);
  const qs = [0, 0.01, 0.5, 0.5, 0.95, 0.99, 1];
  for (let round = 0; round < 200; round++) {
    const s = new QuantileSketch();
    const n = 1 + Math.floor(rand() * (round % 3 === 0 ? 8 : 400));
    for (let i = 0; i < n; i++) {
      const kind = rand();
      // Negatives, zeros and positives over several magnitudes, so every store is walked.
      s.add(kind < 0.2 ? -normal(rand) * 1e3 : kind < 0.3 ? 0 : Math.exp(rand() * 20 - 5));
    }
    assert.deepEqual(
      s.quantiles(qs),
      qs.map((q) => s.quantile(q)),
      `round ${round}`,
    );
  }
  assert.deepEqual(new QuantileSketch().quantiles([0.5, 0.99]), [null, null]);
  assert.throws(() => new QuantileSketch().quantiles([0.9, 0.5]), RangeError);
});
