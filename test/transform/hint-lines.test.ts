import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hintBindings } from '../../src/transform/hint-lines.js';

test('hint lines: `field: path` and `field <- path` bind; prose and unknown names are ignored', () => {
  const hint = [
    'The user id moved in March.',
    'user_id: $.author.id',
    'name <- user.name',
    '- country: `$.geo["country code"]`',
    '* city <- $.geo.city',
    '"a: b": $.ab',
    'user_id: $.user.id',
    'Note: nothing here binds',
    'ignored',
    'email:',
  ].join('\r\n');
  const got = hintBindings(hint, ['user_id', 'name', 'country', 'city', 'a: b', 'email']);
  assert.deepEqual(Object.fromEntries(got), {
    user_id: ['$.author.id', '$.user.id'],
    name: ['user.name'],
    country: ['$.geo["country code"]'],
    city: ['$.geo.city'],
    'a: b': ['$.ab'],
  });
  assert.equal(hintBindings(null, ['x']).size, 0);
});
