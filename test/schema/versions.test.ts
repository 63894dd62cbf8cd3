import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SchemaBook, type BookSettings, type Sighting } from '../../src/schema/book.js';
import { effectiveState, settleByHand } from '../../src/schema/versions.js';
import { HOUR, T0, owner, bookSettings, newId, sight } from './book-fixture.js';

const settings = bookSettings({ schema_candidate_pool: 3 });

function run(book: SchemaBook, sightings: Sighting[], nowMs: number, s: BookSettings = settings) {
  const plan = book.planBatch(sightings, nowMs, s, newId);
  book.apply(plan);
  return plan;
}

test('a new shape opens a candidate; it settles when it recurs after the gap', () => {
  const book = new SchemaBook(owner);
  run(book, [sight({ a: 1 }, 5, T0)], T0);
  const [v] = book.live();
  assert.equal(v!.state, 'candidate');
  assert.equal(v!.version, 1);
  assert.equal(v!.row_count, 5);
  run(book, [sight({ a: 2 }, 1, T0 + HOUR / 2)], T0 + HOUR / 2);
  assert.equal(book.live()[0]!.state, 'candidate', 'too early to settle');
  run(book, [sight({ a: 3 }, 1, T0 + HOUR)], T0 + HOUR);
  const settled = book.live()[0]!;
  assert.equal(settled.state, 'settled');
  assert.equal(settled.settled_by, 'recurrence');
  assert.equal(settled.row_count, 7);
});

test('bulk rows in one batch settle at once; 0 disables', () => {
  const book = new SchemaBook(owner);
  run(book, [sight({ b: 'x' }, 1000, T0)], T0);
  assert.equal(book.live()[0]!.state, 'settled');
  assert.equal(book.live()[0]!.settled_by, 'bulk');
  const off = new SchemaBook(owner);
  run(off, [sight({ b: 'x' }, 5000, T0)], T0, { ...settings, schema_bulk_rows: 0 });
  assert.equal(off.live()[0]!.state, 'candidate');
});

test('a candidate goes stale when not seen within stale_after; settled never goes back', () => {
  const book = new SchemaBook(owner);
  run(book, [sight({ c: 1 }, 1, T0), sight({ d: true }, 2000, T0)], T0);
  const later = T0 + 25 * HOUR;
  const [cand, settledV] = [
    book.live().find((v) => v.fields[0]!.path === 'c')!,
    book.live().find((v) => v.fields[0]!.path === 'd')!,
  ];
  assert.equal(effectiveState(cand, later, settings), 'stale');
  assert.equal(effectiveState(settledV, later * 10, settings), 'settled');
  run(book, [], later);
  const stale = book.versions.get(cand.id)!;
  assert.equal(stale.state, 'stale');
  assert.equal(stale.stale_at, new Date(T0 + 24 * HOUR).toISOString());
  // Seen again after the gap: recurs, so it settles.
  run(book, [sight({ c: 2 }, 1, later + 1)], later + 1);
  assert.equal(book.versions.get(cand.id)!.state, 'settled');
});

test('settling by hand; an already settled version answers already_settled', () => {
  const book = new SchemaBook(owner);
  run(book, [sight({ e: 1 }, 1, T0)], T0);
  const v = book.live()[0]!;
  const out = settleByHand(v, T0, 0, settings);
  assert.ok(out.ok);
  assert.equal(out.version.settled_by, 'hand');
  assert.deepEqual(settleByHand(out.version, T0, 1, settings), { ok: false, reason: 'already_settled' });
  assert.deepEqual(settleByHand(v, T0, 4, settings), { ok: false, reason: 'identity_limit' });
});

test('optional keys auto: a subset shape joins the version and marks the missing field optional', () => {
  const book = new SchemaBook(owner);
  run(book, [sight({ a: 1, b: 'x', c: true }, 1, T0)], T0);
  const plan = run(book, [sight({ a: 1, b: 'y' }, 3, T0 + 1)], T0 + 1);
  assert.equal(book.live().length, 1);
  const v = book.live()[0]!;
  assert.equal(v.shape_count, 2);
  assert.equal(v.row_count, 4);
  assert.deepEqual(
    v.fields.find((f) => f.path === 'c'),
    { path: 'c', type: 'boolean', optional: true },
  );
  assert.equal([...plan.assign.values()][0]!.versionId, v.id);
  const manual = new SchemaBook(owner);
  run(manual, [sight({ a: 1, b: 'x', c: true }, 1, T0)], T0, { ...settings, schema_optional_keys: 'manual' });
  run(manual, [sight({ a: 1, b: 'y' }, 3, T0 + 1)], T0 + 1, { ...settings, schema_optional_keys: 'manual' });
  assert.equal(manual.live().length, 2);
});

test('nulls auto: a null where the version has a type joins it', () => {
  const book = new SchemaBook(owner);
  run(book, [sight({ a: 1, b: 'x' }, 1, T0)], T0);
  run(book, [sight({ a: null, b: 'x' }, 1, T0)], T0);
  assert.equal(book.live().length, 1);
  assert.equal(book.live()[0]!.fields.find((f) => f.path === 'a')!.type, 'number|null');
  const manual = new SchemaBook(owner);
  const m = { ...settings, schema_nulls: 'manual' as const, schema_optional_keys: 'manual' as const };
  run(manual, [sight({ a: 1, b: 'x' }, 1, T0)], T0, m);
  run(manual, [sight({ a: null, b: 'x' }, 1, T0)], T0, m);
  assert.equal(manual.live().length, 2);
});

test('past the candidate pool new shapes stay unclassified, and are classified when room appears', () => {
  const book = new SchemaBook(owner);
  const plan = run(
    book,
    [1, 2, 3, 4, 5].map((i) => sight({ ['k' + i]: i }, 10 - i, T0)),
    T0,
  );
  assert.equal(book.live().length, 3, 'candidate pool is 3');
  const unclassified = [...plan.assign.values()].filter((a) => a.versionId === null);
  assert.equal(unclassified.length, 2);
  assert.deepEqual(book.unclassified(), { shapes: 2, rows: 6 + 5 });
  // Settle two by bulk: the pool gets room, the unclassified ones are classified on next sight.
  run(book, [sight({ k1: 1 }, 1000, T0 + 1), sight({ k2: 1 }, 1000, T0 + 1)], T0 + 1);
  run(book, [sight({ k4: 1 }, 1, T0 + 2)], T0 + 2);
  assert.equal(book.live().length, 4);
  assert.equal(book.unclassified().shapes, 1);
});

test('past the identity limit new shapes stay unclassified', () => {
  const book = new SchemaBook(owner);
  const s = { ...settings, schema_identity_limit: 1, schema_bulk_rows: 1 };
  run(book, [sight({ x: 1 }, 1, T0)], T0, s);
  assert.equal(book.live()[0]!.state, 'settled');
  const plan = run(book, [sight({ y: 1 }, 1, T0)], T0, s);
  assert.equal([...plan.assign.values()][0]!.versionId, null);
});

test('the alias cache is bounded by schema_alias_pool', () => {
  const book = new SchemaBook(owner);
  const s = { ...settings, schema_alias_pool: 16, schema_candidate_pool: 100 };
  const sightings = Array.from({ length: 40 }, (_, i) => sight({ ['f' + i]: i }, 1, T0));
  run(book, sightings, T0, s);
  assert.equal(book.unknownKeys(sightings.map((x) => x.key)).length, 24);
  // Uncached shapes still resolve (through the stored shapes) to the same version next time.
  const again = run(book, [{ ...sightings[39]!, shape: undefined }], T0 + 1, s);
  assert.equal([...again.assign.values()][0]!.versionId, book.live().find((v) => v.fields[0]!.path === 'f39')!.id);
});
