import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { recordsTextOf } from '../../src/transform/records-text.js';
import { TransformSandbox } from '../../src/transform/sandbox.js';

/** What a script would see: each record parsed, from the text the sandbox is given. */
function parsed(text: string): unknown[] {
  return text.split('\u001e').map((t) => JSON.parse(t) as unknown);
}

const utf8 = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'));

/** The one-byte form V8 keeps a string in when every character is below U+0100. */
const oneByte = (s: string) => [...s].every((c) => c.charCodeAt(0) < 0x100);

describe('recordsTextOf', () => {
  it('gives ASCII records as they are', () => {
    const text = '{"a":1,"b":"x"}\u001e{"c":[1,2]}';
    assert.equal(recordsTextOf(utf8(text)), text);
  });

  it('escapes non-ASCII characters so the records parse to the same values, in one byte per character', () => {
    const records = [
      { name: 'Zoë', city: 'Kraków', note: 'naïve café — “quoted”' },
      { emoji: '😀👍🏽', cjk: '東京', mixed: 'a\u00a0b\u2028c\u2029d', clé: 'valeur' },
      { escaped: 'back\\slash é', tab: '\t', nested: { deep: ['ü', { ß: 'ẞ' }] } },
    ];
    // Real records are mostly ASCII (text mostly non-ASCII is decoded instead, below).
    const text = records.map((r) => JSON.stringify({ ...r, pad: 'x'.repeat(400) })).join('\u001e');
    const got = recordsTextOf(utf8(text));
    assert.ok(oneByte(got), 'one byte per character');
    assert.ok(!/[\u0080-\uffff]/.test(got), 'only ASCII');
    assert.deepEqual(
      parsed(got),
      records.map((r) => ({ ...r, pad: 'x'.repeat(400) })),
    );
  });

  it('decodes as UTF-8 whatever it cannot escape exactly', () => {
    // Invalid UTF-8 (a lone continuation byte, a truncated sequence, an overlong form, a surrogate):
    // the decoder's replacement characters, as before.
    for (const bytes of [[0x80], [0xe2, 0x82], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf5, 0x80, 0x80, 0x80]]) {
      const input = new Uint8Array([...Buffer.from('{"a":"x'), ...bytes, ...Buffer.from('y"}')]);
      assert.equal(recordsTextOf(input), new TextDecoder().decode(input), `bytes ${bytes.join(',')}`);
    }
    // Mostly non-ASCII text: decoded (escapes would be longer than two bytes per character).
    const cjk = JSON.stringify({ t: '東京都渋谷区'.repeat(20) });
    assert.equal(recordsTextOf(utf8(cjk)), cjk);
    // A byte order mark at the start is dropped by the decoder, as before.
    assert.equal(recordsTextOf(new Uint8Array([0xef, 0xbb, 0xbf, ...Buffer.from('{"a":"é"}')])), '{"a":"é"}');
  });

  it('gives a string input as it is', () => {
    assert.equal(recordsTextOf('{"a":"é"}'), '{"a":"é"}');
  });

  it('lets a script see the records as sent, non-ASCII included', () => {
    const sb = new TransformSandbox();
    try {
      const records = [{ s: 'Zoë 😀' }, { s: 'plain' }, { s: '東京', k: { clé: 'ü' } }];
      const out = sb.run({
        viewId: 'viw_x',
        scriptHash: 'h',
        script: 'function transform(r) { return { s: r.s, n: r.s.length, k: r.k ? r.k["clé"] : null } }',
        // Padded with ASCII, as real records are, so the escapes are what the isolate parses.
        recordsText: utf8(records.map((r) => JSON.stringify({ ...r, pad: 'x'.repeat(200) })).join('\u001e')),
        schemaVersion: null,
        receivedAt: new Float64Array(3),
        timestamp: new Float64Array(3),
      });
      assert.equal(out.status, 'ok');
      assert.deepEqual(out.status === 'ok' ? out.outputs : null, [
        { s: 'Zoë 😀', n: 6, k: null },
        { s: 'plain', n: 5, k: null },
        { s: '東京', n: 2, k: 'ü' },
      ]);
    } finally {
      sb.dispose();
    }
  });
});
