import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SealedCells, type SealedBlock } from '../../src/rollup/aggregation/sealed-cells.js';

/** docs/metrics.md, "Sealed buckets": what the cache keeps, when it lets go, and its bound. */

const M = 60_000;

/** A block of `m` one-series buckets from `start`, each row `"<i>":[1]` (texts only matter for the bytes). */
function block(start: number, m: number, pad = 0): SealedBlock {
  const texts = Array.from({ length: m }, (_, i) => `"${start + i * M}":[1${' '.repeat(pad)}]`);
  const offsets = new Int32Array(m + 1);
  let at = 0;
  texts.forEach((t, i) => {
    offsets[i] = at;
    at += t.length + 1;
  });
  offsets[m] = at;
  return {
    starts: Array.from({ length: m }, (_, i) => start + i * M),
    series: 1,
    width: 1,
    hasData: new Uint8Array(m).fill(1),
    answered: new Uint8Array(m).fill(1),
    cells: new Float64Array(m).fill(1),
    json: [Buffer.from(texts.join(','))],
    offsets: [offsets],
    bytes: 0,
    live: 0,
  };
}

test('sealed cells: kept per key and generation; a write below the ceiling, a drop or a change lets go; a write above it does not', () => {
  const c = new SealedCells();
  const g = c.begin('m1', 10 * M);
  c.put('k', 'm1', g, block(0, 10));
  assert.equal(c.get('k', g)?.size, 10);
  c.begin('m2', 10 * M);
  c.put('other', 'm2', c.begin('m2', 10 * M), block(0, 10));

  // Writes at or after the ceiling (the newest seal point any answer read to) change nothing cached.
  c.written('m1', 10 * M);
  c.written('m1', 50 * M);
  assert.equal(c.get('k', g)?.size, 10);
  // A write below it: everything of the metric goes, the other metric's stays.
  c.written('m1', 9 * M);
  assert.equal(c.get('k', g), undefined);
  assert.equal(c.begin('m1', 10 * M), g + 1);
  assert.equal(c.size.entries, 1);
  // What was read under the old generation is not kept.
  c.put('k', 'm1', g, block(0, 10));
  assert.equal(c.get('k', g + 1), undefined);

  c.changed('m2');
  assert.deepEqual(c.size, { entries: 0, bytes: 0 });
  // A metric no answer has read from yet has no ceiling: its writes change nothing.
  c.written('m3', 0);
  assert.equal(c.begin('m3', 0), 0);
});

test('sealed cells: bounded; least recently used entries go first; a replaced bucket frees its block once none of it is used', () => {
  const one = block(0, 100, 50);
  const c = new SealedCells(0);
  c.put('probe', 'm', c.begin('m', Infinity), one);
  const size = one.bytes;
  const bound = new SealedCells(3 * size + size / 2);
  const g = bound.begin('m', Infinity);
  bound.put('a', 'm', g, block(0, 100, 50));
  bound.put('b', 'm', g, block(0, 100, 50));
  bound.put('c', 'm', g, block(0, 100, 50));
  assert.equal(bound.size.entries, 3);
  assert.ok(bound.get('a', g)); // a is now the most recently used
  bound.put('d', 'm', g, block(0, 100, 50));
  assert.deepEqual(
    [
      bound.get('a', g) !== undefined,
      bound.get('b', g) !== undefined,
      bound.get('c', g) !== undefined,
      bound.get('d', g) !== undefined,
    ],
    [true, false, true, true],
  );
  assert.ok(bound.size.bytes <= 3 * size + size / 2);

  // Replacing every bucket of a block by another frees the first block's bytes.
  const r = new SealedCells();
  const h = r.begin('m', Infinity);
  r.put('k', 'm', h, block(0, 100, 50));
  const before = r.size.bytes;
  r.put('k', 'm', h, block(0, 100, 50));
  assert.equal(r.size.bytes, before);
  const later = block(50 * M, 100, 50);
  r.put('k', 'm', h, later); // half of the second block is replaced: it stays
  assert.equal(r.size.bytes, before + later.bytes);
  assert.equal(r.get('k', h)?.size, 150);
});

test('sealed cells: the joined text of a run is made once and kept until another run is asked', () => {
  const c = new SealedCells();
  const g = c.begin('m', Infinity);
  c.put('k', 'm', g, block(0, 10));
  let made = 0;
  const make = () => {
    made++;
    return [Buffer.from('x')];
  };
  c.lead('k', g, 0, 10, make);
  c.lead('k', g, 0, 10, make);
  assert.equal(made, 1);
  c.lead('k', g, M, 9, make);
  assert.equal(made, 2);
  c.changed('m');
  c.lead('k', g, M, 9, make);
  assert.equal(made, 3);
});

test('sealed cells: scans of sealed spans are kept per key and generation, and let go as the buckets are', () => {
  const c = new SealedCells();
  const g = c.begin('m1', 10 * M);
  c.putScan('span', 'm1', g, ['a', 'b']);
  assert.deepEqual(c.getScan('span', g), ['a', 'b']);
  c.written('m1', 10 * M); // at the ceiling: nothing sealed changed
  assert.deepEqual(c.getScan('span', g), ['a', 'b']);
  c.written('m1', 3 * M); // below it: a new series may have data there
  assert.equal(c.getScan('span', g), undefined);
  const g2 = c.begin('m1', 10 * M);
  c.putScan('span', 'm1', g, ['a']); // read under the old generation: not kept
  assert.equal(c.getScan('span', g2), undefined);
  c.putScan('span', 'm1', g2, ['a', 'b', 'c']);
  c.changed('m1');
  assert.equal(c.getScan('span', c.begin('m1', 10 * M)), undefined, 'a change of the metric lets go');
  // Bounded: the least recently used scans go first.
  const g3 = c.begin('m1', 10 * M);
  const many = Array.from({ length: 40_000 }, (_, i) => `s${i}`);
  for (let i = 0; i < 6; i++) c.putScan(`k${i}`, 'm1', g3, many);
  assert.equal(c.getScan('k0', g3), undefined);
  assert.equal(c.getScan('k5', g3)?.length, 40_000);
});

test("sealed cells: a new entry of a family (an answer under another ranking) replaces the family's others, and no other entry", () => {
  const c = new SealedCells();
  const g = c.begin('m', 10 * M);
  c.put('fold|a,b', 'm', g, block(0, 10), 'fold');
  c.put('other', 'm', g, block(0, 10), 'another');
  c.put('plain', 'm', g, block(0, 10));
  c.put('fold|a,b', 'm', g, block(0, 5), 'fold'); // the same key again: kept, not replaced
  assert.equal(c.get('fold|a,b', g)?.size, 10);
  c.put('fold|a,c', 'm', g, block(0, 10), 'fold');
  assert.equal(c.get('fold|a,b', g), undefined, 'the old ranking let go');
  assert.equal(c.get('fold|a,c', g)?.size, 10);
  assert.equal(c.get('other', g)?.size, 10);
  assert.equal(c.get('plain', g)?.size, 10);
  assert.equal(c.size.entries, 3);
});
