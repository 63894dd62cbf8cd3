import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { recordRanges, type BatchFormat } from '../../src/records/split.js';

/** The text of each range `recordRanges` finds. */
function split(format: BatchFormat, text: string): string[] {
  const body = Buffer.from(text);
  const out: number[] = [];
  recordRanges(format, body, out);
  const records: string[] = [];
  for (let k = 0; k < out.length; k += 2) records.push(body.toString('utf8', out[k], out[k + 1]));
  return records;
}

test('recordRanges: NDJSON lines, array elements, one object — by bytes, trimmed', () => {
  const cases: [BatchFormat, string, string[]][] = [
    ['ndjson', '{"a":1}\n{"b":2}\n', ['{"a":1}', '{"b":2}']],
    ['ndjson', '{"a":1}\r\n\r\n  \n\t{"b":2}  ', ['{"a":1}', '{"b":2}']],
    ['ndjson', '{"s":"é\\n"}', ['{"s":"é\\n"}']],
    ['ndjson', '', []],
    ['array', '[{"a":1}, {"b":[1,2]} ,{"c":{"d":"],"}}]', ['{"a":1}', '{"b":[1,2]}', '{"c":{"d":"],"}}']],
    ['array', ' [ {"q":"\\"]"} ] ', ['{"q":"\\"]"}']],
    ['array', '[]', []],
    ['object', '\uFEFF {\n  "a": 1\n}\n', ['{\n  "a": 1\n}']],
    ['object', '  ', []],
  ];
  for (const [format, text, expected] of cases)
    assert.deepEqual(split(format, text), expected, `${format} ${JSON.stringify(text)}`);
});

test('recordRanges reads a view without copying: ranges are offsets into the view given', () => {
  const whole = Buffer.from('xx{"a":1}\n{"b":2}yy');
  const view = whole.subarray(2, whole.length - 2);
  const out: number[] = [];
  recordRanges('ndjson', view, out);
  assert.deepEqual(out, [0, 7, 8, 15]);
});

test('layering: ingest and records import nothing from pipeline; records imports neither', () => {
  const src = fileURLToPath(new URL('../../../src/', import.meta.url));
  const importsOf = (dir: string) =>
    readdirSync(src + dir)
      .filter((f) => /\.c?ts$/.test(f))
      .flatMap((f) =>
        [...readFileSync(`${src}${dir}/${f}`, 'utf8').matchAll(/from '([^']+)'/g)].map((m) => `${dir}/${f} -> ${m[1]}`),
      );
  const ingest = importsOf('ingest');
  assert.ok(
    ingest.some((i) => i.includes('../records/split.js')),
    'the scan reads the sources',
  );
  assert.deepEqual(
    ingest.filter((i) => i.includes('/pipeline/')),
    [],
  );
  assert.deepEqual(
    importsOf('records').filter((i) => /\/(pipeline|ingest)\//.test(i)),
    [],
  );
});
