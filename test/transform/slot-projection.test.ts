import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RecordTemplates } from '../../src/pipeline/record-templates.js';
import { SlotCapture, type TemplateRecords } from '../../src/transform/record-slots.js';
import { projectionOf, projectRecord } from '../../src/transform/record-projection.js';
import { SlotProjection } from '../../src/transform/slot-projection.js';
import { recordsTextOf } from '../../src/transform/records-text.js';
import { TransformSandbox, type TransformInput } from '../../src/transform/sandbox.js';
import { FLAT_VIEW } from '../../bench/transform/view-scripts.js';

/**
 * Templated records cut down to what the script reads (docs/views.md, "What the script is given"):
 * the sandbox builds them from a cut shape and a text of only their kept strings. Every script
 * must answer the same as over the whole records, parsed or built, in a real isolate.
 */

const T0 = Date.UTC(2026, 0, 1);

/** Records of several templates (each seen more than once), and some no template takes. */
function corpus(): string[] {
  const out: string[] = [];
  for (let i = 0; i < 8; i++) {
    const s = i % 3;
    out.push(
      JSON.stringify({
        event: `event_${s}`,
        ts: 1767225600000 + i,
        [`f${s}_0`]: `value-${i}`,
        [`f${s}_1`]: i * 0.5,
        [`f${s}_2`]: i % 2 === 0,
        ctx: { ip: `10.0.0.${i}`, ua: 'bench/1.0' },
      }),
    );
    out.push(
      `{ "user" : { "name": "u${i}", "id": ${i}, "meta": { "x": ${i}, "y": null } }, "tags": ["a${i}", "b", null, ${i}], "flag": ${i % 2 === 0}, "note": "say \\"hi\\" ${i}\\n", "empty": {}, "none": [] }`,
    );
    out.push(`{"10":"ten${i}","2":${i},"b":{"c":"${'long'.repeat(20)}${i}","d":-0},"esc":"\\u0041${i}","z":null}`);
    // A record whose every kept string is gone: an empty text of its own.
    out.push(`{"k":${i},"s":"only-string-${i}"}`);
  }
  out.push(JSON.stringify({ event: 'événement', ts: 1, ctx: { ip: 'é', ua: 'x' } }));
  out.push('{"user":{"name":"once","id":-1},"tags":[]}');
  return out;
}

/** The records as a worker has them: one body, templates learned and matched, values captured. */
function captured(texts: readonly string[]): {
  body: Buffer;
  starts: number[];
  ends: number[];
  templates: TemplateRecords;
} {
  const body = Buffer.from(texts.join('\n'));
  const starts: number[] = [];
  const ends: number[] = [];
  for (let s = 0, k = 0; k < texts.length; k++) {
    starts.push(s);
    ends.push(s + Buffer.byteLength(texts[k]!));
    s = ends[k]! + 1;
  }
  const templates = new RecordTemplates();
  const keys = new Map<string, number>();
  const keyOf = (r: unknown): string =>
    r !== null && typeof r === 'object'
      ? JSON.stringify(Array.isArray(r) ? r.map(keyOf) : Object.entries(r).map(([k, v]) => [k, keyOf(v)]))
      : typeof r;
  texts.forEach((_, k) => {
    if (templates.match(body, starts[k]!, ends[k]!) !== null) return;
    const key = keyOf(JSON.parse(texts[k]!));
    if (!keys.has(key)) keys.set(key, keys.size);
    templates.learn(body, starts[k]!, ends[k]!, keys.get(key)!, `h${keys.get(key)}`);
  });
  const capture = new SlotCapture(texts.length);
  texts.forEach((_, k) => {
    const t = templates.match(body, starts[k]!, ends[k]!);
    if (t !== null) capture.take(k, t, templates.values, body, starts[k]!, ends[k]!);
  });
  return { body, starts, ends, templates: capture.range(0, texts.length)! };
}

describe('slot projection: templated records cut down to what the script reads (real isolate)', () => {
  const sb = new TransformSandbox({ cpuTimeMsPerCall: 5000 });
  after(() => sb.dispose());
  const texts = corpus();
  const { body, starts, ends, templates } = captured(texts);
  const timestamp = Float64Array.from(texts, (_, i) => T0 + i * 1000);
  const base = (script: string): Omit<TransformInput, 'recordsText'> => ({
    scriptHash: script,
    script,
    viewId: 'view_1',
    schemaVersion: 'sv_1',
    receivedAt: timestamp.map((t) => t + 1500),
    timestamp,
  });

  /** The call's text and templates cut for `script`, as the view stage makes them. */
  function cut(script: string) {
    const p = projectionOf(`slots:${script}`, script);
    assert.ok(p !== null, `the script has a projection: ${script}`);
    const out = Buffer.alloc(body.length);
    const slots = new SlotProjection(templates, p);
    let at = 0;
    texts.forEach((_, k) => {
      if (k > 0) out[at++] = 0x1e;
      const w = slots.write(k, body, starts[k]!, out, at);
      at = w >= 0 ? w : projectRecord(body, starts[k]!, ends[k]!, p, out, at);
    });
    return { text: out.subarray(0, at), templates: slots.templates() };
  }

  const scripts = [
    'function transform(r, ctx) { return { event: r.event ?? null, ts: r.ts ?? null, ip: r.ctx?.ip ?? null, ua: r.ctx?.ua ?? null, at: ctx.timestamp } }',
    'function transform(r, ctx) { return { name: r.user?.name ?? null, x: r.user ? r.user.meta?.x ?? null : null, tags: r.tags ? r.tags.length : -1, note: r.note ?? null } }',
    'function transform(r) { return { ten: r["10"] ?? null, two: r[2] ?? null, c: r.b && r.b.c, d: r.b ? Object.is(r.b.d, -0) : null, esc: r.esc ?? null } }',
    'function transform({ user, flag, empty }) { return { u: JSON.stringify(user), f: flag ?? null, e: empty === undefined ? "none" : JSON.stringify(empty) } }',
    'function transform(r) { return { k: r.k ?? null, has: typeof r.user, ctx: r.ctx && r.ctx.ip } }',
    'function transform(r) { return { n: r.nothing_here ?? null } }',
  ];

  it('answers as the whole records do, built or parsed, with far less text', () => {
    assert.ok(templates.ids.filter((id) => id >= 0).length >= 30, 'most records are templated');
    const wholeText = texts.join('\u001e');
    for (const script of scripts) {
      const parsed = sb.run({ ...base(script), recordsText: wholeText });
      const built = sb.run({ ...base(script), scriptHash: `${script}#built`, recordsText: wholeText, templates });
      const c = cut(script);
      const projected = sb.run({
        ...base(script),
        scriptHash: `${script}#cut`,
        recordsText: recordsTextOf(c.text),
        templates: c.templates,
      });
      assert.equal(parsed.status, 'ok', script);
      assert.deepEqual(built, parsed, script);
      assert.deepEqual(projected, parsed, script);
      assert.ok(
        c.text.length < wholeText.length / 2,
        `the cut text is smaller: ${c.text.length} of ${wholeText.length}`,
      );
      // Cut records come with shapes of their own (not the captured ones).
      const capturedIds = new Set(templates.used);
      assert.ok(c.templates.used.length > 0 && c.templates.used.every((id) => !capturedIds.has(id)));
    }
  });

  it('a script that fails fails the same way on the same record', () => {
    const script = 'function transform(r) { return { ip: r.ctx.ip } }';
    const parsed = sb.run({ ...base(script), recordsText: texts.join('\u001e') });
    const c = cut(script);
    const projected = sb.run({
      ...base(script),
      scriptHash: `${script}#cut`,
      recordsText: recordsTextOf(c.text),
      templates: c.templates,
    });
    assert.equal(parsed.status, 'failed');
    assert.deepEqual(projected, parsed);
  });

  it('the flat bench view reads only the strings it needs', () => {
    const c = cut(FLAT_VIEW.script);
    const first = c.text.toString('latin1').split('\u001e')[0];
    assert.equal(first, 'event_010.0.0.0bench/1.0');
  });
});
