/**
 * The sketches' small form (docs/metrics.md, "Rollups"): a quantile sketch keeps its first few
 * bucket indexes in short arrays before it allocates pages, and encoders share pooled buffers.
 * Neither may show: the bytes, the answers, merges and subtractions across the switch are the same as
 * a sketch that was paged from the start (here: one that held many buckets and gave them back), and
 * nested encodes (a bucket state around its two sketches) do not overwrite each other.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeState, emptyState, encodeState, mergeState } from '../../src/rollup/bucket-state.js';
import { QuantileSketch } from '../../src/rollup/ddsketch.js';
import { loadHasher } from '../../src/rollup/hll.js';
import { mulberry32, shuffled } from '../helpers/seeded-random.js';

const QS = [0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1];
/** Values in distinct buckets (factors of 1.5 apart: α is 0.9 %), both signs and zero. */
const VALUES = [0, 1, -1.5, 2.25, 3.375, -5.0625, 7.59, 11.39, 17.09, -25.6, 38.4, 57.7, 86.5, 129.7];

/** The encoding without min, max and sum (each exact or float-order dependent): count, zeros, every bucket. */
function buckets(s: QuantileSketch): number[] {
  const b = s.encode();
  assert.ok(s.count < 128, 'a one-byte count');
  return [...b.subarray(0, 2), ...b.subarray(26)];
}

function answers(s: QuantileSketch): unknown[] {
  return [s.count, s.min, s.max, ...QS.map((q) => s.quantile(q))];
}

/** A sketch whose stores are paged whatever it holds: it held far more buckets, then gave them back. */
function paged(values: readonly number[]): QuantileSketch {
  const filler = new QuantileSketch();
  for (let i = 1; i <= 40; i++) filler.add(1e6 * 1.5 ** i);
  for (let i = 1; i <= 40; i++) filler.add(-1e6 * 1.5 ** i);
  const s = new QuantileSketch();
  s.merge(filler);
  for (const v of values) s.add(v);
  s.subtract(filler);
  return s;
}

test('up to and past the small form: the same bytes and answers in any insertion order as a paged sketch', () => {
  const rand = mulberry32(3);
  for (let n = 1; n <= VALUES.length; n++) {
    const values = VALUES.slice(0, n);
    const forward = new QuantileSketch();
    for (const v of values) forward.add(v);
    const backward = new QuantileSketch();
    for (const v of shuffled(values, rand)) backward.add(v);
    assert.deepEqual(backward.encode(), forward.encode(), `${n} values, shuffled`);
    assert.deepEqual(answers(backward), answers(forward), `${n} values, shuffled`);
    // The paged one's min/max come from its buckets after the subtraction: its buckets are compared.
    assert.deepEqual(buckets(paged(values)), buckets(forward), `${n} values, paged`);
    const back = QuantileSketch.decode(forward.encode());
    assert.deepEqual(back.encode(), forward.encode(), `${n} values, round trip`);
  }
});

test('merging small sketches across the switch equals adding every value, and subtracting gives the part back', () => {
  const whole = new QuantileSketch();
  const merged = new QuantileSketch();
  const parts: QuantileSketch[] = [];
  for (let k = 0; k < VALUES.length; k += 3) {
    const part = new QuantileSketch();
    for (const v of VALUES.slice(k, k + 3)) {
      part.add(v, 2);
      whole.add(v, 2);
    }
    parts.push(part);
    merged.merge(part);
  }
  assert.deepEqual(answers(merged), answers(whole));
  // Bucket counts and min/max/count are exact; the sum only within float order.
  assert.deepEqual(buckets(merged), buckets(whole));
  // A small part out of a paged whole, and out of a small whole.
  merged.subtract(parts[0]!);
  const rest = new QuantileSketch();
  for (const p of parts.slice(1)) rest.merge(p);
  assert.deepEqual(buckets(merged), buckets(rest));
  const small = new QuantileSketch();
  small.add(1);
  small.add(2.25);
  const one = new QuantileSketch();
  one.add(2.25);
  small.subtract(one);
  const left = buckets(small);
  assert.equal(small.count, 1);
  // The max it lost becomes the remainder's bucket value, within α (ddsketch.ts, subtract).
  assert.ok(Math.abs(small.quantile(0.5)! - 1) <= 0.01);
  assert.throws(() => small.subtract(one), RangeError);
  assert.deepEqual(buckets(small), left, 'a refused subtraction changes nothing');
});

test('nested encodes through pooled buffers: many bucket states encode and decode back unchanged', async () => {
  await loadHasher();
  const rand = mulberry32(9);
  const shape = { values: true, distinct: true };
  const blobs: Uint8Array[] = [];
  const totals = emptyState(shape);
  for (let i = 0; i < 200; i++) {
    const s = emptyState(shape);
    // 1 to 600 records: small, paged, exact and register distinct forms.
    const n = 1 + Math.floor(rand() ** 3 * 600);
    for (let k = 0; k < n; k++) {
      const v = Math.round(rand() * 10_000) / 10;
      s.count++;
      s.values!.add(v);
      s.distinct!.add(`u${Math.floor(rand() * 1000)}`);
      s.last = v;
      s.lastAt = k;
    }
    blobs.push(encodeState(s));
    mergeState(totals, s);
  }
  const again = emptyState(shape);
  for (const b of blobs) {
    const s = decodeState(b);
    assert.deepEqual(encodeState(s), b, 'a decoded state encodes to the same bytes');
    mergeState(again, s);
  }
  assert.deepEqual(encodeState(again), encodeState(totals));
});
