import { isUtf8 } from 'node:buffer';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { batchesOf, ndjsonBody, type Batch } from '../../src/cli/ingest/batches.js';
import { MAX_RECORD_BYTES } from '../../src/cli/ingest/input-record.js';
import { ndjsonBatches } from '../../src/cli/ingest/ndjson-batches.js';
import { ndjsonRecords } from '../../src/cli/ingest/ndjson-reader.js';
import type { Refusal } from '../../src/cli/ingest/sender.js';
import { mulberry32 } from '../helpers/seeded-random.js';

/**
 * The NDJSON byte batcher (the CLI's fast path) against the record-by-record path (ndjsonRecords →
 * batchesOf) on seeded inputs with every kind of line, read from a chunk buffer that is reused: the
 * same records with the same line numbers, the same refusals (too long), the same batches, bodies
 * that are exactly the records' NDJSON, and body buffers reused only once released.
 */

function* pieces(buf: Buffer, random: () => number): Generator<Buffer> {
  // Chunks of 1 to 300 bytes, so lines (and CRLFs, and the BOM) are split across chunk boundaries,
  // all in one buffer that is overwritten once the consumer asks for the next chunk (as fileChunks does).
  const scratch = Buffer.alloc(300);
  for (let at = 0; at < buf.length; ) {
    const n = Math.min(1 + Math.floor(random() * 300), buf.length - at);
    buf.copy(scratch, 0, at, at + n);
    yield scratch.subarray(0, n);
    scratch.fill(0x7b);
    at += n;
  }
}
async function* from<T>(items: Iterable<T>): AsyncGenerator<T> {
  yield* items;
}

function input(seed: number, bad: boolean, unicode = true): Buffer {
  const random = mulberry32(seed);
  const lines: string[] = [];
  for (let i = 0; i < 400; i++) {
    const r = random();
    if (r < 0.05) lines.push('');
    else if (r < 0.08) lines.push('  \t');
    else if (bad && r < 0.11) lines.push('{"broken": ');
    else if (bad && r < 0.13) lines.push('[1, 2]');
    else if (bad && r < 0.15) lines.push('{"timestamp": "yesterday"}');
    else if (r < 0.2) lines.push(unicode ? `{"i": ${i}, "s": "ünïcödé ✓ ${i}"}\r` : `{"i": ${i}}\r`);
    else if (r < 0.22) lines.push(`{"i": ${i}, "k\\u0065y": "escaped key", "timestamp": ${1767225600000 + i}}`);
    else lines.push(JSON.stringify({ i, v: random(), tags: ['a', 'b'], nested: { x: i, y: [{ z: null }] } }));
  }
  const text = (seed % 2 === 0 ? '\ufeff' : '') + lines.join('\n') + (seed % 3 === 0 ? '' : '\n');
  return Buffer.from(text);
}

/** The record-by-record path: every line the reader does not refuse itself goes (the server checks them). */
async function oldPath(buf: Buffer, seed: number, limits: { records: number; bytes: number }) {
  const refusals: Refusal[] = [];
  async function* read() {
    for await (const r of ndjsonRecords(from(pieces(buf, mulberry32(seed))))) {
      if (r.refusal) refusals.push({ line: r.line, reason: r.refusal });
      else yield r;
    }
  }
  const batches: Batch[] = [];
  for await (const b of batchesOf(read(), limits)) batches.push(b);
  return { batches, refusals };
}

/** The byte batcher; every other batch released as soon as it is read (its buffer then serves a later batch). */
async function newPath(buf: Buffer, seed: number, limits: { records: number; bytes: number }) {
  const refusals: Refusal[] = [];
  const batches: Batch[] = [];
  const texts: string[][] = [];
  const lines: number[][] = [];
  for await (const b of ndjsonBatches(from(pieces(buf, mulberry32(seed))), limits, {
    refused: (r) => refusals.push(r),
  })) {
    texts.push(b.records.map((r) => r.text));
    lines.push(b.records.map((r) => r.line));
    if (b.index % 2 === 1) b.release!();
    else batches.push(b);
  }
  // The batches kept still hold their own bytes (a released buffer was never one of theirs).
  for (const b of batches)
    assert.deepEqual(
      b.records.map((r) => r.text),
      texts[b.index],
    );
  return { batches, refusals, texts, lines };
}

const flat = (bs: Batch[]) => bs.flatMap((b) => b.records.map((r) => [r.line, r.text] as const));
const lineNumbers = (bs: Batch[]) => bs.flatMap((b) => b.records.map((r) => r.line));

test('the same records, lines and refusals as the record-by-record path; bodies are their NDJSON', async () => {
  for (let seed = 1; seed <= 12; seed++) {
    for (const bad of [false, true]) {
      for (const limits of [
        { records: 7, bytes: 1 << 20 },
        { records: 5000, bytes: 900 },
        { records: 50, bytes: 4000 },
      ]) {
        const buf = input(seed, bad);
        const a = await oldPath(buf, seed, limits);
        const b = await newPath(buf, seed, limits);
        const what = `seed ${seed}, bad ${bad}, limits ${JSON.stringify(limits)}`;
        assert.deepEqual(
          b.texts.flat(),
          flat(a.batches).map(([, text]) => text),
          what,
        );
        assert.deepEqual(b.lines.flat(), lineNumbers(a.batches), what);
        assert.deepEqual(
          [...b.refusals].sort((x, y) => x.line - y.line),
          [...a.refusals].sort((x, y) => x.line - y.line),
          what,
        );
        for (const batch of b.batches) {
          assert.equal(batch.body!.toString('utf8'), ndjsonBody(batch.records), what);
          assert.ok(batch.records.length <= limits.records, what);
        }
        assert.deepEqual(
          b.batches.map((x) => x.index),
          b.batches.map((_, i) => 2 * i),
          `${what}: indexes in a row`,
        );
        {
          // ASCII (the old path counted UTF-16 units against the byte limit; this one counts bytes,
          // what the server limits): the very same batches, offsets included.
          const ascii = input(seed, bad, false);
          const x = await oldPath(ascii, seed, limits);
          const y = await newPath(ascii, seed, limits);
          assert.deepEqual(
            y.batches.map((z) => [z.index, z.offset, z.records.map((r) => r.line)]),
            x.batches.filter((z) => z.index % 2 === 0).map((z) => [z.index, z.offset, z.records.map((r) => r.line)]),
            what,
          );
          for (const batch of b.batches)
            assert.ok(batch.body!.length <= limits.bytes || batch.records.length === 1, `${what}: bytes`);
        }
      }
    }
  }
});

test('a line longer than the server limit is refused by its line number, whether or not it ends the input', async () => {
  const long = `{"s":"${'x'.repeat(MAX_RECORD_BYTES)}"}`;
  for (const tail of ['\n{"ok":2}\n', '']) {
    const buf = Buffer.from(`{"ok":1}\n${long}${tail}`);
    const b = await newPath(buf, 3, { records: 100, bytes: 1 << 20 });
    assert.deepEqual(
      b.refusals.map((r) => r.line),
      [2],
    );
    assert.match(b.refusals[0]!.reason, /longer than 1048576 bytes/);
    assert.deepEqual(b.texts.flat(), tail ? ['{"ok":1}', '{"ok":2}'] : ['{"ok":1}']);
  }
});

test('bytes that are not UTF-8 go as they are (the server refuses such a line, then the sender sends its decoded text)', async () => {
  const buf = Buffer.concat([
    Buffer.from('{"a":"ok"}\n{"b":"'),
    Buffer.from([0xff, 0xfe]),
    Buffer.from('"}\n{"c":3}\n'),
  ]);
  const out: Batch[] = [];
  for await (const b of ndjsonBatches(from([buf]), { records: 10, bytes: 1000 }, { refused: () => {} })) out.push(b);
  assert.equal(out.length, 1);
  assert.ok(out[0]!.body!.equals(buf));
  assert.ok(!isUtf8(out[0]!.body!));
  assert.equal(out[0]!.records[1]!.text, '{"b":"\ufffd\ufffd"}', 'the text a record is rebuilt from is decoded');
});

test('every non-blank line is sent as it is: the server checks it', async () => {
  const buf = Buffer.from('{"a":1}\n\nnot json\n{"b":2}\r\n');
  const refusals: Refusal[] = [];
  const out: Batch[] = [];
  for await (const b of ndjsonBatches(
    from([buf]),
    { records: 10, bytes: 1000 },
    {
      refused: (r) => refusals.push(r),
    },
  ))
    out.push(b);
  assert.equal(refusals.length, 0);
  assert.deepEqual(flat(out), [
    [1, '{"a":1}'],
    [3, 'not json'],
    [4, '{"b":2}'],
  ]);
});
