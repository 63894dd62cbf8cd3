import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderPath, type Segment } from '../../src/schema/shape.js';
import { bracketPath, parseSourcePath, parseVersionPath } from '../../src/transform/source-path.js';

// Table: user-written path → segments (null: not a path).
const userPaths: Array<[string, Segment[] | null]> = [
  ['$.user.name', ['user', 'name']],
  ['user.name', ['user', 'name']],
  ['  $.user.name  ', ['user', 'name']],
  ['$.entities.hashtags[*].text', ['entities', 'hashtags', null, 'text']],
  ['entities.hashtags[].text', ['entities', 'hashtags', null, 'text']],
  ['$["a.b"].c', ['a.b', 'c']],
  ["$['a.b']", ['a.b']],
  ["$['it\\'s \"x\"']", ['it\'s "x"']],
  ['["2026-01-01"]', ['2026-01-01']],
  ['$.user-name', ['user-name']],
  ['$.$.x', ['$', 'x']],
  ['$price', ['$price']],
  ['tags[*]', ['tags', null]],
  ['a[][]', ['a', null, null]],
  ['$["\\u00e9"]', ['é']],
  ['$', null],
  ['', null],
  ['$.', null],
  ['.user', null],
  ['user..name', null],
  ['items[0]', null],
  ['$["open', null],
  ['$["a"', null],
  ['a]', null],
];

test('user paths: bracket and dotted forms read alike; indexes and broken brackets are not paths', () => {
  for (const [text, want] of userPaths) assert.deepEqual(parseSourcePath(text)?.segments ?? null, want, text);
});

test('canonical bracket text: identifiers dotted, other keys JSON strings, elements [*]', () => {
  assert.equal(bracketPath(['user', 'name']), '$.user.name');
  assert.equal(bracketPath(['entities', 'hashtags', null, 'text']), '$.entities.hashtags[*].text');
  assert.equal(bracketPath(['a.b', 'user-name', '$x']), '$["a.b"]["user-name"].$x');
  assert.equal(parseSourcePath('user.name')!.text, '$.user.name');
  assert.equal(parseSourcePath("$['a.b']")!.key, parseSourcePath('$["a.b"]')!.key);
});

test('version paths: every rendered path reads back to its segments, and its bracket text to the same', () => {
  const cases: Segment[][] = [
    ['user', 'id'],
    ['items', null, 'sku'],
    ['a.b'],
    ['$'],
    ['$', 'user'],
    ['x', 'a]b', null, null, 'y'],
    ['line\nbreak', 'quote"d', 'back\\slash', '\u2028'],
    ['2026-01-01', ''],
  ];
  for (const segments of cases) {
    const rendered = renderPath(segments);
    assert.deepEqual(parseVersionPath(rendered)?.segments, segments, rendered);
    assert.deepEqual(parseSourcePath(bracketPath(segments))?.segments, segments, bracketPath(segments));
  }
  // In a version a leading `$` is a key (an identifier), never the root.
  assert.deepEqual(parseVersionPath('$.user')?.segments, ['$', 'user']);
});
