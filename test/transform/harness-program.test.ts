import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createContext, runInContext } from 'node:vm';
import { HARNESS_SOURCE } from '../../src/transform/harness/program-source.js';

/**
 * The in-isolate harness is a real file (src/transform/harness/isolate-program.js), read as text
 * from the compiled module: no copy of it is kept in a string, and it evaluates to `install`.
 */

test('HARNESS_SOURCE is the text of isolate-program.js, found from the compiled module', () => {
  const file = readFileSync(new URL('../../../src/transform/harness/isolate-program.js', import.meta.url), 'utf8');
  assert.equal(HARNESS_SOURCE, file);
});

test('the program evaluates to install(transform, progress, maxOutputChars), which returns run', () => {
  const install = runInContext(HARNESS_SOURCE, createContext({})) as unknown;
  assert.equal(typeof install, 'function');
  const run = (install as (t: unknown, p: SharedArrayBuffer, max: number) => unknown)(
    (r: unknown) => r,
    new SharedArrayBuffer(12),
    1 << 20,
  );
  assert.equal(typeof run, 'function');
});
