import { test } from 'node:test';
import assert from 'node:assert/strict';
import { scratchStore } from '../helpers/scratch-store.js';

/**
 * Store.transaction is all or nothing: a callback that throws commits none of its writes (lmdb-js's
 * plain async `transaction` would commit those staged before the throw), and its after-commit hooks
 * run only for the transactions that committed.
 */
test('store transaction: a throwing callback commits nothing; after-commit hooks follow the outcome', async (t) => {
  const store = scratchStore(t, 'sluice-store-');
  const db = store.db<number, string>('t');
  const seen: string[] = [];
  // Queued in the same event-loop turn: lmdb-js commits them together, yet each is its own unit.
  const a = store.transaction(() => {
    void db.put('a', 1);
    store.afterCommit(
      () => seen.push('a committed'),
      () => seen.push('a failed'),
    );
    return 'a';
  });
  const b = store.transaction(() => {
    void db.put('b', 1);
    store.afterCommit(
      () => seen.push('b committed'),
      () => seen.push('b failed'),
    );
    throw new Error('b aborts');
  });
  const c = store.transaction(() => {
    void db.put('c', (db.get('a') ?? 0) + 1);
    store.afterCommit(() => seen.push('c committed'));
    return 'c';
  });
  assert.equal(await a, 'a');
  await assert.rejects(b, (e: Error) => (e.cause as Error | undefined)?.message === 'b aborts');
  assert.equal(await c, 'c');
  assert.deepEqual([db.get('a'), db.get('b'), db.get('c')], [1, undefined, 2]);
  assert.deepEqual(seen, ['a committed', 'b failed', 'c committed']);
  assert.throws(() => store.afterCommit(() => {}), /outside a Store.transaction/);
});
