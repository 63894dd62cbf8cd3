import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RecordTemplates } from '../../src/pipeline/record-templates.js';
import { buildRecord, SlotCapture, type TemplateRecords } from '../../src/transform/record-slots.js';
import { TransformSandbox, type TransformInput, type TransformOutcome } from '../../src/transform/sandbox.js';
import { TransformProcess } from '../../src/transform/sandbox-process.js';

/**
 * The contract of templated records (docs/views.md, "How records reach the script"): a record the
 * sandbox builds from its template's slot values is indistinguishable, to any script, from
 * JSON.parse of its text. The same scripts run over the same records both ways and must answer
 * the same, in a thread and in the sandbox's child process; records the template path cannot take
 * (non-ASCII, no template) are parsed, mixed in one batch.
 */

const T0 = Date.UTC(2026, 0, 1);

/** Record texts of many kinds; each shape appears several times so templates match. */
function corpus(): string[] {
  const out: string[] = [];
  const nums = [
    '0',
    '-0',
    '-0.0',
    '1',
    '-1',
    '0.1',
    '1e5',
    '1E-7',
    '-2.5e+3',
    '123456789012345678901',
    '1e400',
    '-1e400',
    '9007199254740993',
    '0.30000000000000004',
    '5e-324',
    '1.7976931348623157e308',
    '123.4500',
    '0.000001',
  ];
  for (let i = 0; i < 6; i++) {
    // Flat, as the e2e bench's records.
    const s = i % 3;
    out.push(
      JSON.stringify({
        event: `event_${s}`,
        ts: 1767225600000 + i,
        [`f${s}_0`]: `value-${i}`,
        [`f${s}_1`]: i * 0.5,
        [`f${s}_2`]: i % 2 === 0,
        ctx: { ip: '10.0.0.1', ua: 'bench/1.0' },
      }),
    );
    // Nested objects, nulls, arrays of scalars (nulls among them), empty containers, whitespace.
    out.push(
      `{ "a" : { "b": { "c": ${nums[i % nums.length]} , "d": null }, "e": [1, "x${i}", true, null, ${nums[(i + 3) % nums.length]}] }, "f": {}, "g": [], "h": false }`,
    );
    // Integer-like and special keys: JSON.parse's key order and own "__proto__".
    out.push(
      `{"b":1,"10":"ten${i}","2":${i},"01":"lead","4294967295":"max","4294967294":"idx","-1":"neg","1.5":"dec","__proto__":{"polluted":${i}},"constructor":"c","toString":"t","hasOwnProperty":${i % 2 === 0}}`,
    );
    // Escapes in strings (the template path parses those strings' quoted text).
    out.push(
      String.raw`{"q":"say \"hi\" ${i}","nl":"a\nb","u":"\u0001\u00e9${i}","slash":"a\\b\/","sur":"\ud83d\ude00","lone":"\udc00","plain":"p${i}"}`,
    );
    // Numbers of every form.
    out.push(`{"n":${nums[i]},"m":${nums[i + 6]},"k":${nums[i + 12]}}`);
  }
  // Records the template path cannot take: non-ASCII values, non-ASCII keys, a shape seen once.
  out.push(JSON.stringify({ event: 'événement', ts: 1, f0_0: 'x', f0_1: 1, f0_2: true, ctx: { ip: '', ua: '' } }));
  out.push(JSON.stringify({ clé: 'v1' }), JSON.stringify({ clé: 'v2' }));
  out.push('{"once":[1,2,{"deep":[]}]}');
  out.push('{"dup":1,"dup":2}', '{"dup":3,"dup":4}');
  return out;
}

/** A batch's records as the worker has them: templates learned from the corpus, then matched and captured. */
function captured(texts: readonly string[]): {
  bytes: Uint8Array;
  templates: TemplateRecords | undefined;
  templated: number;
} {
  const body = Buffer.from(texts.join('\n'));
  const ranges: Array<[number, number]> = [];
  for (let s = 0, k = 0; k < texts.length; k++) {
    const e = s + Buffer.byteLength(texts[k]!);
    ranges.push([s, e]);
    s = e + 1;
  }
  const templates = new RecordTemplates();
  // Shape keys: one per distinct key structure (the learner needs a key and a hash only).
  const keys = new Map<string, number>();
  const keyOf = (r: unknown): string =>
    r !== null && typeof r === 'object'
      ? JSON.stringify(Array.isArray(r) ? r.map(keyOf) : Object.entries(r).map(([k, v]) => [k, keyOf(v)]))
      : typeof r;
  for (const [s, e] of ranges) {
    if (templates.match(body, s, e) !== null) continue;
    const k = keyOf(JSON.parse(body.toString('utf8', s, e)));
    if (!keys.has(k)) keys.set(k, keys.size);
    templates.learn(body, s, e, keys.get(k)!, `h${keys.get(k)}`);
  }
  const capture = new SlotCapture(texts.length);
  ranges.forEach(([s, e], row) => {
    const t = templates.match(body, s, e);
    if (t !== null) capture.take(row, t, templates.values, body, s, e);
  });
  const bytes = new Uint8Array(Buffer.from(texts.join('\u001e')));
  const tpl = capture.range(0, texts.length);
  let templated = 0;
  if (tpl) for (const id of tpl.ids) if (id >= 0) templated++;
  return { bytes, templates: tpl, templated };
}

/** Scripts that look at the record every way a script can. */
const SCRIPTS: Record<string, string> = {
  stringify: 'function transform(r) { return { j: JSON.stringify(r) } }',
  // Keys, descriptors, prototypes, types and -0, all the way down.
  anatomy: `function transform(r) {
    const walk = (v) => {
      if (v === null || typeof v !== 'object') return [typeof v, Object.is(v, -0) ? '-0' : v];
      return [
        Array.isArray(v), Object.getPrototypeOf(v) === (Array.isArray(v) ? Array.prototype : Object.prototype), Object.isExtensible(v),
        Reflect.ownKeys(v).map((k) => { const d = Object.getOwnPropertyDescriptor(v, k); return [k, d.writable, d.enumerable, d.configurable, walk(d.value)]; }),
      ];
    };
    const keys = []; for (const k in r) keys.push(k);
    return { a: JSON.stringify(walk(r)), forin: keys.join(','), proto: Object.getPrototypeOf(r) === Object.prototype, polluted: r.polluted === undefined };
  }`,
  // A hostile context: setters on Object.prototype, a replaced JSON.parse and String#slice.
  hostile: `Object.defineProperty(Object.prototype, 'event', { set() { throw new Error('setter ran') }, configurable: true });
    Object.defineProperty(Object.prototype, 'a', { get() { return [1] }, configurable: true });
    Object.defineProperty(Object.prototype, 'o', { get() { return [['x', 0]] }, configurable: true });
    JSON.parse = () => ({ forged: true });
    String.prototype.slice = () => 'forged';
    function transform(r) { return { j: JSON.stringify(r), own: Object.keys(r).join(',') } }`,
  // Records are the script's to change.
  mutate:
    'function transform(r) { r.added = 1; delete r.b; r.event = "changed"; if (r.a && typeof r.a === "object") r.a.z = [r.a]; return { j: JSON.stringify(r, (k, v) => (k === "z" ? "cycle" : v)) } }',
};

/** The decoded outcome of a run, with and without templated records. */
function inputs(
  script: string,
  texts: readonly string[],
  templates: TemplateRecords | undefined,
  bytes: Uint8Array,
): TransformInput {
  const timestamp = Float64Array.from(texts, (_, i) => T0 + i);
  return {
    viewId: 'v',
    scriptHash: script,
    script,
    recordsText: bytes,
    schemaVersion: null,
    receivedAt: timestamp.map((t) => t + 1),
    timestamp,
    ...(templates ? { templates } : {}),
  };
}

function ok(o: TransformOutcome) {
  if (o.status !== 'ok') assert.fail(`expected ok, got ${o.reason}: ${o.message}`);
  return o;
}

describe('templated records (record-slots.ts): built as JSON.parse makes them', () => {
  const texts = corpus();
  const { bytes, templates, templated } = captured(texts);

  it('most of the corpus is templated; non-ASCII records, records without a template and shapes not understood are parsed', () => {
    assert.ok(templates);
    const ids = [...templates.ids];
    const n = texts.length;
    // The last 6 records: non-ASCII value, non-ASCII keys (2), an array holding an object, duplicate keys (2).
    assert.deepEqual(ids.slice(n - 6), [-1, -1, -1, -1, -1, -1]);
    assert.ok(templated >= 20, `templated ${templated}`);
  });

  it('the worker-side builder makes each templated record as JSON.parse does', () => {
    assert.ok(templates);
    // buildRecord is what the worker checks a shape with; the harness's factories are checked below.
    let o = 0;
    let f = 0;
    let p = 0;
    const text = Buffer.from(bytes).toString('latin1');
    texts.forEach((t, i) => {
      const id = templates.ids[i]!;
      if (id >= 0) {
        const desc = templates.shapes.get(id)!;
        assert.deepEqual(buildRecord(desc, text, p, templates.ints, o, templates.nums, f), JSON.parse(t));
        const { k } = JSON.parse(desc) as { k: string };
        o += 1 + 2 * [...k].filter((c) => c === 's').length;
        f += [...k].filter((c) => c !== 's').length;
      }
      p += Buffer.byteLength(t) + 1;
    });
  });

  const runners: Array<
    [string, () => { run: (i: TransformInput) => Promise<TransformOutcome>; close: () => Promise<void> }]
  > = [
    [
      'in a thread',
      () => {
        const sb = new TransformSandbox();
        return { run: async (i) => sb.run(i), close: async () => sb.dispose() };
      },
    ],
    [
      'in the child process',
      () => {
        const p = new TransformProcess();
        return { run: (i) => p.run(i), close: () => p.close() };
      },
    ],
  ];
  for (const [where, make] of runners) {
    for (const [name, script] of Object.entries(SCRIPTS)) {
      it(`${where}: script "${name}" answers the same over templated and parsed records`, async () => {
        const r = make();
        try {
          const parsed = ok(await r.run(inputs(script, texts, undefined, bytes)));
          const built = ok(await r.run(inputs(script, texts, templates, bytes)));
          assert.deepEqual(built, parsed);
          // Again, the shapes now compiled in the script's context.
          assert.deepEqual(ok(await r.run(inputs(script, texts, templates, bytes))), parsed);
        } finally {
          await r.close();
        }
      });
    }
  }

  it('a sandbox process sends each shape once per child; a restarted child (and a fresh context) gets them again', async () => {
    const p = new TransformProcess();
    try {
      const script = SCRIPTS.stringify!;
      const expected = ok(await p.run(inputs(script, texts, undefined, bytes)));
      assert.deepEqual(ok(await p.run(inputs(script, texts, templates, bytes))), expected);
      // Another script: a new context in the same child, which has the shapes but not compiled.
      const other = 'function transform(r) { return { j: JSON.stringify(r), n: 1 } }';
      const o2 = ok(await p.run(inputs(other, texts, templates, bytes)));
      assert.equal(o2.rows, texts.length);
      // A crash ends the child; the next batch goes to a new one, which is sent the shapes again.
      const crash = 'function transform() { const a = []; a.length = 1e8; a.fill(1); return {} }';
      assert.equal((await p.run(inputs(crash, texts, templates, bytes))).status, 'failed');
      assert.deepEqual(ok(await p.run(inputs(script, texts, templates, bytes))), expected);
      assert.equal(p.processStarts, 2);
    } finally {
      await p.close();
    }
  });

  it('calls cut from a batch (ranges, picked rows) keep each record with its own values', async () => {
    assert.ok(templates);
    const sb = new TransformSandbox();
    try {
      const script = SCRIPTS.stringify!;
      const body = Buffer.from(texts.join('\n'));
      const capture = new SlotCapture(texts.length);
      const tpl = new RecordTemplates();
      // Learn from every record first, as `captured` does.
      let s = 0;
      const ranges: Array<[number, number]> = texts.map((t) => [s, (s += Buffer.byteLength(t) + 1) - 1]);
      ranges.forEach(([a, b], k) => tpl.match(body, a, b) ?? tpl.learn(body, a, b, k, `h${k}`));
      ranges.forEach(([a, b], row) => {
        const t = tpl.match(body, a, b);
        if (t !== null) capture.take(row, t, tpl.values, body, a, b);
      });
      const rows = texts.map((_, i) => i).filter((i) => i % 3 !== 1);
      const sub = rows.map((i) => texts[i]!);
      const subBytes = new Uint8Array(Buffer.from(sub.join('\u001e')));
      const want = ok(sb.run(inputs(script, sub, undefined, subBytes)));
      assert.deepEqual(ok(sb.run(inputs(script, sub, capture.pick(rows), subBytes))), want);
      const mid = texts.slice(5, 20);
      const midBytes = new Uint8Array(Buffer.from(mid.join('\u001e')));
      assert.deepEqual(
        ok(sb.run(inputs(script, mid, capture.range(5, 20), midBytes))),
        ok(sb.run(inputs(script, mid, undefined, midBytes))),
      );
    } finally {
      sb.dispose();
    }
  });

  it('values that do not fit the records text break the caller contract (a throw, not wrong records)', () => {
    assert.ok(templates);
    const sb = new TransformSandbox();
    after(() => sb.dispose());
    const script = SCRIPTS.stringify!;
    const bad = { ...templates, ints: templates.ints.map((x, k) => (k === 0 ? x + 1 : x)) };
    assert.throws(() => sb.run(inputs(script, texts, bad, bytes)), /template values of record 0 do not fit/);
    assert.throws(() => sb.run(inputs(script, texts, { ...templates, shapes: new Map() }, bytes)), /not described/);
  });
});
