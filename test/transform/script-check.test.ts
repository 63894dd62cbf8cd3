import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkScript, checkScriptAsync, MAX_SCRIPT_CHARS } from '../../src/transform/script-check.js';

describe('checkScript', () => {
  it('accepts a script that defines transform, however declared', () => {
    for (const script of [
      'function transform(record, ctx) { return { id: record.id }; }',
      'const transform = (r) => null;',
      'const K = 3;\nlet transform = function (r) { return [r]; };',
    ]) {
      assert.deepEqual(checkScript(script), { ok: true }, script);
    }
  });

  it('gives the compiler message with line and column (1-based) for a syntax error', () => {
    assert.deepEqual(checkScript('function transform(r) {\n  return r +;\n}'), {
      ok: false,
      message: "SyntaxError: Unexpected token ';'",
      line: 2,
      column: 13,
    });
    const open = checkScript('function transform(r) {\n  return { a: 1 };\n');
    assert.equal(open.ok, false);
    if (!open.ok) {
      assert.match(open.message, /^SyntaxError: Unexpected end of input/);
      assert.equal(open.line, 3);
      assert.equal(typeof open.column, 'number');
    }
  });

  it('refuses a script without a function named transform', () => {
    for (const script of ['function transfrom(r) { return r }', 'const transform = 42;', '// only a comment']) {
      const r = checkScript(script);
      assert.equal(r.ok, false, script);
      if (!r.ok) assert.match(r.message, /does not define a function named transform/);
    }
  });

  it('reports top-level code that throws (with its place), loops or exhausts memory, and keeps working', () => {
    const threw = checkScript('function transform() { return {} }\nundefinedThing.call();');
    assert.deepEqual(threw, {
      ok: false,
      message: 'the script threw while loading: ReferenceError: undefinedThing is not defined (line 2, column 1)',
      line: 2,
      column: 1,
    });
    const started = Date.now();
    const loop = checkScript('while (true) {}\nfunction transform() { return {} }');
    assert.equal(loop.ok, false);
    if (!loop.ok) assert.match(loop.message, /did not finish within 100 ms/);
    assert.ok(Date.now() - started < 5000, 'a looping script is stopped, not waited for');
    const mem = checkScript(
      'const a = []; for (;;) a.push(new Array(1e6).fill(1));\nfunction transform() { return {} }',
    );
    assert.equal(mem.ok, false);
    if (!mem.ok) assert.match(mem.message, /ran out of memory|did not finish/);
    assert.deepEqual(checkScript('function transform() { return {} }'), { ok: true });
  });

  it('survives top-level code that aborts V8 (it runs in a child process)', () => {
    const r = checkScript('const a = [];\na.length = 1e8;\na.fill(1);\nfunction transform() { return {} }');
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.message, /crashed the checking process \(SIGABRT\)/);
    assert.deepEqual(checkScript('function transform() { return {} }'), { ok: true });
  });

  it('has an asynchronous twin with the same answers', async () => {
    assert.deepEqual(await checkScriptAsync('function transform(r) { return r }'), { ok: true });
    assert.deepEqual(await checkScriptAsync('function transform(r) {\n  return r +;\n}'), {
      ok: false,
      message: "SyntaxError: Unexpected token ';'",
      line: 2,
      column: 13,
    });
    const r = await checkScriptAsync('const transform = 1;');
    assert.equal(r.ok, false);
    assert.equal((await checkScriptAsync(' ')).ok, false);
  });

  it(`refuses more than ${MAX_SCRIPT_CHARS} characters and whitespace-only scripts`, () => {
    const body = 'function transform(r) { return r }\n';
    const atLimit = body + '/' + '/'.padEnd(MAX_SCRIPT_CHARS - body.length - 1, 'x');
    assert.equal(atLimit.length, MAX_SCRIPT_CHARS);
    assert.deepEqual(checkScript(atLimit), { ok: true });
    assert.deepEqual(checkScript(atLimit + 'x'), {
      ok: false,
      message: 'the script is 65,537 characters long; the limit is 65,536',
      line: null,
      column: null,
    });
    for (const blank of ['', '   ', '\n\t\n']) {
      const r = checkScript(blank);
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.message, /the script is empty/);
    }
  });
});
