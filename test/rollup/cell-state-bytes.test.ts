/**
 * The fused builder writes each cell's state bytes straight from its records (cell-state-bytes.ts).
 * They must decode to the state the sketches give for the same records — state by state over seeded
 * random cells: positive, negative, zero and tiny values, repeats, no values, no hashes, repeated
 * hashes, cells past the exact distinct form — and a non-finite value fails as QuantileSketch.add does.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeState, emptyState, encodeState } from '../../src/rollup/bucket-state.js';
import { encodeCell, valueBucket, type CellRecords } from '../../src/rollup/cell-state-bytes.js';
import { hashValue, loadHasher } from '../../src/rollup/hll.js';
import { mulberry32 } from '../helpers/seeded-random.js';

before(loadHasher);

interface Draw {
  values: number[] | null;
  hashes: bigint[] | null;
  count: number;
  last: number | null;
  lastAt: number;
}

function cellOf(d: Draw): CellRecords {
  const n = d.values?.length ?? 0;
  const buckets = new Float64Array(n);
  const kinds = new Uint8Array(n);
  d.values?.forEach((v, i) => (kinds[i] = valueBucket(v, buckets, i)));
  const h = d.hashes ?? [];
  return {
    count: d.count,
    values: d.values ? Float64Array.from(d.values) : null,
    buckets: d.values ? buckets : null,
    kinds: d.values ? kinds : null,
    valueCount: n,
    last: d.last ?? 0,
    lastAt: d.last === null ? -Infinity : d.lastAt,
    hashHi: d.hashes ? Uint32Array.from(h, (x) => Number(x >> 32n)) : null,
    hashLo: d.hashes ? Uint32Array.from(h, (x) => Number(x & 0xffffffffn)) : null,
    hashCount: h.length,
  };
}

function viaSketches(d: Draw): Uint8Array {
  const s = emptyState({ values: d.values !== null, distinct: d.hashes !== null });
  s.count = d.count;
  for (const v of d.values ?? []) s.values!.add(v);
  for (const h of d.hashes ?? []) s.distinct!.addHash(h);
  if (d.last !== null) {
    s.last = d.last;
    s.lastAt = d.lastAt;
  }
  return encodeState(s);
}

test('cell bytes decode to the state the sketches give for the same records', () => {
  const rnd = mulberry32(22);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  for (let k = 0; k < 600; k++) {
    const n = pick([0, 1, 1, 2, 3, 10, 40, 300]);
    const hasValues = rnd() < 0.8;
    const values = hasValues
      ? Array.from({ length: n }, () =>
          pick([
            () => Math.round(rnd() * 1e4) / 100,
            () => -rnd() * 50,
            () => 0,
            () => 1e-12,
            () => -0,
            () => 42,
            () => 1e300 * rnd(),
          ])(),
        )
      : null;
    const users = pick([1, 5, 50, 1_000]);
    const hashes =
      rnd() < 0.7
        ? Array.from({ length: pick([0, 1, 2, 8, 33, 400]) }, () => hashValue(`u${Math.floor(rnd() * users)}`))
        : null;
    const last = values && values.length > 0 ? values[values.length - 1]! : null;
    const d: Draw = {
      values,
      hashes,
      count: Math.max(n, hashes?.length ?? 0) + pick([0, 0, 3]),
      last,
      lastAt: 1_700_000_000_000 + k,
    };
    const want = viaSketches(d);
    const got = encodeCell(cellOf(d));
    assert.deepEqual(
      encodeState(decodeState(got)),
      want,
      `cell ${k}: ${JSON.stringify({ n, h: hashes?.length, users })}`,
    );
  }
});

test('a non-finite value fails the cell as QuantileSketch.add does', () => {
  for (const bad of [Infinity, -Infinity, NaN])
    assert.throws(
      () => encodeCell(cellOf({ values: [1, bad], hashes: null, count: 2, last: null, lastAt: 0 })),
      (err: Error) =>
        err instanceof RangeError && err.message === `QuantileSketch.add: value must be finite, got ${bad}`,
    );
});
