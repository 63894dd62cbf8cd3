import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  coerceOutputs,
  coerceValue,
  inferOutputSchema,
  parseIsoDate,
  validateOutputSchema,
  type OutputField,
  type OutputFieldType,
} from '../../src/transform/output-schema.js';

const FAIL = Symbol('not coercible');

describe('coerceValue: the coercion table', () => {
  const cases: Array<[OutputFieldType, unknown, unknown]> = [
    // string: everything converts
    ['string', 'abc', 'abc'],
    ['string', '', ''],
    ['string', 12.5, '12.5'],
    ['string', -0, '0'],
    ['string', true, 'true'],
    ['string', { a: [1, 'x'] }, '{"a":[1,"x"]}'],
    ['string', [1, 2], '[1,2]'],
    // number: finite numbers, strings in JSON number syntax
    ['number', 3, 3],
    ['number', -1.5e-7, -1.5e-7],
    ['number', '12.5', 12.5],
    ['number', '-0', -0],
    ['number', '1e3', 1000],
    ['number', '1E+3', 1000],
    ['number', ' 12', FAIL],
    ['number', '12 ', FAIL],
    ['number', '', FAIL],
    ['number', '0x10', FAIL],
    ['number', '1_000', FAIL],
    ['number', '+5', FAIL],
    ['number', '.5', FAIL],
    ['number', '05', FAIL],
    ['number', 'Infinity', FAIL],
    ['number', '1e400', FAIL],
    ['number', 'abc', FAIL],
    ['number', true, FAIL],
    ['number', [1], FAIL],
    ['number', { n: 1 }, FAIL],
    // boolean: booleans, "true"/"false", 1/0
    ['boolean', false, false],
    ['boolean', 'true', true],
    ['boolean', 'false', false],
    ['boolean', 1, true],
    ['boolean', 0, false],
    ['boolean', 'TRUE', FAIL],
    ['boolean', 'yes', FAIL],
    ['boolean', 2, FAIL],
    ['boolean', '1', FAIL],
    ['boolean', [], FAIL],
    // date: ISO-8601 strings and epoch ms numbers → epoch ms
    ['date', '2026-01-02T03:04:05Z', Date.UTC(2026, 0, 2, 3, 4, 5)],
    ['date', '2026-01-02T03:04:05.123456Z', Date.UTC(2026, 0, 2, 3, 4, 5, 123)],
    ['date', '2026-01-02T03:04:05.1+02:00', Date.UTC(2026, 0, 2, 1, 4, 5, 100)],
    ['date', '2026-01-02T03:04:05-0530', Date.UTC(2026, 0, 2, 8, 34, 5)],
    ['date', '2026-01-02 03:04:05', Date.UTC(2026, 0, 2, 3, 4, 5)],
    ['date', '2026-01-02T03:04', Date.UTC(2026, 0, 2, 3, 4)],
    ['date', '2026-01-02', Date.UTC(2026, 0, 2)],
    ['date', '0099-06-01T00:00:00Z', Date.parse('0099-06-01T00:00:00Z')],
    ['date', 1767225600000, 1767225600000],
    ['date', 1767225600, 1767225600],
    ['date', -1, -1],
    ['date', '2023-02-29', FAIL],
    ['date', '2024-02-30T00:00:00Z', FAIL],
    ['date', '2026-13-01', FAIL],
    ['date', '2026-01-02T24:00:00Z', FAIL],
    ['date', '2026-01-02T03:04:05+25:00', FAIL],
    ['date', 'Wed Oct 10 20:19:24 +0000 2018', FAIL],
    ['date', '1767225600000', FAIL],
    ['date', 9e15, FAIL],
    ['date', true, FAIL],
    ['date', { t: 1 }, FAIL],
    // array: arrays → JSON text
    ['array', [1, 'a', { b: null }], '[1,"a",{"b":null}]'],
    ['array', [], '[]'],
    ['array', '[1,2]', FAIL],
    ['array', { 0: 'a' }, FAIL],
    // null: nothing but null fits
    ['null', 0, FAIL],
    ['null', 'null', FAIL],
  ];
  for (const [type, input, want] of cases) {
    it(`${type} ← ${JSON.stringify(input)}`, () => {
      const got = coerceValue(input, type);
      if (want === FAIL) assert.equal(got, undefined);
      else assert.deepEqual(got, want);
    });
  }
});

describe('parseIsoDate', () => {
  it('agrees with Date.parse on zoned ISO date-times', () => {
    for (const s of [
      '2026-03-29T01:30:00Z',
      '1969-12-31T23:59:59.999Z',
      '2000-02-29T12:00:00+14:00',
      '1900-01-01T00:00:00-12:00',
      '9999-12-31T23:59:59.999Z',
    ]) {
      assert.equal(parseIsoDate(s), Date.parse(s), s);
    }
  });
});

describe('coerceOutputs', () => {
  const schema: OutputField[] = [
    { name: 'id', type: 'number' },
    { name: 'name', type: 'string' },
    { name: 'ok', type: 'boolean' },
    { name: 'at', type: 'date' },
    { name: 'tags', type: 'array' },
    { name: 'nothing', type: 'null' },
    { name: 'toString', type: 'string' },
  ];

  it('builds one typed value array per field; missing or null is null, not a failure', () => {
    const rows: unknown[] = [
      { id: 1, name: 'a', ok: true, at: '2026-01-01T00:00:00Z', tags: ['x'], nothing: null, toString: 't' },
      { id: '2', name: 7, ok: 'false', at: 1767225600000, tags: [], extra: 1 },
      {},
      { id: null, name: null },
    ];
    const { columns, counts } = coerceOutputs(rows, schema);
    assert.deepEqual(
      columns.map((c) => [c.name, c.type, c.values]),
      [
        ['id', 'number', [1, 2, null, null]],
        ['name', 'string', ['a', '7', null, null]],
        ['ok', 'boolean', [true, false, null, null]],
        ['at', 'date', [1767225600000, 1767225600000, null, null]],
        ['tags', 'array', ['["x"]', '[]', null, null]],
        ['nothing', 'null', [null, null, null, null]],
        ['toString', 'string', ['t', null, null, null]],
      ],
    );
    // "2", 7, "false", 2 dates, 2 arrays.
    assert.deepEqual(counts, { coerced: 7, failed: {}, extra: { extra: 1 } });
  });

  it('stores a value that does not fit as null and counts it per field, never silently', () => {
    const rows = [{ id: 'abc', ok: 'maybe', at: 'yesterday', tags: 'x', nothing: 5 }, { id: true }, { id: 3 }];
    const { columns, counts } = coerceOutputs(rows, schema);
    assert.deepEqual(columns[0]!.values, [null, null, 3]);
    assert.deepEqual(counts.failed, { id: 2, ok: 1, at: 1, tags: 1, nothing: 1 });
    assert.equal(counts.coerced, 0);
  });

  it('counts keys outside the schema per key; inherited names are not values', () => {
    const rows = [{ a: 1, b: 2 }, { a: 3 }, Object.create({ inherited: 1 }) as object];
    const { columns, counts } = coerceOutputs(rows, [
      { name: 'x', type: 'string' },
      { name: 'constructor', type: 'string' },
    ]);
    assert.deepEqual(counts.extra, { a: 2, b: 1 });
    assert.deepEqual(columns[1]!.values, [null, null, null]);
  });
});

describe('validateOutputSchema', () => {
  it('accepts a valid schema', () => {
    assert.deepEqual(
      validateOutputSchema([
        { name: 'id', type: 'number' },
        { name: 'Country code', type: 'string', description: 'ISO 3166' },
      ]),
      [],
    );
  });

  const cases: Array<[string, unknown[], Array<[number, string | null, RegExp]>]> = [
    [
      'an unknown type',
      [{ name: 'a', type: 'int' }],
      [[0, 'type', /must be one of string, number, boolean, date, array, null/]],
    ],
    [
      'a duplicate name (case-insensitive)',
      [
        { name: 'a', type: 'string' },
        { name: 'b', type: 'string' },
        { name: 'A', type: 'number' },
      ],
      [[2, 'name', /duplicates the name of field 0/]],
    ],
    [
      'a reserved query parameter',
      [
        { name: 'limit', type: 'number' },
        { name: 'Order_By', type: 'string' },
      ],
      [
        [0, 'name', /reserved/],
        [1, 'name', /reserved/],
      ],
    ],
    ['the internal prefix', [{ name: '__seq', type: 'number' }], [[0, 'name', /must not start with "__"/]]],
    ['an empty name', [{ name: '', type: 'string' }], [[0, 'name', /must not be empty/]]],
    ['a 129-character name', [{ name: 'n'.repeat(129), type: 'string' }], [[0, 'name', /at most 128 characters/]]],
    ['a control character', [{ name: 'a\nb', type: 'string' }], [[0, 'name', /control characters/]]],
    [
      'a 513-character description',
      [{ name: 'a', type: 'string', description: 'd'.repeat(513) }],
      [[0, 'description', /at most 512 characters/]],
    ],
    ['a non-string name', [{ name: 5, type: 'string' }], [[0, 'name', /must be a string/]]],
    [
      'an entry that is not an object',
      [null, 'x'],
      [
        [0, null, /must be an object/],
        [1, null, /must be an object/],
      ],
    ],
    [
      'an unknown property',
      [{ name: 'a', type: 'string', nullable: true }],
      [[0, null, /unknown property "nullable"/]],
    ],
  ];
  for (const [what, fields, want] of cases) {
    it(`reports ${what}, with the index and the key at fault`, () => {
      const problems = validateOutputSchema(fields);
      assert.equal(problems.length, want.length, JSON.stringify(problems));
      want.forEach(([index, key, message], k) => {
        assert.equal(problems[k]!.index, index);
        assert.equal(problems[k]!.key, key);
        assert.match(problems[k]!.message, message);
      });
    });
  }

  it('a name at 128 characters and a description at 512 are fine', () => {
    assert.deepEqual(
      validateOutputSchema([{ name: 'n'.repeat(128), type: 'string', description: 'd'.repeat(512) }]),
      [],
    );
  });
});

describe('inferOutputSchema', () => {
  it('types each key from its values, in first-seen order', () => {
    const rows = [
      { id: 1, name: 'a', ok: true, at: '2026-01-01T00:00:00Z', tags: ['x'], obj: { a: 1 }, mixed: 1, empty: null },
      {
        id: 2,
        name: 'b',
        ok: false,
        at: '2026-01-02T10:00:00.5+01:00',
        tags: [],
        obj: { b: 2 },
        mixed: 'one',
        empty: null,
        late: 3,
      },
    ];
    assert.deepEqual(inferOutputSchema(rows), [
      { name: 'id', type: 'number' },
      { name: 'name', type: 'string' },
      { name: 'ok', type: 'boolean' },
      { name: 'at', type: 'date' },
      { name: 'tags', type: 'array' },
      { name: 'obj', type: 'string' },
      { name: 'mixed', type: 'string' },
      { name: 'empty', type: 'null' },
      { name: 'late', type: 'number' },
    ]);
  });

  it('reads a key as a date only when every value is an ISO-8601 date-time', () => {
    assert.deepEqual(inferOutputSchema([{ d: '2026-01-01T00:00:00Z' }, { d: 'soon' }]), [
      { name: 'd', type: 'string' },
    ]);
    assert.deepEqual(
      inferOutputSchema([{ d: '2026-01-01' }]),
      [{ name: 'd', type: 'string' }],
      'a date without a time stays a string',
    );
    assert.deepEqual(inferOutputSchema([{ d: '2026-01-01T00:00:00Z' }, { d: null }, {}]), [
      { name: 'd', type: 'date' },
    ]);
    assert.deepEqual(inferOutputSchema([{ d: '2026-01-01T00:00:00Z' }, { d: 5 }]), [{ name: 'd', type: 'string' }]);
  });

  it('looks at the first maxRows rows only, and leaves out keys that cannot be field names', () => {
    const rows = [{ a: 1, limit: 5, __x: 1, A: 2 }, { b: 'late' }];
    assert.deepEqual(inferOutputSchema(rows, 1), [{ name: 'a', type: 'number' }]);
    const inferred = inferOutputSchema(rows);
    assert.deepEqual(inferred, [
      { name: 'a', type: 'number' },
      { name: 'b', type: 'string' },
    ]);
    assert.deepEqual(validateOutputSchema(inferred), []);
  });
});
