import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { errorCatalogue, ApiError, type ErrorCode } from '../src/errors.js';

const DOC = fileURLToPath(new URL('../../docs/errors.md', import.meta.url));

test('every catalogue code is snake_case and builds an error with its own status', () => {
  for (const [code, entry] of Object.entries(errorCatalogue)) {
    assert.match(code, /^[a-z]+(?:_[a-z0-9]+)*$/);
    const err = new ApiError(code as ErrorCode);
    assert.equal(err.code, code);
    assert.equal(err.status, entry.status);
    assert.ok(entry.status >= 400 && entry.status < 600);
  }
});

test('docs/errors.md lists exactly the catalogue, with each status', () => {
  const rows = new Map<string, number>();
  for (const m of readFileSync(DOC, 'utf8').matchAll(/^\|\s*`([a-z0-9_]+)`\s*\|\s*(\d{3})\s*\|/gm))
    rows.set(m[1]!, Number(m[2]));
  const expected = new Map(Object.entries(errorCatalogue).map(([code, e]) => [code, e.status]));
  const missing = [...expected.keys()].filter((c) => !rows.has(c));
  const extra = [...rows.keys()].filter((c) => !expected.has(c));
  assert.deepEqual({ missing, extra }, { missing: [], extra: [] }, 'docs/errors.md is out of step with src/errors.ts');
  for (const [code, status] of expected) assert.equal(rows.get(code), status, `status of ${code}`);
});
