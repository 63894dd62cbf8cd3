import { mulberry32 } from '../helpers/seeded-random.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import {
  FILTER_LIMITS,
  FilterCheckError,
  FilterSyntaxError,
  checkFilter,
  compileFilterPredicate,
  compileFilterSql,
  filterError,
  formatFilter,
  isoToEpochMs,
  parseFilter,
  prepareFilter,
  quoteIdent,
  type FilterField,
  type FilterNode,
} from '../../src/rollup/filter-expression.js';

/** A compact, position-free picture of a tree: `(or (= a 1) (and …))`. */
function sexpr(n: FilterNode): string {
  const lit = (v: unknown) => (typeof v === 'string' ? `'${v}'` : String(v));
  switch (n.kind) {
    case 'and':
    case 'or':
      return `(${n.kind} ${n.operands.map(sexpr).join(' ')})`;
    case 'not':
      return `(not ${sexpr(n.operand)})`;
    case 'compare':
      return `(${n.op} ${n.field.name} ${lit(n.value.value)})`;
    case 'in':
      return `(${n.negated ? 'not-in' : 'in'} ${n.field.name} ${n.values.map((v) => lit(v.value)).join(' ')})`;
    case 'contains':
      return `(contains ${n.field.name} ${lit(n.value.value)})`;
    case 'is_null':
      return `(${n.negated ? 'not-null' : 'null'} ${n.field.name})`;
  }
}

const parsed = (text: string) => {
  const n = parseFilter(text);
  return n === null ? null : sexpr(n);
};

test('parse: precedence, parentheses, keywords in any case, literals', () => {
  const cases: Array<[string, string | null]> = [
    ['', null],
    ['   \n\t ', null],
    ['a = 1', '(= a 1)'],
    ['a=1', '(= a 1)'],
    ['a <> 1', '(!= a 1)'],
    ['a != -1.5e3', '(!= a -1500)'],
    ['a >= 0 and a < 10', '(and (>= a 0) (< a 10))'],
    ['a = 1 or b = 2 and c = 3', '(or (= a 1) (and (= b 2) (= c 3)))'],
    ['(a = 1 or b = 2) and c = 3', '(and (or (= a 1) (= b 2)) (= c 3))'],
    ['not a = 1 and b = 2', '(and (not (= a 1)) (= b 2))'],
    ['not (a = 1 and b = 2)', '(not (and (= a 1) (= b 2)))'],
    ['not not a = 1', '(not (not (= a 1)))'],
    ['a = 1 or b = 2 or c = 3', '(or (= a 1) (= b 2) (= c 3))'],
    ['a = 1 and (b = 2 and c = 3)', '(and (= a 1) (and (= b 2) (= c 3)))'],
    ['NOT a = 1 AnD b Is NoT nUlL Or c IS NULL', '(or (and (not (= a 1)) (not-null b)) (null c))'],
    ["s in ('x', 'y''z')", "(in s 'x' 'y'z')"],
    ['n NOT IN (1, 2, 3)', '(not-in n 1 2 3)'],
    ["tags Contains 'a'", "(contains tags 'a')"],
    ['ok = TRUE or ok = false', '(or (= ok true) (= ok false))'],
    ['user.id = 7', '(= user.id 7)'],
    ['_x9 = 0', '(= _x9 0)'],
    ['città = 1', '(= città 1)'],
    ['"field name" = 1', '(= field name 1)'],
    ['"a""b" = 1', '(= a"b 1)'],
    ['"in" = 1', '(= in 1)'],
    ["s = ''", "(= s '')"],
    ["s = 'it''s'", "(= s 'it's')"],
    ['a = null', '(= a null)'],
    ['((a = 1))', '(= a 1)'],
  ];
  for (const [text, want] of cases) assert.equal(parsed(text), want, text);
});

test('parse: malformed input fails at the position of the first problem', () => {
  const cases: Array<[string, number, RegExp]> = [
    ['x =', 3, /^expected a value after '=', found the end of the filter at position 3$/],
    ["x = 'abc", 4, /unterminated string/],
    ['= 1', 0, /expected a field name/],
    ['x 1', 2, /expected an operator .* after field 'x'/],
    ['(x = 1', 6, /expected '\)' to close the '\(' opened at 0/],
    ['x = 1)', 5, /unexpected '\)'/],
    ['x in 1', 5, /expected '\(' after 'in'/],
    ['x in ()', 6, /expected a value after '\('/],
    ['x in (1,)', 8, /expected a value after ','/],
    ['x in (1 2)', 8, /expected ',' or '\)'/],
    ['x is 1', 5, /expected 'null' or 'not null' after 'is'/],
    ['x is not 5', 9, /expected 'null' after 'is not'/],
    ['x not like 1', 6, /expected 'in' after 'not'/],
    ['x = 01', 4, /invalid number '01'/],
    ['x = 1abc', 4, /invalid number/],
    ['x = -', 4, /invalid number/],
    ['x = 1e999', 4, /out of range/],
    ['x = 1 and', 9, /expected a field name after 'and'/],
    ['x = "abc"', 4, /strings take single quotes/],
    ["x = 'a' y = 1", 8, /expected 'and', 'or' or the end/],
    ['x == 1', 2, /'=='/],
    ['x = 1 && y = 2', 6, /unexpected character '&'/],
    ['x ! 1', 2, /'!'/],
    ['"abc = 1', 0, /unterminated field name/],
    ['"" = 1', 0, /empty field name/],
    ['`a b` = 1', 0, /double quotes/],
    ['in = 1', 0, /'in' is a keyword/],
    ['not', 3, /expected a field name after 'not'/],
    ['a = 1 and y like 2', 12, /found the word 'like'/],
    ['x = 1\u0000', 5, /U\+0000/],
  ];
  for (const [text, position, message] of cases) {
    assert.throws(
      () => parseFilter(text),
      (err: unknown) =>
        err instanceof FilterSyntaxError &&
        err.position === position &&
        message.test(err.message) &&
        err.message.endsWith(`at position ${position}`),
      `${JSON.stringify(text)} → position ${position}, ${message}`,
    );
  }
});

test('parse: bounds on length, nesting and in-list size', () => {
  const pad = (s: string, len: number) => s + ' '.repeat(len - s.length);
  assert.equal(parsed(pad('a = 1', FILTER_LIMITS.maxLength)), '(= a 1)');
  assert.throws(
    () => parseFilter(pad('a = 1', FILTER_LIMITS.maxLength + 1)),
    (e: unknown) => e instanceof FilterSyntaxError && e.position === 4096,
  );

  const nested = (k: number) => '('.repeat(k) + 'a = 1' + ')'.repeat(k);
  assert.equal(parsed(nested(32)), '(= a 1)');
  assert.throws(
    () => parseFilter(nested(33)),
    (e: unknown) => e instanceof FilterSyntaxError && e.position === 32 && /deeper than 32/.test(e.message),
  );
  assert.throws(
    () => parseFilter('not '.repeat(33) + 'a = 1'),
    (e: unknown) => e instanceof FilterSyntaxError && e.position === 128,
  );
  // A long flat chain is not nesting: one n-ary node.
  assert.equal(parseFilter(Array.from({ length: 300 }, (_, i) => `a = ${i}`).join(' or '))?.kind, 'or');

  const list = (k: number) => `a in (${Array.from({ length: k }, () => '1').join(',')})`;
  assert.equal((parseFilter(list(1000)) as Extract<FilterNode, { kind: 'in' }>).values.length, 1000);
  assert.throws(
    () => parseFilter(list(1001)),
    (e: unknown) => e instanceof FilterSyntaxError && e.position === 6 + 2 * 1000 && /more than 1000/.test(e.message),
  );
});

const FIELDS: FilterField[] = [
  { name: 'n', type: 'number' },
  { name: 's', type: 'string' },
  { name: 'ok', type: 'boolean' },
  { name: 'ts', type: 'date' },
  { name: 'tags', type: 'array', items: 'string' },
  { name: 'any', type: 'array' },
  { name: 'z', type: 'null' },
  { name: 'status', type: 'number' },
  { name: 'state', type: 'string' },
];

test('check: unknown fields and type mismatches are named, with positions', () => {
  const cases: Array<[string, number, RegExp]> = [
    ['sttus = 1', 0, /^unknown field 'sttus' \(known fields: status, state, .* and 4 more\) at position 0$/],
    ['n = 1 and nope is null', 10, /unknown field 'nope'/],
    ["n = '1'", 4, /number field 'n' compares with a number, not the string '1'/],
    ['s = 1', 4, /string field 's' compares with a string, not the number 1 \(quote it: '1'\)/],
    ["s in ('a', 2)", 11, /not the number 2/],
    ['ok > true', 0, /'>' cannot order the boolean field 'ok'/],
    ["ok = 'yes'", 5, /boolean field 'ok' compares with a boolean/],
    ['ts > 1700000000000', 5, /ISO-8601/],
    ["ts > '2024-02-30'", 5, /not the string '2024-02-30', which is not one/],
    ["ts in ('2024-01-01', 'soon')", 21, /'soon'/],
    ["tags = 'a'", 0, /'tags' is an array: test for an element/],
    ["tags in ('a')", 0, /is an array/],
    ['tags contains 1', 14, /holds strings, so 'contains' takes a string, not the number 1/],
    ['n contains 1', 0, /'contains' needs a string or array field; 'n' is a number/],
    ['ts contains 1', 0, /'ts' is a date/],
    ['s contains 1', 11, /takes a quoted string/],
    ['n = null', 4, /'= null' never matches: test for null with 'n is null'/],
    ['n not in (1, null)', 13, /'not in null' never matches/],
    ['any contains null', 13, /never matches/],
    ['z contains null', 11, /never matches/],
    ['s contains null', 11, /'contains null' never matches/],
  ];
  for (const [text, position, message] of cases) {
    assert.throws(
      () => prepareFilter(text, FIELDS),
      (err: unknown) => err instanceof FilterCheckError && err.position === position && message.test(err.message),
      `${text} → ${position} ${message}`,
    );
  }
  for (const ok of [
    "ts >= '2024-05-01T12:00:00+02:00'",
    "any contains 1 or any contains 'x'",
    "z = 1 or z contains 'q' or z is null",
    "s < 'b'",
    'ok != false',
  ]) {
    assert.doesNotThrow(() => prepareFilter(ok, FIELDS), ok);
  }
  assert.throws(() => prepareFilter('x = 1', []), /the view has no fields/);
});

test('filterError: a 400 naming body.filters with the position; anything else is a 500', () => {
  let caught: unknown;
  try {
    prepareFilter('n = ', FIELDS);
  } catch (err) {
    caught = err;
  }
  const api = filterError(caught);
  assert.equal(api.status, 400);
  assert.equal(api.code, 'request_validation_failed');
  assert.deepEqual(api.details, [
    { field: 'body.filters', message: "expected a value after '=', found the end of the filter at position 4" },
  ]);
  assert.equal(api.cause, caught);
  assert.deepEqual(filterError(new FilterCheckError('x', 2), 'query.filters').details, [
    { field: 'query.filters', message: 'x at position 2' },
  ]);
  assert.equal(filterError(new TypeError('bug')).status, 500);
});

test('SQL-looking text stays data: rejected as syntax, or bound as a parameter', async () => {
  assert.throws(
    () => parseFilter("s = '1'; DROP TABLE t; --'"),
    (e: unknown) => e instanceof FilterSyntaxError && e.position === 7,
  );
  assert.throws(
    () => parseFilter('n = 1 or 1=1'),
    (e: unknown) => e instanceof FilterSyntaxError && e.position === 9,
  );
  assert.throws(
    () => parseFilter("s = '' OR ''=''"),
    (e: unknown) => e instanceof FilterSyntaxError && e.position === 10,
  );

  const fields: FilterField[] = [
    { name: 's', type: 'string' },
    { name: 'a"b', type: 'string' },
    { name: 'x); DROP TABLE t; --', type: 'number' },
  ];
  const node = prepareFilter(
    `s = '1''; DROP TABLE t; --' or "a""b" in ('x'' OR 1=1 --') or "x); DROP TABLE t; --" > 0`,
    fields,
  )!;
  const { sql, params } = compileFilterSql(node);
  assert.equal(
    sql,
    `(("s" = CAST(? AS VARCHAR)) OR ("a""b" IN (CAST(? AS VARCHAR))) OR ("x); DROP TABLE t; --" > CAST(? AS DOUBLE)))`,
  );
  assert.deepEqual(params, ["1'; DROP TABLE t; --", "x' OR 1=1 --", 0]);

  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    await conn.run(`CREATE TABLE t (id INTEGER, s VARCHAR, "a""b" VARCHAR, "x); DROP TABLE t; --" DOUBLE)`);
    await conn.run(
      `INSERT INTO t VALUES (1, '1''; DROP TABLE t; --', 'q', -1), (2, 'a', 'x'' OR 1=1 --', -1), (3, 'b', 'c', -2)`,
    );
    const rows = (await conn.runAndReadAll(`SELECT id FROM t WHERE ${sql} ORDER BY id`, params)).getRowsJS();
    assert.deepEqual(rows, [[1], [2]]);
    assert.deepEqual((await conn.runAndReadAll('SELECT count(*)::INTEGER FROM t')).getRowsJS(), [[3]]);
  } finally {
    conn.closeSync();
    db.closeSync();
  }
});

test('predicate: three-valued logic, as SQL', () => {
  const rows: Array<Record<string, unknown>> = [
    { id: 1, n: 10 },
    { id: 2, n: 1 },
    { id: 3, n: null },
    { id: 4 },
    { id: 5, n: 'ten' },
  ];
  const ids = (text: string) => rows.filter(compileFilterPredicate(prepareFilter(text, FIELDS)!)).map((r) => r.id);
  assert.deepEqual(ids('n > 5'), [1]);
  assert.deepEqual(
    ids('not n > 5'),
    [2],
    'not of unknown is unknown: nulls, missing and wrongly typed values stay out',
  );
  assert.deepEqual(ids('n > 5 or n is null'), [1, 3, 4, 5], 'a value of another type reads as null');
  assert.deepEqual(ids('not (n < 5 and n is not null)'), [1, 3, 4, 5], 'false and unknown is false');
  assert.deepEqual(ids('not (n > 5 or n is null)'), [2]);
  assert.deepEqual(ids('n not in (10, 11)'), [2]);
  assert.deepEqual(ids('z = 1 or not z = 1'), [], 'a null-typed field is unknown to every comparison');
  assert.deepEqual(ids('z is null'), [1, 2, 3, 4, 5]);
  // Own properties only: a field called constructor does not find Object.prototype.constructor.
  const proto = compileFilterPredicate(
    prepareFilter('constructor is null', [{ name: 'constructor', type: 'string' }])!,
  );
  assert.equal(proto({}), true);
});

test('predicate: dates arrive as epoch ms, ISO strings or Date objects; literals take any ISO-8601 form', () => {
  const ms = Date.UTC(2024, 4, 1, 10, 0, 0);
  const keep = compileFilterPredicate(
    prepareFilter("ts >= '2024-05-01T12:00:00+02:00' and ts < '2024-05-02'", FIELDS)!,
  );
  for (const ts of [
    ms,
    '2024-05-01T10:00:00Z',
    '2024-05-01 10:00:00.000',
    '2024-05-01T05:00:00-05:00',
    new Date(ms),
    BigInt(ms),
  ]) {
    assert.equal(keep({ ts }), true, String(ts));
  }
  for (const ts of [ms - 1, '2024-05-01T09:59:59.999Z', '2024-05-02', 'yesterday', null, undefined, true])
    assert.equal(keep({ ts }), false, String(ts));
  assert.equal(isoToEpochMs('0099-12-31'), new Date('0099-12-31T00:00:00Z').getTime(), 'years below 100 are not 19xx');
  assert.equal(isoToEpochMs('2024-02-29T23:59:59.9999Z'), Date.UTC(2024, 1, 29, 23, 59, 59, 999));
  assert.equal(isoToEpochMs('2024-05-01T10:00+0130'), Date.UTC(2024, 4, 1, 8, 30));
  for (const bad of [
    '2023-02-29',
    '2024-13-01',
    '2024-05-01T24:00',
    '2024-5-1',
    '2024-05-01T10',
    '2024-05-01Z',
    '2024-05-01T10:00:60',
  ]) {
    assert.equal(isoToEpochMs(bad), null, bad);
  }
});

test('formatFilter gives text that parses back to the same tree', () => {
  for (const text of [
    'a = 1 or b = 2 and not c = 3',
    "NOT (a = 1 OR b IS NOT NULL) AND tags CONTAINS 'x'",
    `"a""b" = 'it''s' and "in" not in (1, -2.5, true)`,
    'a = 1 and (b = 2 and c = 3)',
  ]) {
    const tree = parseFilter(text)!;
    assert.equal(parsed(formatFilter(tree)), sexpr(tree), text);
  }
  assert.equal(formatFilter(parseFilter('NOT (a = 1 OR b IS NOT NULL)')!), 'not (a = 1 or b is not null)');
});

test('no eval: the compilers build closures and SQL text, never code', () => {
  const dir = fileURLToPath(new URL('../../../src/rollup/', import.meta.url));
  for (const f of readdirSync(dir).filter((f) => f.startsWith('filter-') && f.endsWith('.ts'))) {
    const src = readFileSync(dir + f, 'utf8');
    assert.doesNotMatch(src, /\beval\s*\(|new\s+Function\b|\bFunction\s*\(/, f);
  }
});

test('compiling an unchecked tree is a programming error', () => {
  const node = parseFilter('n = 1')!;
  assert.throws(() => compileFilterPredicate(node as Parameters<typeof compileFilterPredicate>[0]), /call checkFilter/);
  checkFilter(node, FIELDS);
  assert.equal(compileFilterPredicate(node)({ n: 1 }), true);
});

// ── Differential: the predicate and DuckDB running the SQL select the same rows ───────────────────

const DIFF_FIELDS: FilterField[] = [
  { name: 's', type: 'string' },
  { name: 'n', type: 'number' },
  { name: 'i', type: 'number' },
  { name: 'b', type: 'boolean' },
  { name: 'd', type: 'date' },
  { name: 'tags', type: 'array', items: 'string' },
  { name: 'nums', type: 'array', items: 'number' },
  { name: 'z', type: 'null' },
  { name: 'a"b c', type: 'string' },
];

const STRINGS = ['', 'a', 'ab', 'b', 'A', 'abc', 'é', 'e\u0301', '😀', '\uFFFD', '\uE000', "it's", 'x y', 'zz', 'Ab'];
const NUMBERS = [-3, -1, -0, 0, 0.5, 1, 1.5, 2, 3, 10, 1e6, -2.25];
const INTS = [-2, -1, 0, 1, 2, 3, 1e12];
const BASE = Date.UTC(2024, 0, 1);
const INSTANTS = [0, 1, 2, 3, 24, 25].map((h) => BASE + h * 3_600_000).concat([BASE - 86_400_000, BASE + 1]);

function isoWithOffset(ms: number, offsetMinutes: number, style: number, compactOffset = false): string {
  const local = new Date(ms + offsetMinutes * 60_000).toISOString();
  const body = style === 2 ? local.slice(0, 19).replace('T', ' ') : local.slice(0, style === 1 ? 23 : 19);
  if (offsetMinutes === 0) return body + (style === 2 ? '' : 'Z');
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${body}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}${compactOffset ? '' : ':'}${String(abs % 60).padStart(2, '0')}`;
}

function randomRecords(rand: () => number, count: number): Array<Record<string, unknown>> {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  // Each value: mostly of the field's type, sometimes null, missing, or of another type.
  const value = (make: () => unknown): unknown => {
    const r = rand();
    if (r < 0.12) return null;
    if (r < 0.2) return undefined;
    if (r < 0.24) return pick<unknown>(['1', 1, true, [1], {}]);
    return make();
  };
  const records: Array<Record<string, unknown>> = [];
  for (let id = 0; id < count; id++) {
    const rec: Record<string, unknown> = { id };
    const set = (k: string, v: unknown) => {
      if (v !== undefined) rec[k] = v;
    };
    set(
      's',
      value(() => pick(STRINGS)),
    );
    set(
      'n',
      value(() => pick(NUMBERS)),
    );
    set(
      'i',
      value(() => (rand() < 0.3 ? BigInt(pick(INTS)) : pick(INTS))),
    );
    set(
      'b',
      value(() => rand() < 0.5),
    );
    set(
      'd',
      value(() => {
        const ms = pick(INSTANTS);
        return rand() < 0.4 ? ms : isoWithOffset(ms, pick([0, 0, 60, -300, 330]), Math.floor(rand() * 3));
      }),
    );
    set(
      'tags',
      value(() => Array.from({ length: Math.floor(rand() * 4) }, () => (rand() < 0.1 ? null : pick(STRINGS)))),
    );
    set(
      'nums',
      value(() => Array.from({ length: Math.floor(rand() * 4) }, () => (rand() < 0.1 ? null : pick(NUMBERS)))),
    );
    set('z', rand() < 0.5 ? null : undefined);
    set(
      'a"b c',
      value(() => pick(STRINGS)),
    );
    records.push(rec);
  }
  return records;
}

/** A random filter as text: random keyword case and spacing, so the parser is exercised too. */
function randomFilter(rand: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const kw = (w: string) => pick([w, w.toUpperCase(), w[0]!.toUpperCase() + w.slice(1)]);
  const sp = () => pick([' ', ' ', '  ', '\n']);
  const str = (v: string) => `'${v.replace(/'/g, "''")}'`;
  const num = (v: number) => (Object.is(v, -0) ? '-0' : String(v));
  const date = () => {
    const ms = pick(INSTANTS) + pick([0, 0, 0, -1, 1, 1800_000]);
    const r = rand();
    if (r < 0.15) return `'${new Date(ms).toISOString().slice(0, 10)}'`;
    if (r < 0.3) return `'${new Date(ms).toISOString()}'`;
    return `'${isoWithOffset(ms, pick([0, 120, -90]), Math.floor(rand() * 3), rand() < 0.5)}'`;
  };
  const field = (name: string) => (name === 'a"b c' ? '"a""b c"' : name);
  const compareOps = ['=', '!=', '<>', '<', '<=', '>', '>='];
  const list = (make: () => string) => `(${Array.from({ length: 1 + Math.floor(rand() * 3) }, make).join(', ')})`;
  const predicate = (): string => {
    const f = pick(DIFF_FIELDS);
    const name = field(f.name);
    if (rand() < 0.12) return `${name}${sp()}${kw('is')}${sp()}${rand() < 0.5 ? kw('not') + sp() : ''}${kw('null')}`;
    const inOp = () => `${name}${sp()}${rand() < 0.4 ? kw('not') + sp() : ''}${kw('in')}${sp()}`;
    switch (f.type) {
      case 'string':
        if (rand() < 0.2) return `${name}${sp()}${kw('contains')}${sp()}${str(pick(['a', '', 'b', "'", '😀', 'x y']))}`;
        if (rand() < 0.2) return inOp() + list(() => str(pick(STRINGS)));
        return `${name}${pick(['', ' '])}${pick(compareOps)}${pick(['', ' '])}${str(pick(STRINGS))}`;
      case 'number':
        if (rand() < 0.2) return inOp() + list(() => num(pick(NUMBERS)));
        return `${name} ${pick(compareOps)} ${num(pick(f.name === 'i' ? [...INTS, 1.5, -0.5] : NUMBERS))}`;
      case 'boolean':
        if (rand() < 0.2) return inOp() + list(() => kw(pick(['true', 'false'])));
        return `${name} ${pick(['=', '!=', '<>'])} ${kw(pick(['true', 'false']))}`;
      case 'date':
        if (rand() < 0.2) return inOp() + list(date);
        return `${name} ${pick(compareOps)} ${date()}`;
      case 'array':
        return `${name}${sp()}${kw('contains')}${sp()}${f.items === 'string' ? str(pick(STRINGS)) : num(pick(NUMBERS))}`;
      default:
        return `${name} ${pick(['=', '<', 'contains'])} ${pick(["'a'", '1', 'true'])}`;
    }
  };
  const expr = (depth: number): string => {
    const r = rand();
    if (depth < 3 && r < 0.35) {
      const parts = Array.from({ length: 2 + Math.floor(rand() * 2) }, () => expr(depth + 1));
      const joined = parts.join(`${sp()}${kw(pick(['and', 'or']))}${sp()}`);
      return rand() < 0.6 ? `(${joined})` : joined;
    }
    if (depth < 4 && r < 0.5) return `${kw('not')}${sp()}${rand() < 0.5 ? `(${expr(depth + 1)})` : expr(depth + 1)}`;
    return predicate();
  };
  return expr(0);
}

/** One row into DuckDB: each cell as its column's type would hold it (another type stores NULL). */
async function insertRecord(conn: DuckDBConnection, rec: Record<string, unknown>): Promise<void> {
  const cells: string[] = [];
  const params: DuckDBValue[] = [];
  const scalar = (v: unknown, type: 'VARCHAR' | 'DOUBLE' | 'BIGINT' | 'BOOLEAN', ok: boolean) => {
    cells.push(`CAST(? AS ${type})`);
    params.push(ok ? (v as DuckDBValue) : null);
  };
  const list = (v: unknown, type: 'VARCHAR' | 'DOUBLE', js: 'string' | 'number') => {
    if (!Array.isArray(v)) return cells.push(`CAST(NULL AS ${type}[])`);
    const items = v.map((e) => {
      params.push(typeof e === js ? (e as DuckDBValue) : null);
      return `CAST(? AS ${type})`;
    });
    cells.push(`CAST([${items.join(', ')}] AS ${type}[])`);
  };
  const get = (k: string) => (Object.hasOwn(rec, k) ? rec[k] : undefined);
  params.push(rec.id as number);
  cells.push('?');
  scalar(get('s'), 'VARCHAR', typeof get('s') === 'string');
  scalar(get('n'), 'DOUBLE', typeof get('n') === 'number');
  scalar(get('i'), 'BIGINT', typeof get('i') === 'number' || typeof get('i') === 'bigint');
  scalar(get('b'), 'BOOLEAN', typeof get('b') === 'boolean');
  const d = get('d');
  // DuckDB parses the ISO strings itself (session time zone UTC), so the reading of record dates is
  // compared too, not only the comparisons.
  if (typeof d === 'number') cells.push('epoch_ms(CAST(? AS BIGINT))'), params.push(d);
  else if (typeof d === 'string') cells.push('CAST(TRY_CAST(? AS TIMESTAMPTZ) AS TIMESTAMP)'), params.push(d);
  else cells.push('CAST(NULL AS TIMESTAMP)');
  list(get('tags'), 'VARCHAR', 'string');
  list(get('nums'), 'DOUBLE', 'number');
  cells.push('CAST(NULL AS INTEGER)');
  scalar(get('a"b c'), 'VARCHAR', typeof get('a"b c') === 'string');
  await conn.run(`INSERT INTO t VALUES (${cells.join(', ')})`, params);
}

test('differential: 300 random filters select the same rows from the predicate and from DuckDB', async () => {
  const rand = mulberry32(0x5eed_f117);
  const records = randomRecords(rand, 200);
  const db = await DuckDBInstance.create(':memory:', { threads: '1' });
  const conn = await db.connect();
  try {
    await conn.run("SET TimeZone = 'UTC'");
    await conn.run(
      `CREATE TABLE t (id INTEGER, s VARCHAR, n DOUBLE, i BIGINT, b BOOLEAN, d TIMESTAMP, tags VARCHAR[], nums DOUBLE[], z INTEGER, ${quoteIdent('a"b c')} VARCHAR)`,
    );
    for (const rec of records) await insertRecord(conn, rec);

    let nonTrivial = 0;
    for (let k = 0; k < 300; k++) {
      const text = randomFilter(rand);
      const node = prepareFilter(text, DIFF_FIELDS);
      assert.ok(node, text);
      assert.equal(parsed(formatFilter(node)), sexpr(node), `round trip of ${text}`);
      const keep = compileFilterPredicate(node);
      const fromPredicate = records.filter(keep).map((r) => r.id as number);
      const { sql, params } = compileFilterSql(node);
      const rows = (await conn.runAndReadAll(`SELECT id FROM t WHERE ${sql} ORDER BY id`, params)).getRowsJS();
      const fromDuckDb = rows.map((r) => r[0] as number);
      assert.deepEqual(
        fromPredicate,
        fromDuckDb,
        `filter #${k}: ${text}\nSQL: ${sql}\nparams: ${JSON.stringify(params)}`,
      );
      if (fromPredicate.length > 0 && fromPredicate.length < records.length) nonTrivial++;
    }
    // The generator is only a proof if most filters split the rows.
    assert.ok(nonTrivial > 150, `only ${nonTrivial} of 300 filters selected some but not all rows`);
  } finally {
    conn.closeSync();
    db.closeSync();
  }
});
