import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SealedCells, type SealedBlock } from '../../src/rollup/aggregation/sealed-cells.js';

/**
 * docs/metrics.md, "Sealed buckets": a write drops only the cached buckets that hold one of its
 * minutes (a late record, a re-backfilled file, an import of history), and an answer that began
 * before a write keeps none of the buckets it touched.
 */

const M = 60_000;
const H = 60 * M;

/** `m` one-series hour buckets from `start` (ends given, as the answers make them). */
function hours(start: number, m: number): SealedBlock {
  const texts = Array.from({ length: m }, (_, i) => `"${start + i * H}":[1]`);
  const offsets = new Int32Array(m + 1);
  let at = 0;
  texts.forEach((t, i) => {
    offsets[i] = at;
    at += t.length + 1;
  });
  offsets[m] = at;
  return {
    starts: Array.from({ length: m }, (_, i) => start + i * H),
    ends: Array.from({ length: m }, (_, i) => start + (i + 1) * H),
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

const starts = (c: SealedCells, key: string, g: number) => [...(c.get(key, g)?.keys() ?? [])].sort((a, b) => a - b);

test('sealed cells: a write drops the buckets holding its minutes and nothing else; other metrics and later minutes are untouched', () => {
  const c = new SealedCells();
  const g = c.begin('m1', 24 * H);
  c.put('hourly', 'm1', g, hours(0, 24), null, c.writeMark('m1'));
  c.put('other', 'm2', c.begin('m2', 24 * H), hours(0, 24));
  const before = c.size.bytes;
  // Minutes in hours 3 and 7 (two in hour 7), and one at the ceiling (no cached bucket may hold it).
  c.writtenMinutes('m1', Float64Array.from([3 * H + 5 * M, 7 * H, 7 * H + 59 * M, 24 * H]));
  assert.deepEqual(
    starts(c, 'hourly', g),
    Array.from({ length: 24 }, (_, i) => i * H).filter((s) => s !== 3 * H && s !== 7 * H),
  );
  assert.equal(c.get('other', c.begin('m2', 24 * H))?.size, 24, "another metric's buckets stay");
  assert.equal(c.size.bytes, before, 'the block stays while some of its buckets are indexed');
  assert.equal(c.begin('m1', 24 * H), g, 'no generation change: the rest of the entry is still good');
  // Writes wholly at or after the ceiling change nothing.
  c.writtenMinutes('m1', Float64Array.from([24 * H, 30 * H]));
  assert.equal(c.get('hourly', g)?.size, 22);
  // Every bucket dropped: the entry and its bytes go.
  c.writtenMinutes(
    'm1',
    Float64Array.from({ length: 24 }, (_, i) => i * H + M),
  );
  assert.equal(c.get('hourly', g), undefined);
  assert.equal(c.size.entries, 1);
});

test('sealed cells: an answer that began before a write keeps none of the buckets it touched, nor its joined text; one that began after keeps all', () => {
  const c = new SealedCells();
  const g = c.begin('m', 24 * H);
  const since = c.writeMark('m');
  // The write lands while the answer reads.
  c.writtenMinutes('m', Float64Array.from([5 * H + 30 * M]));
  c.put('k', 'm', g, hours(0, 24), null, since);
  assert.deepEqual(
    starts(c, 'k', g),
    Array.from({ length: 24 }, (_, i) => i * H).filter((s) => s !== 5 * H),
  );
  let made = 0;
  const make = () => {
    made++;
    return [Buffer.from('x')];
  };
  c.lead('k', g, 0, 5, make, since);
  c.lead('k', g, 0, 5, make, c.writeMark('m'));
  c.lead('k', g, 0, 5, make, c.writeMark('m'));
  assert.equal(made, 2, 'the text made from buckets taken before the write is used once, not kept');
  // A scan of a span the write touched is not kept; one of a span it did not touch is.
  c.putScan('touched', 'm', g, ['a'], { from: 0, to: 6 * H, since });
  c.putScan('clear', 'm', g, ['a'], { from: 6 * H, to: 12 * H, since });
  assert.equal(c.getScan('touched', g), undefined);
  assert.deepEqual(c.getScan('clear', g), ['a']);
  // A later write into the scanned span lets it go.
  c.writtenMinutes('m', Float64Array.from([8 * H]));
  assert.equal(c.getScan('clear', g), undefined);

  // More writes than are logged since an answer began: it keeps nothing.
  const old = c.writeMark('m');
  for (let i = 0; i < 100; i++) c.writtenMinutes('m', Float64Array.from([23 * H + (i % 60) * M]));
  c.put('late', 'm', g, hours(0, 24), null, old);
  assert.equal(c.get('late', g), undefined);
  c.put('fresh', 'm', g, hours(0, 24), null, c.writeMark('m'));
  assert.equal(c.get('fresh', g)?.size, 24);
});
