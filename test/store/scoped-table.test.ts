import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Index, Table } from '../../src/store/table.js';
import { RefIndex, ScopedTable } from '../../src/store/scoped-table.js';
import { scratchStore } from '../helpers/scratch-store.js';

interface Rec {
  id: string;
  name: string;
}

test('scoped table: get, byId and list read what put staged; remove drops the record and its id entry together', async (t) => {
  const store = scratchStore(t, 'sluice-scoped-');
  const table = new ScopedTable<Rec>(store, 'things', 'thing_scope');
  await store.transaction(() => {
    void table.put('team_a', { id: 'x1', name: 'one' });
    void table.put('team_a', { id: 'x2', name: 'two' });
    void table.put('team_b', { id: 'y1', name: 'three' });
  });
  assert.deepEqual(table.get('team_a', 'x1'), { id: 'x1', name: 'one' });
  assert.equal(table.get('team_b', 'x1'), undefined, 'get is scoped: x1 is not under team_b');
  assert.deepEqual(table.byId('y1'), { id: 'y1', name: 'three' });
  assert.equal(table.byId('nope'), undefined);
  assert.deepEqual(
    table.list('team_a').map((r) => r.id),
    ['x1', 'x2'],
  );
  assert.deepEqual(
    table.list('team_b').map((r) => r.id),
    ['y1'],
  );
  assert.deepEqual(table.list('team_c'), []);
  assert.deepEqual(
    [...table.all()].map((e) => `${e.scope}:${e.value.id}`),
    ['team_a:x1', 'team_a:x2', 'team_b:y1'],
  );
  // The id index is the named database given: the stored layout stays what the stores had.
  assert.equal(new Index(store, 'thing_scope').get('x2'), 'team_a');
  assert.deepEqual(new Table<Rec>(store, 'things').get('team_b', 'y1'), { id: 'y1', name: 'three' });

  await store.transaction(() => void table.remove('team_a', 'x1'));
  assert.equal(table.get('team_a', 'x1'), undefined);
  assert.equal(table.byId('x1'), undefined);
  assert.equal(table.scopeOf.get('x1'), undefined, 'the id entry goes with the record');
  assert.deepEqual(
    table.list('team_a').map((r) => r.id),
    ['x2'],
  );
});

test('scoped table: a transaction that throws leaves neither the record nor its id entry', async (t) => {
  const store = scratchStore(t, 'sluice-scoped-');
  const table = new ScopedTable<Rec>(store, 'things', 'thing_scope');
  await assert.rejects(
    store.transaction(() => {
      void table.put('team_a', { id: 'x1', name: 'one' });
      throw new Error('abort');
    }),
  );
  assert.equal(table.get('team_a', 'x1'), undefined);
  assert.equal(table.scopeOf.get('x1'), undefined);
  assert.equal(table.byId('x1'), undefined);
});

test('ref index: finds a record by a secondary key through its `scope/id` ref, and nothing once either is gone', async (t) => {
  const store = scratchStore(t, 'sluice-scoped-');
  const table = new Table<Rec>(store, 'keys');
  const refs = new RefIndex(store, 'keys_by_hash');
  await store.transaction(() => {
    void table.put('team_a', { id: 'k1', name: 'key' });
    void refs.putRef('hash1', 'team_a', 'k1');
    void refs.put('broken', 'no-slash');
  });
  assert.equal(refs.get('hash1'), 'team_a/k1', 'stored as the text the stores always wrote');
  assert.deepEqual(refs.find(table, 'hash1'), { id: 'k1', name: 'key' });
  assert.equal(refs.find(table, 'hash2'), undefined);
  assert.equal(refs.find(table, 'broken'), undefined);
  await store.transaction(() => void table.remove('team_a', 'k1'));
  assert.equal(refs.find(table, 'hash1'), undefined, 'a dangling ref finds nothing');
});
