import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_OUTPUT_NAME,
  MAX_PROPOSED_FIELDS,
  RESERVED_QUERY_KEYS,
  nameFromPath,
  proposeOutputSchema,
} from '../../src/transform/propose-schema.js';
import { fieldsOfRecord, versionOf } from './mapping-fixture.js';

const names = (versions: Array<{ fields: ReturnType<typeof fieldsOfRecord> }>) =>
  proposeOutputSchema(versions).map((f) => `${f.name}:${f.type}`);

test('proposal: scalar leaves and arrays of scalars; objects, arrays of objects and null-only paths give none', () => {
  const v = {
    fields: fieldsOfRecord({
      id: 1,
      ok: true,
      name: 'n',
      gone: null,
      geo: { lat: 1.5 },
      tags: ['a', 1],
      empty: [],
      rows: [{ sku: 'x', dims: { w: 1 } }],
      nested: [[1]],
    }),
  };
  assert.deepEqual(names([v]), [
    'empty:array',
    'geo_lat:number',
    'id:number',
    'name:string',
    'ok:boolean',
    'rows_dims_w:array',
    'rows_sku:array',
    'tags:array',
  ]);
});

test('proposal: paths in more versions first, then first sight; types merged across versions', () => {
  const v1 = { fields: fieldsOfRecord({ b: 1, only1: 'x', code: 1, mixed: 1 }) };
  const v2 = { fields: fieldsOfRecord({ a: 1, b: 2, code: 'A1', mixed: [1] }) };
  const v3 = { fields: fieldsOfRecord({ a: 1, b: 3, code: true }) };
  // b in 3 versions; a and code in 2 (code first seen earlier); mixed is a scalar and an array: none.
  assert.deepEqual(names([v1, v2, v3]), ['b:number', 'code:string', 'a:number', 'only1:string']);
});

test('proposal: reserved query keys and taken names are renamed, internal names left out', () => {
  const record: Record<string, unknown> = {
    __v: 1,
    _sluice_x: 1,
    _id: 'i',
    user: { name: 'a' },
    user_name: 'b',
    'user-name': 'c',
  };
  for (const k of RESERVED_QUERY_KEYS) record[k] = 1;
  record['Limit'] = 2;
  const got = proposeOutputSchema([{ fields: fieldsOfRecord(record) }]).map((f) => f.name);
  for (const k of RESERVED_QUERY_KEYS) {
    assert.ok(!got.includes(k), k);
    assert.ok(got.includes(`${k}_value`), k);
  }
  assert.ok(got.includes('Limit_value'));
  assert.ok(!got.some((n) => n.startsWith('__') || n.startsWith('_sluice_')));
  assert.ok(got.includes('_id'));
  // Rendered paths sort `["user-name"]` before `user.name` and `user_name`.
  assert.deepEqual(
    got.filter((n) => n.startsWith('user')),
    ['user_name', 'user_name_2', 'user_name_3'],
  );
  assert.equal(new Set(got).size, got.length);
});

test('proposal: at most MAX_PROPOSED_FIELDS, names within MAX_OUTPUT_NAME', () => {
  const record: Record<string, unknown> = {};
  for (let i = 0; i < 100; i++) record[`f${String(i).padStart(3, '0')}`] = i;
  const schema = proposeOutputSchema([versionOf(fieldsOfRecord(record))]);
  assert.equal(schema.length, MAX_PROPOSED_FIELDS);
  assert.equal(schema[0]!.name, 'f000');
  const long = 'k'.repeat(200);
  const twice = proposeOutputSchema([{ fields: fieldsOfRecord({ [long]: 1, [long + '!']: 2 }) }]).map((f) => f.name);
  assert.deepEqual(
    twice.map((n) => n.length),
    [MAX_OUTPUT_NAME, MAX_OUTPUT_NAME],
  );
  assert.notEqual(twice[0], twice[1]);
});

test('names from paths', () => {
  assert.equal(nameFromPath(['user', 'name']), 'user_name');
  assert.equal(nameFromPath(['items', null, 'sku']), 'items_sku');
  assert.equal(nameFromPath(['a.b', 'c d!']), 'a_b_c_d');
  assert.equal(nameFromPath(['名前']), '名前');
  assert.equal(nameFromPath(['!!']), 'field');
  assert.equal(nameFromPath(['__v']), null);
  assert.equal(nameFromPath(['_sluice_shape']), null);
});
