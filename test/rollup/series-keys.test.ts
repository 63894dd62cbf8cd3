/**
 * Issue 22, item 4: each row's series under a group_by, keyed once for every metric of the batch
 * (series-keys.ts): typed ("1", 1 and true apart, null its own value), only the rows asked for,
 * each series' hash computed once. The partials built with them: fused-pass.test.ts.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadHasher } from '../../src/rollup/hll.js';
import { seriesHash } from '../../src/rollup/series-hash.js';
import { SeriesKeys } from '../../src/rollup/series-keys.js';

before(loadHasher);

test('series keys: one id per distinct typed combination, keyed only when asked, hashed once', () => {
  const region = ['a', null, 'a', 'b', '1', null];
  const code = [1, 1, 1, 1, 1, 1];
  const mixed = ['1', 1, '1', true, 'true', null];
  const one = new SeriesKeys([mixed], mixed.length);
  assert.deepEqual(
    mixed.map((_, r) => one.id(r)),
    [0, 1, 0, 2, 3, 4],
    '"1", 1, true and "true" are apart',
  );
  const two = new SeriesKeys([region, code], region.length);
  assert.equal(two.count, 0, 'nothing keyed before it is asked');
  assert.equal(two.id(4), 0);
  assert.equal(two.id(1), 1);
  assert.equal(two.id(5), 1, 'null is its own value');
  assert.equal(two.count, 2);
  assert.deepEqual(two.values(1), [null, 1]);
  assert.equal(two.hash(0), seriesHash(['1', 1]));
  assert.equal(two.hash(1), seriesHash([null, 1]));
  assert.notEqual(two.hash(0), two.hash(1));
});
