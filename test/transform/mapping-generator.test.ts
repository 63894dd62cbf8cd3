import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_KEY_CHARS } from '../../src/schema/fingerprint.js';
import { generateMapping, scriptHash } from '../../src/transform/mapping-generator.js';
import type {
  BindingHow,
  MappingPolicy,
  MappingQuestion,
  MappingResult,
  MappingScript,
  OutputField,
  OutputFieldType,
  QuestionReason,
} from '../../src/transform/mapping-types.js';
import { fieldsOfRecord, policyOf, runScript, versionOf } from './mapping-fixture.js';

function gen(
  schema: OutputField[] | null,
  fields: Array<[string, string]>,
  policy: Partial<MappingPolicy> = {},
  hint: string | null = null,
): MappingResult {
  return generateMapping({ outputSchema: schema, version: versionOf(fields), policy: policyOf(policy), hint });
}

function script(r: MappingResult): MappingScript {
  assert.equal(r.kind, 'script', r.kind === 'question' ? r.question : '');
  return r as MappingScript;
}

function question(r: MappingResult): MappingQuestion {
  assert.equal(r.kind, 'question', r.kind === 'script' ? r.script : '');
  return r as MappingQuestion;
}

interface Case {
  name: string;
  field: [string, OutputFieldType];
  version: Array<[string, string]>;
  policy?: Partial<MappingPolicy>;
  hint?: string;
  /** Bound: how and paths. */
  bound?: [BindingHow, string[]];
  /** Asked: reason and the paths offered. */
  asked?: [QuestionReason, string[]];
}

const cases: Case[] = [
  // Name strengths.
  {
    name: 'exact name',
    field: ['user_id', 'number'],
    version: [
      ['user_id', 'number'],
      ['user', 'object'],
      ['user.id', 'number'],
    ],
    bound: ['exact', ['$.user_id']],
  },
  {
    name: 'exact dotted name',
    field: ['user.name', 'string'],
    version: [
      ['user', 'object'],
      ['user.name', 'string'],
      ['name', 'string'],
    ],
    bound: ['exact', ['$.user.name']],
  },
  {
    name: 'exact key holding a dot',
    field: ['a.b', 'number'],
    version: [['["a.b"]', 'number']],
    bound: ['exact', ['$["a.b"]']],
  },
  {
    name: 'case-insensitive',
    field: ['UserName', 'string'],
    version: [['username', 'string']],
    bound: ['normalized', ['$.username']],
  },
  {
    name: 'camel vs snake',
    field: ['userName', 'string'],
    version: [['user_name', 'string']],
    bound: ['normalized', ['$.user_name']],
  },
  {
    name: 'kebab vs snake',
    field: ['user_name', 'string'],
    version: [['["user-name"]', 'string']],
    bound: ['normalized', ['$["user-name"]']],
  },
  {
    name: 'normalized key by key',
    field: ['User.Name', 'string'],
    version: [
      ['user', 'object'],
      ['user.name', 'string'],
    ],
    bound: ['normalized', ['$.user.name']],
  },
  {
    name: 'leaf name',
    field: ['name', 'string'],
    version: [
      ['user', 'object'],
      ['user.name', 'string'],
    ],
    bound: ['leaf', ['$.user.name']],
  },
  {
    name: 'leaf: keys joined',
    field: ['user_name', 'string'],
    version: [
      ['user', 'object'],
      ['user.name', 'string'],
      ['author', 'object'],
      ['author.name', 'string'],
    ],
    bound: ['leaf', ['$.user.name']],
  },
  {
    name: 'exact beats leaf',
    field: ['id', 'number'],
    version: [
      ['id', 'number'],
      ['user', 'object'],
      ['user.id', 'number'],
    ],
    bound: ['exact', ['$.id']],
  },
  {
    name: 'objects are not values',
    field: ['user', 'string'],
    version: [
      ['user', 'object'],
      ['user.id', 'number'],
      ['meta', 'object'],
      ['meta.user', 'string'],
    ],
    bound: ['leaf', ['$.meta.user']],
  },
  {
    name: 'truncated keys are never read',
    field: ['k', 'string'],
    version: [[`k${'x'.repeat(MAX_KEY_CHARS - 1)}\u2026`, 'string']],
    asked: ['no_source', []],
  },
  // Types.
  {
    name: 'string from a number',
    field: ['code', 'string'],
    version: [['code', 'number']],
    bound: ['exact', ['$.code']],
  },
  {
    name: 'string from mixed scalars',
    field: ['code', 'string'],
    version: [['code', 'number|string']],
    bound: ['exact', ['$.code']],
  },
  { name: 'nullable type fits', field: ['n', 'number'], version: [['n', 'null|number']], bound: ['exact', ['$.n']] },
  {
    name: 'date from a string',
    field: ['created_at', 'date'],
    version: [['created_at', 'string']],
    bound: ['exact', ['$.created_at']],
  },
  { name: 'date from a number', field: ['ts', 'date'], version: [['ts', 'number']], bound: ['exact', ['$.ts']] },
  {
    name: 'array from element paths',
    field: ['hashtags_text', 'array'],
    version: [
      ['hashtags', 'array'],
      ['hashtags[]', 'object'],
      ['hashtags[].text', 'string'],
    ],
    bound: ['leaf', ['$.hashtags[*].text']],
  },
  {
    name: 'null-only path fits anything',
    field: ['deleted_at', 'date'],
    version: [['deleted_at', 'null']],
    bound: ['exact', ['$.deleted_at']],
  },
  { name: 'null output needs no source', field: ['nothing', 'null'], version: [], bound: ['dropped', []] },
  {
    name: 'number from a string: incompatible',
    field: ['count', 'number'],
    version: [
      ['count', 'string'],
      ['total', 'number'],
    ],
    asked: ['incompatible', ['$.total']],
  },
  {
    name: 'stronger incompatible match asks rather than take a weaker one',
    field: ['user_id', 'number'],
    version: [
      ['user_id', 'string'],
      ['user', 'object'],
      ['user.id', 'number'],
    ],
    asked: ['incompatible', ['$.user.id']],
  },
  {
    name: 'date from a boolean: incompatible',
    field: ['at', 'date'],
    version: [['at', 'boolean']],
    asked: ['incompatible', []],
  },
  {
    name: 'array from a string: incompatible',
    field: ['tags', 'array'],
    version: [
      ['tags', 'string'],
      ['labels', 'array'],
    ],
    asked: ['incompatible', ['$.labels']],
  },
  {
    name: 'scalar from element paths: incompatible',
    field: ['text', 'string'],
    version: [
      ['h', 'array'],
      ['h[]', 'object'],
      ['h[].text', 'string'],
    ],
    asked: ['incompatible', []],
  },
  // Ambiguity and missing sources.
  {
    name: 'tie at the best strength',
    field: ['name', 'string'],
    version: [
      ['user', 'object'],
      ['user.name', 'string'],
      ['author', 'object'],
      ['author.name', 'string'],
    ],
    asked: ['ambiguous', ['$.user.name', '$.author.name']],
  },
  {
    name: 'tie with a missing nullable input: only present paths offered',
    field: ['email', 'string'],
    version: [
      ['contact', 'object'],
      ['contact.email', 'string'],
    ],
    policy: { nullable_inputs: ['$.user.email'] },
    asked: ['ambiguous', ['$.contact.email']],
  },
  {
    name: 'no match',
    field: ['email', 'string'],
    version: [
      ['contact_email_address', 'string'],
      ['n', 'number'],
    ],
    asked: ['no_source', ['$.contact_email_address', '$.n']],
  },
  {
    name: 'allow_drops: no source',
    field: ['email', 'string'],
    version: [['n', 'number']],
    policy: { allow_drops: true },
    bound: ['dropped', []],
  },
  {
    name: 'allow_drops: incompatible only',
    field: ['count', 'number'],
    version: [['count', 'string']],
    policy: { allow_drops: true },
    bound: ['dropped', []],
  },
  {
    name: 'allow_drops never settles a tie',
    field: ['name', 'string'],
    version: [
      ['a', 'object'],
      ['a.name', 'string'],
      ['b', 'object'],
      ['b.name', 'string'],
    ],
    policy: { allow_drops: true },
    asked: ['ambiguous', ['$.a.name', '$.b.name']],
  },
  // Policy.
  {
    name: 'binding overrides an exact name',
    field: ['user_id', 'number'],
    version: [
      ['user_id', 'number'],
      ['author', 'object'],
      ['author.id', 'number'],
    ],
    policy: { output_bindings: { user_id: ['$.author.id'] } },
    bound: ['binding', ['$.author.id']],
  },
  {
    name: 'binding: first path the version has wins',
    field: ['user_id', 'number'],
    version: [
      ['author', 'object'],
      ['author.id', 'number'],
      ['uid', 'number'],
    ],
    policy: { output_bindings: { user_id: ['$.user.id', 'author.id', 'uid'] } },
    bound: ['binding', ['$.author.id']],
  },
  {
    name: 'binding settles a tie',
    field: ['name', 'string'],
    version: [
      ['a', 'object'],
      ['a.name', 'string'],
      ['b', 'object'],
      ['b.name', 'string'],
    ],
    policy: { output_bindings: { name: ['$.b.name'] } },
    bound: ['binding', ['$.b.name']],
  },
  {
    name: 'binding to a missing path asks',
    field: ['user_id', 'number'],
    version: [['user_id', 'number']],
    policy: { output_bindings: { user_id: ['$.user.id'] } },
    asked: ['no_source', ['$.user_id']],
  },
  {
    name: 'binding to an unfitting path asks',
    field: ['user_id', 'number'],
    version: [
      ['uid', 'string'],
      ['n', 'number'],
    ],
    policy: { output_bindings: { user_id: ['uid'] } },
    asked: ['incompatible', ['$.n']],
  },
  {
    name: 'nullable input: bound and missing reads null',
    field: ['email', 'string'],
    version: [['n', 'number']],
    policy: { output_bindings: { email: ['$.user.email'] }, nullable_inputs: ['user.email'] },
    bound: ['binding', ['$.user.email']],
  },
  {
    name: 'nullable input: found by name though missing',
    field: ['email', 'string'],
    version: [['n', 'number']],
    policy: { nullable_inputs: ['$.user.email'] },
    bound: ['leaf', ['$.user.email']],
  },
  {
    name: 'fallback group: coalesce in group order',
    field: ['user_id', 'number'],
    version: [
      ['author_id', 'number'],
      ['user', 'object'],
      ['user.id', 'number'],
    ],
    policy: { fallback_groups: [['$.user.id', '$.author_id']] },
    bound: ['fallback', ['$.user.id', '$.author_id']],
  },
  {
    name: 'fallback group: settles a tie',
    field: ['name', 'string'],
    version: [
      ['a', 'object'],
      ['a.name', 'string'],
      ['b', 'object'],
      ['b.name', 'string'],
    ],
    policy: { fallback_groups: [['$.b.name', '$.a.name']] },
    bound: ['fallback', ['$.b.name', '$.a.name']],
  },
  {
    name: 'fallback group: stands in for a missing bound path',
    field: ['user_id', 'number'],
    version: [
      ['author', 'object'],
      ['author.id', 'number'],
    ],
    policy: { output_bindings: { user_id: ['$.user.id'] }, fallback_groups: [['$.user.id', '$.author.id']] },
    bound: ['fallback', ['$.author.id']],
  },
  {
    name: 'fallback group: unfitting members are skipped',
    field: ['user_id', 'number'],
    version: [
      ['author_id', 'string'],
      ['user', 'object'],
      ['user.id', 'number'],
    ],
    policy: { fallback_groups: [['$.user.id', '$.author_id']] },
    bound: ['leaf', ['$.user.id']],
  },
  // Hint lines.
  {
    name: 'hint line binds',
    field: ['user_id', 'number'],
    version: [
      ['user_id', 'number'],
      ['author', 'object'],
      ['author.id', 'number'],
    ],
    hint: 'The id moved.\nuser_id: $.author.id',
    bound: ['hint', ['$.author.id']],
  },
  {
    name: 'hint arrow form',
    field: ['name', 'string'],
    version: [
      ['a', 'object'],
      ['a.name', 'string'],
      ['b', 'object'],
      ['b.name', 'string'],
    ],
    hint: 'name <- b.name',
    bound: ['hint', ['$.b.name']],
  },
  {
    name: 'policy binding before hint line',
    field: ['name', 'string'],
    version: [
      ['a', 'object'],
      ['a.name', 'string'],
      ['b', 'object'],
      ['b.name', 'string'],
    ],
    policy: { output_bindings: { name: ['$.a.name'] } },
    hint: 'name: $.b.name',
    bound: ['binding', ['$.a.name']],
  },
  {
    name: 'hint line after a missing binding',
    field: ['name', 'string'],
    version: [
      ['a', 'object'],
      ['a.name', 'string'],
    ],
    policy: { output_bindings: { name: ['$.gone'] } },
    hint: 'name: $.a.name',
    bound: ['hint', ['$.a.name']],
  },
  {
    name: 'hint prose is ignored',
    field: ['name', 'string'],
    version: [
      ['a', 'object'],
      ['a.name', 'string'],
    ],
    hint: 'Names: use the display name.\nnothing: here',
    bound: ['leaf', ['$.a.name']],
  },
];

test('matching, table-driven: name strengths, types, ambiguity, policy, hint lines', () => {
  for (const c of cases) {
    const [name, type] = c.field;
    const r = gen([{ name, type }], c.version, c.policy, c.hint ?? null);
    if (c.bound) {
      const s = script(r);
      assert.deepEqual(s.bindings[name], { how: c.bound[0], paths: c.bound[1] }, c.name);
      assert.equal(s.candidates[0]!.verdict, 'script', c.name);
    } else {
      const q = question(r);
      assert.deepEqual([q.reason, q.paths], c.asked, `${c.name}: ${q.question}`);
      assert.equal(q.field, name, c.name);
      assert.equal(q.candidates[0]!.reason, q.reason, c.name);
    }
  }
});

test('an ambiguous field asks one question in the documented form', () => {
  const q = question(
    gen(
      [{ name: 'user_id', type: 'number' }],
      [
        ['user', 'object'],
        ['user.id', 'number'],
        ['user.user_id', 'number'],
      ],
    ),
  );
  assert.equal(
    q.question,
    'Which path should feed output field "user_id" (number)? Candidates: $.user.id (number), $.user.user_id (number). Answer with a mapping policy output_binding or a hint line "user_id: $.user.id".',
  );
  assert.deepEqual(q.paths, ['$.user.id', '$.user.user_id']);
  // The suggested answer works, as a hint line and as a binding.
  const line = /hint line "(.*)"\.$/.exec(q.question)![1]!;
  const viaHint = script(
    gen(
      [{ name: 'user_id', type: 'number' }],
      [
        ['user', 'object'],
        ['user.id', 'number'],
        ['user.user_id', 'number'],
      ],
      {},
      line,
    ),
  );
  assert.deepEqual(viaHint.bindings.user_id, { how: 'hint', paths: ['$.user.id'] });
});

test('question texts name the field, the version and how to answer', () => {
  const missing = question(
    gen([{ name: 'user_id', type: 'number' }], [['uid', 'number']], { output_bindings: { user_id: ['$.user.id'] } }),
  );
  assert.equal(
    missing.question,
    'Output field "user_id" (number) is bound to $.user.id, which schema version 3 lacks. Candidates: $.uid (number). Answer with a mapping policy output_binding or a hint line "user_id: $.uid", list the path in nullable_inputs to read it as null until records carry it, or set allow_drops to leave the field null.',
  );
  const unfit = question(gen([{ name: 'count', type: 'number' }], [['count', 'string']]));
  assert.equal(
    unfit.question,
    'Output field "count" (number) matches $.count (string) in schema version 3, of a type that cannot feed it. No path of the version has a type that fits it. Answer with a mapping policy output_binding or a hint line "count: $.path", or set allow_drops to leave the field null.',
  );
  const none = question(gen([{ name: 'a: b', type: 'string' }], [['x', 'string']]));
  assert.match(
    none.question,
    /^No path of schema version 3 matches output field "a: b" \(string\)\. Candidates: \$\.x \(string\)\. Answer with a mapping policy output_binding or a hint line ""a: b": \$\.x"/,
  );
});

test('a question carries the bindings resolved so far and the inspection report', () => {
  const schema: OutputField[] = [
    { name: 'id', type: 'number' },
    { name: 'name', type: 'string' },
    { name: 'email', type: 'string' },
  ];
  const q = question(
    gen(
      schema,
      [
        ['id', 'number'],
        ['a', 'object'],
        ['a.name', 'string'],
        ['b', 'object'],
        ['b.name', 'string'],
        ['email', 'null'],
      ],
      { output_bindings: { id: ['$.gone', '$.id'] } },
    ),
  );
  assert.equal(q.field, 'name');
  assert.deepEqual(q.partial, { id: { paths: ['$.id'], how: 'binding' }, email: { paths: ['$.email'], how: 'exact' } });
  const c = q.candidates[0]!;
  assert.equal(c.verdict, 'question');
  assert.equal(c.transform_id, null);
  assert.deepEqual(c.exact_paths, ['$.id']);
  assert.deepEqual(c.present_null_paths, ['$.email']);
  assert.deepEqual(c.unknown_paths, ['$.gone']);
  assert.deepEqual(c.bindings, { id: ['$.id'], email: ['$.email'] });
});

test('inspection report: absent, substitution, incompatible and unknown paths', () => {
  const schema: OutputField[] = [
    { name: 'user_id', type: 'number' },
    { name: 'email', type: 'string' },
    { name: 'score', type: 'number' },
  ];
  const r = script(
    gen(
      schema,
      [
        ['author', 'object'],
        ['author.id', 'number'],
        ['score', 'number'],
        ['points', 'string'],
      ],
      {
        output_bindings: {
          user_id: ['$.user.id'],
          email: ['$.user.email'],
          score: ['not a [path', '$.points', '$.score'],
        },
        fallback_groups: [['$.user.id', '$.author.id']],
        nullable_inputs: ['$.user.email'],
      },
    ),
  );
  const c = r.candidates[0]!;
  assert.deepEqual(c.absent_paths, ['$.user.id', '$.user.email']);
  assert.deepEqual(c.substitution_paths, ['$.author.id']);
  assert.deepEqual(c.exact_paths, ['$.author.id', '$.score']);
  assert.deepEqual(c.incompatible_paths, ['$.points']);
  assert.deepEqual(c.unknown_paths, ['not a [path']);
  assert.deepEqual(r.bindings.email, { paths: ['$.user.email'], how: 'binding' });
  assert.deepEqual(runScript(r.script, { author: { id: 4 }, score: 9, user: { email: 'e@x' } }), {
    user_id: 4,
    email: 'e@x',
    score: 9,
  });
});

test('the script runs: nested paths, arrays, conversions, missing parents, coalesce, drops', () => {
  const schema: OutputField[] = [
    { name: 'user_id', type: 'number' },
    { name: 'user_name', type: 'string' },
    { name: 'code', type: 'string' },
    { name: 'hashtags_text', type: 'array' },
    { name: 'matrix_v', type: 'array' },
    { name: 'tags', type: 'array' },
    { name: 'created_at', type: 'date' },
    { name: 'verified', type: 'boolean' },
    { name: 'email', type: 'string' },
    { name: 'nothing', type: 'null' },
  ];
  const sample = {
    user: { id: 7, name: 'ann', verified: true },
    author_id: 9,
    code: 42,
    entities: { hashtags: [{ text: 'a' }, { text: 'b' }, {}] },
    matrix: [[{ v: 1 }, { v: 2 }], [{ v: 3 }]],
    tags: ['x', 'y'],
    created_at: '2026-01-01T00:00:00Z',
  };
  const r = script(
    generateMapping({
      outputSchema: schema,
      version: versionOf(fieldsOfRecord(sample)),
      policy: policyOf({ fallback_groups: [['$.user.id', '$.author_id']], allow_drops: true }),
      hint: 'hashtags_text: $.entities.hashtags[*].text',
    }),
  );
  assert.deepEqual(r.bindings.matrix_v, { paths: ['$.matrix[*][*].v'], how: 'leaf' });
  assert.deepEqual(r.bindings.email, { paths: [], how: 'dropped' });
  assert.match(r.script, /each\(get\(record, \["entities", "hashtags"\]\), \(item\) => get\(item, \["text"\]\)\)/);
  assert.match(r.script, /\/\/ Generated by Sluice auto mapping for schema version 3 \(sv_3\)\./);
  assert.deepEqual(runScript(r.script, sample), {
    user_id: 7,
    user_name: 'ann',
    code: '42',
    hashtags_text: ['a', 'b', null],
    matrix_v: [[1, 2], [3]],
    tags: ['x', 'y'],
    created_at: '2026-01-01T00:00:00Z',
    verified: true,
    email: null,
    nothing: null,
  });
  // Missing parents, wrong types and the fallback path: nulls, never a throw.
  assert.deepEqual(
    runScript(r.script, {
      author_id: 9,
      user: 'not an object',
      entities: { hashtags: 'no' },
      matrix: [null, [5]],
      tags: {},
      created_at: 1767225600000,
      code: { x: 1 },
    }),
    {
      user_id: 9,
      user_name: null,
      code: null,
      hashtags_text: null,
      matrix_v: [null, [null]],
      tags: null,
      created_at: 1767225600000,
      verified: null,
      email: null,
      nothing: null,
    },
  );
});

test('the script reads own keys only and survives awkward names', () => {
  const odd = 'line\nbreak\u2028sep */';
  const schema: OutputField[] = [
    { name: 'constructor', type: 'string' },
    { name: '__proto__', type: 'string' },
    { name: odd, type: 'number' },
    { name: 'toString', type: 'string' },
  ];
  const version = versionOf([
    ['constructor', 'string'],
    ['["__proto__"]', 'string'],
    ['["line\\nbreak\\u2028sep */"]', 'number'],
    ['toString', 'string|null'],
  ]);
  const r = script(generateMapping({ outputSchema: schema, version, policy: policyOf(), hint: null }));
  assert.deepEqual(r.bindings[odd], { paths: ['$["line\\nbreak\u2028sep */"]'], how: 'exact' });
  // A record lacking the keys: null, not Object's constructor or toString.
  const empty = runScript(r.script, {});
  assert.deepEqual(empty, { constructor: null, ['__proto__']: null, [odd]: null, toString: null });
  const full = runScript(
    r.script,
    JSON.parse('{"constructor":"c","__proto__":"p","line\\nbreak\\u2028sep */":1,"toString":"t"}'),
  );
  assert.deepEqual(Object.keys(full), ['constructor', '__proto__', odd, 'toString']);
  assert.deepEqual(Object.values(full), ['c', 'p', 1, 't']);
});

test('deterministic: equal input gives a byte-identical script and hash; the hash follows the script', () => {
  const sample = { user: { id: 1, name: 'n' }, tags: ['a'], n: 2 };
  const input = () => ({
    outputSchema: null,
    version: versionOf(fieldsOfRecord(sample)),
    policy: policyOf({ fallback_groups: [['$.n', '$.user.id']] }),
    hint: 'user_name: user.name',
  });
  const a = script(generateMapping(input()));
  const b = script(generateMapping(input()));
  assert.equal(a.script, b.script);
  assert.equal(a.hash, b.hash);
  assert.equal(a.hash, scriptHash(a.script));
  assert.match(a.hash, /^[0-9a-f]{16}$/);
  assert.notEqual(scriptHash(a.script + ' '), a.hash);
  assert.deepEqual(JSON.stringify(a), JSON.stringify(b));
});

test('no output schema: one is proposed from the version and every field reads the path it came from', () => {
  const sample = { id: 1, user: { name: 'n', user_name: 'dup' }, limit: 5, __v: 0, tags: ['a'], items: [{ sku: 'x' }] };
  const r = script(
    generateMapping({
      outputSchema: null,
      version: versionOf(fieldsOfRecord(sample)),
      policy: policyOf({ output_bindings: { id: ['$.limit'] } }),
      hint: null,
    }),
  );
  assert.deepEqual(
    r.outputSchema.map((f) => `${f.name}:${f.type}`),
    ['id:number', 'items_sku:array', 'limit_value:number', 'tags:array', 'user_name:string', 'user_user_name:string'],
  );
  assert.equal(r.bindings.user_name!.how, 'exact');
  // A policy binding still wins over the path a proposed field was made from.
  assert.deepEqual(r.bindings.id, { paths: ['$.limit'], how: 'binding' });
  assert.deepEqual(runScript(r.script, sample), {
    id: 5,
    items_sku: ['x'],
    limit_value: 5,
    tags: ['a'],
    user_name: 'n',
    user_user_name: 'dup',
  });
});

test('an empty output schema gives a script returning an empty object', () => {
  const r = script(gen([], [['a', 'number']]));
  assert.deepEqual(runScript(r.script, { a: 1 }), {});
});

test('a tie among many paths offers at most 20', () => {
  const fields: Array<[string, string]> = [];
  for (let i = 0; i < 30; i++)
    fields.push([`o${String(i).padStart(2, '0')}`, 'object'], [`o${String(i).padStart(2, '0')}.name`, 'string']);
  const q = question(gen([{ name: 'name', type: 'string' }], fields));
  assert.equal(q.reason, 'ambiguous');
  assert.equal(q.paths.length, 20);
  assert.equal(q.paths[0], '$.o00.name');
});
