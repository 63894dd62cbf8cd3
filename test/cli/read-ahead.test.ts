import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readAhead } from '../../src/cli/ingest/read-ahead.js';

/** A source that counts how far it was read and whether it was closed. */
function counted(n: number, failAt = -1) {
  const state = { produced: 0, closed: false };
  async function* gen() {
    try {
      for (let i = 0; i < n; i++) {
        if (i === failAt) throw new Error(`bad item ${i}`);
        state.produced++;
        yield i;
      }
    } finally {
      state.closed = true;
    }
  }
  return { state, source: gen() };
}

test('yields every item in order, reading at most `ahead` items in advance', async () => {
  const { state, source } = counted(20);
  const seen: number[] = [];
  for await (const x of readAhead(source, 3)) {
    // Let the read-ahead run as far as it may before the consumer looks again.
    await new Promise((r) => setImmediate(r));
    seen.push(x);
    assert.ok(state.produced <= x + 1 + 3, `item ${x}: ${state.produced} read`);
    assert.ok(state.produced >= Math.min(20, x + 1 + 1), `item ${x}: the next ones are read while it is used`);
  }
  assert.deepEqual(
    seen,
    Array.from({ length: 20 }, (_, i) => i),
  );
  assert.equal(state.closed, true);
});

test('a consumer that stops early closes the source; a failure reaches the consumer in order', async () => {
  const a = counted(100);
  for await (const x of readAhead(a.source, 4)) if (x === 2) break;
  assert.equal(a.state.closed, true);
  assert.ok(a.state.produced <= 2 + 1 + 4, `${a.state.produced} read`);

  const b = counted(10, 5);
  const seen: number[] = [];
  await assert.rejects(async () => {
    for await (const x of readAhead(b.source, 4)) seen.push(x);
  }, /bad item 5/);
  assert.deepEqual(seen, [0, 1, 2, 3, 4]);
});
