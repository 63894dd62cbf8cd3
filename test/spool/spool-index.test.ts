import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeIndexValue, encodeIndexValue, type IndexValue } from '../../src/spool/spool-index.js';

const decoded = (b: Buffer) => {
  const v = b as Buffer & { start: number; end: number };
  return decodeIndexValue(v.subarray(v.start, v.end), v.end - v.start);
};

describe('spool index values (binary layout)', () => {
  it('round-trip, any project id, with and without the body size', () => {
    const values: IndexValue[] = [
      [1, 'prj_01HZX', 1_767_225_642_000, 'ndjson', 187],
      [10_000, 'prj_ümlaut_日本', 0, 'array', 2_000_000_000_000],
      [3, '', 8.64e15 - 1, 'object'],
    ];
    for (const v of values) assert.deepEqual(decoded(encodeIndexValue(v)), v);
  });

  it('values already encoded stay as they are when later ones fill the slab and a new one is taken', () => {
    const kept: Array<[Buffer, number, number, IndexValue]> = [];
    for (let i = 0; i < 5000; i++) {
      const v: IndexValue = [i, `prj_${i}`, 1_700_000_000_000 + i, 'ndjson', i * 3];
      const b = encodeIndexValue(v) as Buffer & { start: number; end: number };
      kept.push([b, b.start, b.end, v]);
    }
    assert.ok(new Set(kept.map(([b]) => b)).size > 1, 'more than one slab');
    for (const [b, start, end, v] of kept) assert.deepEqual(decodeIndexValue(b.subarray(start, end), end - start), v);
  });
});
