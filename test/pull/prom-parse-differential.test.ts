import assert from 'node:assert/strict';
import test from 'node:test';
import { FormatError } from '../../src/pull/formats/format-error.js';
import { metricsRecords, type MetricsDialect } from '../../src/pull/formats/metrics-text.js';
import { metricsRecords as referenceRecords } from './prom-parse-reference.js';

// The offset-scanning parser against the per-line one it replaced (prom-parse-reference.ts): the same
// records — deep-equal and the same JSON, key order included — or the same FormatError, message and
// position, on generated expositions and on mutations of them.

/** mulberry32: a small seeded PRNG, so that a failure names a seed that reproduces it. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Outcome = { ok: true; json: string; records: unknown[] } | { ok: false; error: string };

function outcome(parse: typeof metricsRecords, text: string, dialect: MetricsDialect): Outcome {
  try {
    const records = parse(text, dialect);
    return { ok: true, json: JSON.stringify(records), records };
  } catch (err) {
    assert.ok(err instanceof FormatError, `not a FormatError: ${String(err)}`);
    return { ok: false, error: `${err.line}:${err.column}: ${err.message}` };
  }
}

function same(text: string, dialect: MetricsDialect, what: string): Outcome {
  const ref = outcome(referenceRecords, text, dialect);
  const got = outcome(metricsRecords, text, dialect);
  const shown = `${what} (${dialect}):\n${text.length > 2000 ? `${text.slice(0, 2000)}…` : text}`;
  if (ref.ok && got.ok) {
    assert.deepEqual(got.records, ref.records, shown);
    assert.equal(got.json, ref.json, `key order differs: ${shown}`);
  } else assert.deepEqual(got.ok ? got.json : got.error, ref.ok ? ref.json : ref.error, shown);
  return ref;
}

/** A generated exposition: every kind of family, escapes, odd numbers, timestamps, comments, repeats. */
function exposition(r: () => number, dialect: MetricsDialect): string {
  const om = dialect === 'openmetrics';
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const nl = r() < 0.2 ? '\r\n' : '\n';
  const sp = () => (om ? ' ' : pick([' ', ' ', ' ', '\t', '  ']));
  const values = om
    ? [
        '0',
        '1',
        '-1',
        '3.25',
        '1e3',
        '1.5E-7',
        '+5',
        '.5',
        '5.',
        '-0',
        'NaN',
        '+Inf',
        '-Inf',
        '123456789012345678',
        '0.1',
      ]
    : ['0', '1', '-1', '3.25', '1e3', '1.5E-7', '+5', '.5', '5.', '-0', 'NaN', 'nan', '+Inf', '-Inf', 'Inf', '-0.0'];
  const timestamps = om
    ? ['1700000000', '1700000000.123', '1520879607.789', '-1.5', '0', '1e9']
    : ['1700000000123', '-3982045', '0', '1395066363000', '1234567890123456'];
  const labelValues = [
    'GET',
    'POST',
    '200',
    '',
    '/api/v1/items',
    'C:\\\\DIR\\\\FILE.TXT',
    'say \\"hi\\"',
    'two\\nlines',
    'a}b',
    'x,y=\\"z\\"',
    'ünïcødé ✓',
    '0.05',
    '+Inf',
  ];
  const labelNames = ['method', 'code', 'path', 'instance', 'job', 'le_x', '_under', 'a:b'];
  const labelSets: string[] = [];
  const labelSet = () => {
    if (labelSets.length > 0 && r() < 0.4) return pick(labelSets);
    const n = Math.floor(r() * 4);
    const names = [...labelNames].sort(() => r() - 0.5).slice(0, n);
    const s = names.map((k) => `${k}="${pick(labelValues)}"`).join(',');
    labelSets.push(s);
    return s;
  };
  const sample = (name: string, extra?: string) => {
    const ls = labelSet();
    let all = extra ? (ls ? `${ls},${extra}` : extra) : ls;
    // 0.0.4 allows a trailing comma.
    if (!om && all && r() < 0.1) all += ',';
    let line = `${name}${all || r() < 0.2 ? `{${all}}` : ''}${sp()}${pick(values)}`;
    if (r() < 0.3) line += `${sp()}${pick(timestamps)}`;
    if (om && r() < 0.1) line += ` # {trace_id="${Math.floor(r() * 1e6)}"} ${pick(values)}${r() < 0.5 ? ' 1.5' : ''}`;
    return line + nl;
  };
  const types = om
    ? ['counter', 'gauge', 'histogram', 'summary', 'unknown', 'gaugehistogram', 'stateset', 'info']
    : ['counter', 'gauge', 'histogram', 'summary', 'untyped'];
  let out = r() < 0.1 ? '\ufeff' : '';
  const families = 1 + Math.floor(r() * 8);
  for (let f = 0; f < families; f++) {
    const name = `fam_${f}${pick(['', '_seconds', '_bytes'])}`;
    const type = pick(types);
    if (r() < 0.8) out += `# HELP ${name} Help for ${name}, with \\\\ and \\n and "quotes"${nl}`;
    if (om && r() < 0.3) out += `# UNIT ${name} ${pick(['seconds', 'bytes', ''])}${nl}`;
    if (r() < 0.85) out += `# TYPE ${name} ${type}${nl}`;
    if (!om && r() < 0.2) out += `# just a comment${nl}`;
    if (!om && r() < 0.1) out += nl;
    if (!om && r() < 0.05) out += ` \t${nl}`;
    const n = 1 + Math.floor(r() * 4);
    for (let s = 0; s < n; s++) {
      if (type === 'histogram' || type === 'gaugehistogram') {
        for (const le of ['0.1', '1', '+Inf']) out += sample(`${name}_bucket`, `le="${le}"`);
        out += sample(`${name}_${type === 'histogram' ? 'sum' : 'gsum'}`);
        out += sample(`${name}_${type === 'histogram' ? 'count' : 'gcount'}`);
      } else if (type === 'summary') {
        for (const q of ['0.5', '0.99']) out += sample(name, `quantile="${q}"`);
        out += sample(`${name}_sum`);
        out += sample(`${name}_count`);
      } else if (type === 'counter') {
        out += sample(`${name}${pick(['_total', '_total', '_created', ''])}`);
      } else if (type === 'info') out += sample(`${name}_info`);
      else out += sample(name);
    }
    // Samples of a family that has no # lines, before and after one that does (family resolution).
    if (r() < 0.2) out += sample(`loose_${f}_total`) + sample(`loose_${f}`);
  }
  if (om) out += `# EOF${r() < 0.8 ? nl : ''}`;
  return out;
}

test('generated expositions: the same records as the reference parser, key order included', () => {
  let parsed = 0;
  const why = new Map<string, number>();
  for (let seed = 1; seed <= 600; seed++) {
    for (const dialect of ['prometheus', 'openmetrics'] as const) {
      const o = same(exposition(rng(seed), dialect), dialect, `seed ${seed}`);
      if (o.ok) parsed++;
      else {
        const reason = o.error.replace(/^.*?: line \d+, column \d+: /, '').replace(/"[^"]*"/g, '…');
        why.set(reason, (why.get(reason) ?? 0) + 1);
      }
    }
  }
  // Most generated bodies are valid (a few are not, e.g. a # TYPE after a loose sample of that name).
  assert.ok(parsed > 900, `only ${parsed} of 1200 generated bodies parsed: ${JSON.stringify([...why])}`);
});

test('records of one label set are equal to fresh ones and cannot be changed by a consumer', () => {
  const text = 'a_sum{x="1",y="2"} 3\na_count{x="1",y="2"} 4\nb{x="1",y="2"} 5\nc 1\nd 2\n';
  const got = metricsRecords(text, 'prometheus');
  assert.deepEqual(got, referenceRecords(text, 'prometheus'));
  assert.ok(Object.isFrozen(got[0]!.labels) && Object.isFrozen(got[3]!.labels));
  assert.throws(() => {
    (got[0]!.labels as Record<string, string>).x = 'changed';
  }, TypeError);
});

test('mutated expositions: the same records, or the same parse error at the same line and column', () => {
  const alphabet = ['{', '}', '"', '=', ',', '\\', ' ', '\t', '\n', '\r', '#', '.', 'e', '+', '-', 'a', '_', '1', 'x'];
  let errors = 0;
  let cases = 0;
  for (let seed = 1; seed <= 250; seed++) {
    const r = rng(seed * 7919);
    for (const dialect of ['prometheus', 'openmetrics'] as const) {
      const base = exposition(r, dialect);
      for (let m = 0; m < 8; m++) {
        let text = base;
        const edits = 1 + Math.floor(r() * 3);
        for (let e = 0; e < edits; e++) {
          const at = Math.floor(r() * (text.length + 1));
          const op = r();
          const ch = alphabet[Math.floor(r() * alphabet.length)]!;
          if (op < 0.4) text = text.slice(0, at) + ch + text.slice(at);
          else if (op < 0.7) text = text.slice(0, at) + text.slice(at + 1);
          else text = text.slice(0, at) + ch + text.slice(at + 1);
        }
        // Truncations too: a body cut anywhere.
        if (r() < 0.15) text = text.slice(0, Math.floor(r() * text.length));
        const o = same(text, dialect, `seed ${seed}, mutation ${m}`);
        cases++;
        if (!o.ok) errors++;
      }
    }
  }
  assert.ok(errors > cases / 4, `only ${errors} of ${cases} mutated bodies failed: the mutations test too little`);
});

test('hand-written malformed lines: the same error and position as the reference parser', () => {
  const prom = [
    'a 1\nb{x="1} 2\n',
    'a 1\nb{x=1} 2\n',
    'a{x="\\q"} 1\n',
    'a{x="abc\\',
    'a{x="abc\\\r\n',
    'a{x="abc\r\n',
    'a{x="abc"\r\n',
    'a{x="abc",\r\n',
    'a{\r\n',
    'a{',
    'a{x',
    'a{x=',
    'a{x="1"y="2"} 1\n',
    'a{x="1"}\r\n',
    'a{x="1"}x 1\n',
    'a abc\n',
    'a 1 1.5\n',
    'a 1 1.0\n',
    'a 1 1.\n',
    'a 1 +1\n',
    'a 1 12345678901234567\n',
    'a 1 -\n',
    'a -\n',
    'a .\n',
    'a 1..2\n',
    'a\n',
    'a\r\n',
    'a \r\n',
    'a{x="1",x="2"} 1\n',
    'a 1\n# TYPE a gauge\n',
    '# TYPE a sideways\n',
    '# TYPE a gauge\n# TYPE a gauge\n',
    '# HELP a x\n# HELP a y\n',
    '# TYPE a{ gauge\n',
    '# TYPE  \n',
    '# HELP a\n',
    '1a 3\n',
    '{x="1"} 3\n',
    'a 1 2 3\n',
    'a 1 # {x="1"} 2\n',
    'a 1 2 # {x="1"} 2\n',
    'a{x="1",} 1\n',
    'a{,} 1\n',
    ' a 1\n',
    '\ta 1\n',
    '\ufeffa{x="1"} q\n',
    'a{x="1"} 1\rb 2\n',
    'a{x="\u00e9"} Ñ\n',
    'a{__proto__="x",__proto__="y"} 1\n',
    'a{__proto__="x",b="y"} 1\na{__proto__="x",b="z"} 2\na{__proto__="x",b="w"} 3\n',
    'a{x="1",y="2"} 1\na{x="1",y="3"} 1\na{x="1",x="2"} 1\n',
    'a{x="1",y="2"} 1\na{x="1",y="3"} 1\na{x="1",y="2",x="3"} 1\n',
    'a{x="1",y="2"} 1\na{x="1",y="3"} 1\na{y="1",x="2"} 1\na{x="1",y="4"} 1\n',
    'a{constructor="1",toString="2"} 1\na{constructor="1",toString="3"} 1\na{constructor="1",toString="4"} 1\n',
  ];
  const om = [
    'a 1\nb 2\n',
    'a 1\n\nb 2\n# EOF\n',
    'a 1\n# EOF\nb 2\n',
    'a 1 # trace 1\n# EOF\n',
    'a 1 #\n# EOF\n',
    'a 1 # {x="1"}\n# EOF\n',
    'a 1 # {x="1"} 1 2 3\n# EOF\n',
    'a 1 # {x="1"} q\n# EOF\n',
    'a 1 # {x="1"} 1 q\n# EOF\n',
    'a 1 # {x="1} 1\n# EOF\n',
    'a{x="1",} 1\n# EOF\n',
    'a 1 1.5.5\n# EOF\n',
    'a 1 abc\n# EOF\n',
    '# just a comment\n# EOF\n',
    '# UNIT a\n# EOF\n',
    '# TYPE a untyped\n# EOF\n',
    '# EOF \n',
    '',
    '# EOF',
    '# EOF\r\n\r\n',
  ];
  for (const t of prom) same(t, 'prometheus', JSON.stringify(t));
  for (const t of om) same(t, 'openmetrics', JSON.stringify(t));
});
