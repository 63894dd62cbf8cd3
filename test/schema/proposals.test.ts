import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SchemaBook, type BookSettings } from '../../src/schema/book.js';
import { Fingerprinter } from '../../src/schema/fingerprint.js';
import { detectProposals, keyLooksLikeData, keysLookLikeData } from '../../src/schema/proposals.js';
import { rekey, skeletonOf, parseRenderedPath } from '../../src/schema/rekey.js';
import { buildReport } from '../../src/schema/report.js';
import type { FingerprintRules } from '../../src/schema/rules.js';
import type { Shape } from '../../src/schema/shape.js';

const rules: FingerprintRules = { opaquePaths: [], trackedPaths: [], maxDepth: 6 };
const T0 = Date.parse('2026-01-01T00:00:00Z');
const settings: BookSettings = {
  schema_nulls: 'auto',
  schema_optional_keys: 'manual',
  schema_recurrence_gap_ms: 60_000,
  schema_bulk_rows: 0,
  schema_stale_after_ms: 3_600_000,
  schema_identity_limit: 100,
  schema_candidate_pool: 100,
  schema_alias_pool: 100,
};
let n = 0;
const newId = () => `sch_${String(++n).padStart(20, '0')}`;

function bookOf(records: Record<string, unknown>[], r: FingerprintRules = rules): SchemaBook {
  const fp = new Fingerprinter(r);
  const book = new SchemaBook({ teamId: 't', projectId: 'p', collectionId: 'c' });
  const sightings = records.map((rec, i) => {
    const shape = fp.describe(rec) as Shape;
    return {
      key: fp.fingerprint(rec),
      hash: shape.hash,
      rows: 1,
      firstMs: T0 + i,
      lastMs: T0 + i,
      shape,
      sample: JSON.stringify(rec),
    };
  });
  book.apply(book.planBatch(sightings, T0 + records.length, settings, newId));
  return book;
}

const byDay = ['2026-01-01', '2026-01-02', '2026-01-03', '2026-01-04'].map((d) => ({
  id: 1,
  stats: { v: 1, [d]: { clicks: 3 } },
}));

test('key classification table', () => {
  const data = [
    '2026-01-01',
    '2026-01-01T10:00:00Z',
    '550e8400-e29b-41d4-a716-446655440000',
    'a3f9c2e81b7d4f60',
    '12345',
    'usr_8f3k2j9d0s',
    'bob@example.com',
    '10.0.0.1',
  ];
  const names = ['user_id', 'name', 'createdAt', 'v2', 'items', 'http_status'];
  for (const k of data) assert.equal(keyLooksLikeData(k), true, k);
  for (const k of names) assert.equal(keyLooksLikeData(k), false, k);
});

test('the detector proposes a path whose child keys are invented, keeping the shared child tracked', () => {
  const book = bookOf(byDay);
  const shapes = [...book.shapes.values()];
  assert.equal(shapes.length, 4);
  const [p, ...more] = detectProposals(shapes, rules);
  assert.equal(more.length, 0);
  assert.deepEqual(p, {
    object: 'collection_schema_proposal',
    path: ['stats'],
    tracked: ['v'],
    content_children: 4,
    read_by_mapping: false,
    shapes_after: 1,
  });
  assert.equal(detectProposals(shapes, rules, () => true)[0]!.read_by_mapping, true);
});

test('no proposal for ordinary field names', () => {
  const book = bookOf([{ a: 1, b: { x: 1 } }, { a: 1, b: { y: 1 } }, { a: 'x' }]);
  assert.deepEqual(detectProposals([...book.shapes.values()], rules), []);
});

test('keys_look_like_data: every shape has its own top-level keys', () => {
  assert.equal(
    keysLookLikeData([...bookOf([{ '2026-01-01': 1 }, { '2026-01-02': 1 }, { '2026-01-03': 1 }]).shapes.values()]),
    true,
  );
  assert.equal(keysLookLikeData([...bookOf(byDay).shapes.values()]), false);
});

test('report and preview: preview counts shapes after, changes nothing', () => {
  const book = bookOf(byDay);
  const shapes = [...book.shapes.values()];
  const report = buildReport({ collectionId: 'c', current: rules, rules, shapes });
  assert.deepEqual(report.shapes, { before: 4, after: 4 });
  assert.equal(report.proposals.length, 1);
  assert.deepEqual(report.unclassified, { shapes: 0, rows: 0, shapes_exact: true });
  const preview = buildReport({
    collectionId: 'c',
    current: rules,
    rules: { ...rules, opaquePaths: [['stats']] },
    shapes,
  });
  assert.deepEqual(preview.shapes, { before: 4, after: 1 });
  assert.deepEqual(preview.rules, { opaque_paths: [['stats']], tracked_paths: [], max_depth: 6 });
  assert.deepEqual(preview.proposals, []);
  assert.equal(book.shapes.size, 4);
});

test('re-keying merges versions whose shapes coincide, summing rows, keeping the oldest', () => {
  const book = bookOf(byDay);
  const versions = book.live();
  assert.equal(versions.length, 4);
  const out = rekey(
    { ...rules, opaquePaths: [['stats']], trackedPaths: [['stats', 'v']] },
    versions,
    [...book.shapes.values()],
    T0 + 10,
  );
  const live = out.versions.filter((v) => v.merged_into === null);
  assert.equal(live.length, 1);
  assert.equal(out.merged, 3);
  assert.equal(live[0]!.version, 1);
  assert.equal(live[0]!.row_count, 4);
  assert.equal(live[0]!.signature, 'id:number,stats:object,stats.v:number');
  assert.equal(out.shapes.length, 1);
  assert.equal(out.shapes[0]!.rows, 4);
  for (const v of out.versions.filter((x) => x.merged_into !== null)) assert.equal(v.merged_into, live[0]!.id);
});

test('skeleton records reproduce their shape', () => {
  const rec = { a: [1, 'x', { b: null, c: [true] }], d: { e: {} } };
  const fp = new Fingerprinter(rules);
  const shape = fp.describe(rec) as Shape;
  assert.equal((fp.describe(skeletonOf(shape.entries)) as Shape).hash, shape.hash);
  for (const e of shape.entries) assert.deepEqual(parseRenderedPath(e.path), e.segments);
  assert.deepEqual(parseRenderedPath('["a.b"].c[]["x\\"y"]'), ['a.b', 'c', null, 'x"y']);
});

test('skeletons keep keys that Object.prototype also has (constructor, toString, __proto__)', () => {
  const rec = JSON.parse('{"constructor":1,"toString":"s","__proto__":{"x":true},"pad":"p"}') as Record<
    string,
    unknown
  >;
  const fp = new Fingerprinter(rules);
  const shape = fp.describe(rec) as Shape;
  assert.equal(shape.signature, '__proto__:object,__proto__.x:boolean,constructor:number,pad:string,toString:string');
  const skeleton = skeletonOf(shape.entries);
  assert.equal(Object.getPrototypeOf(skeleton), Object.prototype, 'the prototype is not replaced');
  assert.equal((fp.describe(skeleton) as Shape).hash, shape.hash);
});
