/**
 * Test-only: the Prometheus/OpenMetrics parser as it was before the offset-scanning rewrite of
 * src/pull/formats/metrics-text.ts (main at 9c91a68), kept verbatim but for this comment and the
 * import path. The differential test (prom-parse-differential.test.ts) holds the new parser to its
 * records and errors, and the parse bench measures the two side by side.
 */
import { FormatError } from '../../src/pull/formats/format-error.js';

/**
 * Prometheus text exposition 0.0.4 and OpenMetrics 1.0, one record per sample (histogram buckets,
 * sums and counts, summary quantiles included): `{ name, family, type, help?, unit?, labels, value,
 * timestamp?, exemplar? }`. `value` is a number, or the string `NaN`, `+Inf` or `-Inf` (JSON has no
 * such numbers). `timestamp` is epoch milliseconds (OpenMetrics' seconds are converted), so the
 * record's event time is the sample's own. Strict: the first line that does not follow the format
 * fails the whole body with its line and column.
 */
export interface MetricSample {
  name: string;
  family: string;
  type: string;
  help?: string;
  unit?: string;
  labels: Record<string, string>;
  value: number | string;
  timestamp?: number;
  exemplar?: { labels: Record<string, string>; value: number | string; timestamp?: number };
}

export type MetricsDialect = 'prometheus' | 'openmetrics';

const PROM_TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const OM_TYPES = new Set(['counter', 'gauge', 'histogram', 'gaugehistogram', 'stateset', 'info', 'summary', 'unknown']);
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created', '_gcount', '_gsum', '_info'];
/** Distinct label values shared per parse (beyond it, values are kept as read). */
const INTERN_LIMIT = 50_000;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

interface Family {
  type: string;
  help?: string;
  unit?: string;
  sampled: boolean;
  typed?: boolean;
}

function isNameStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || c === 58;
}
function isNameChar(c: number): boolean {
  return isNameStart(c) || (c >= 48 && c <= 57);
}

export function metricsRecords(text: string, dialect: MetricsDialect): MetricSample[] {
  const om = dialect === 'openmetrics';
  const families = new Map<string, Family>();
  const familyOf = new Map<string, string>();
  const out: MetricSample[] = [];
  let lineNo = 0;
  let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let sawEof = false;
  let line = '';
  let lastName = '';
  /** Where the line's first backslash is (-1: none, so no label value needs unescaping). */
  let lineBackslash = -1;
  const fail = (reason: string, col: number): never => {
    throw new FormatError(dialect, reason, lineNo, col + 1);
  };

  const family = (name: string): string => {
    let f = familyOf.get(name);
    if (f !== undefined) return f;
    f = name;
    if (!families.has(name)) {
      for (const s of SUFFIXES) {
        if (name.endsWith(s) && families.has(name.slice(0, -s.length))) {
          f = name.slice(0, -s.length);
          break;
        }
      }
    }
    familyOf.set(name, f);
    return f;
  };

  // Label values repeat across samples (instance, job, method, code, le): each distinct one is kept
  // once, so the records hold shared strings and the fresh slice dies young. What the parse retains
  // is what the garbage collector copies; this halves it on a typical exposition.
  const internedValues = new Map<string, string>();
  const intern = (v: string): string => {
    const kept = internedValues.get(v);
    if (kept !== undefined) return kept;
    if (internedValues.size < INTERN_LIMIT) internedValues.set(v, v);
    return v;
  };

  // Reads `{name="value",…}` starting at `i` (the `{`); returns the labels and the index after `}`.
  // Label names of the previous label set, reused when the text repeats them (saves a string per label).
  const seenNames: string[] = [];
  // Where readLabels stopped (the index after `}`): a variable rather than a returned pair, one allocation less per sample.
  let labelsEnd = 0;
  const readLabels = (i: number): Record<string, string> => {
    const labels: Record<string, string> = {};
    i++;
    for (let k = 0; ; k++) {
      if (line.charCodeAt(i) === 125) {
        labelsEnd = i + 1;
        return labels;
      }
      const ns = i;
      if (!isNameStart(line.charCodeAt(i)))
        fail(
          i >= line.length ? 'unterminated label set' : `expected a label name, found ${JSON.stringify(line[i])}`,
          i,
        );
      let name = seenNames[k];
      if (name !== undefined && line.startsWith(name, i) && !isNameChar(line.charCodeAt(i + name.length)))
        i += name.length;
      else {
        while (isNameChar(line.charCodeAt(i))) i++;
        name = line.slice(ns, i);
        seenNames[k] = name;
      }
      if (line.charCodeAt(i) !== 61) fail(`expected '=' after label name "${name}"`, i);
      i++;
      if (line.charCodeAt(i) !== 34) fail(`the value of label "${name}" must be in double quotes`, i);
      i++;
      let value = '';
      let seg = i;
      // No backslash on the line: the value ends at the next quote (a native scan, no escapes to undo).
      const quote = lineBackslash === -1 ? line.indexOf('"', i) : -1;
      if (quote !== -1) {
        value = line.slice(i, quote);
        i = quote;
        seg = i;
      }
      for (;;) {
        const c = line.charCodeAt(i);
        if (Number.isNaN(c)) fail(`unterminated value of label "${name}"`, i);
        if (c === 34) break;
        if (c === 92) {
          const e = line[i + 1];
          value += line.slice(seg, i);
          if (e === '\\') value += '\\';
          else if (e === '"') value += '"';
          else if (e === 'n') value += '\n';
          else fail(`invalid escape "\\${e ?? ''}" in the value of label "${name}" (use \\\\, \\" or \\n)`, i);
          i += 2;
          seg = i;
        } else i++;
      }
      value = intern(value + line.slice(seg, i));
      i++;
      if (Object.hasOwn(labels, name)) fail(`label "${name}" appears twice`, ns);
      labels[name] = value;
      const c = line.charCodeAt(i);
      if (c === 44) {
        i++;
        // 0.0.4 allows a trailing comma; OpenMetrics does not.
        if (line.charCodeAt(i) === 125 && om) fail('a trailing comma is not allowed in a label set', i - 1);
        continue;
      }
      if (c !== 125) fail(`expected ',' or '}' after the value of label "${name}"`, i);
    }
  };

  /** A plain integer of at most 15 digits in line[from, to), read without a substring; else undefined. */
  const plainInteger = (from: number, to: number): number | undefined => {
    let i = from;
    let neg = false;
    if (line.charCodeAt(i) === 45) {
      neg = true;
      i++;
    }
    if (i === to || to - i > 15) return undefined;
    let n = 0;
    for (; i < to; i++) {
      const c = line.charCodeAt(i) - 48;
      if (c < 0 || c > 9) return undefined;
      n = n * 10 + c;
    }
    return neg ? -n : n;
  };

  const readValue = (tok: string, col: number, what: string): number | string => {
    if (NUMBER.test(tok)) return Number(tok);
    const lower = tok.toLowerCase();
    if (lower === 'nan') return 'NaN';
    if (lower === '+inf' || lower === 'inf') return '+Inf';
    if (lower === '-inf') return '-Inf';
    return fail(`${what} ${JSON.stringify(tok)} is not a number (NaN, +Inf and -Inf are allowed)`, col);
  };

  const readTimestamp = (tok: string, col: number): number => {
    if (om) {
      if (!NUMBER.test(tok)) fail(`timestamp ${JSON.stringify(tok)} is not a number of seconds`, col);
      return Math.round(Number(tok) * 1000);
    }
    if (!/^-?\d+$/.test(tok)) fail(`timestamp ${JSON.stringify(tok)} is not an integer of milliseconds`, col);
    return Number(tok);
  };

  const metaLine = () => {
    // "# HELP name text", "# TYPE name type", "# UNIT name unit" (OpenMetrics), "# EOF" (OpenMetrics).
    if (om && line === '# EOF') {
      sawEof = true;
      return;
    }
    const m = /^#[ \t]+(HELP|TYPE|UNIT)[ \t]+/.exec(line);
    if (!m) {
      if (om) fail('a comment must be # HELP, # TYPE, # UNIT or # EOF', 0);
      return; // 0.0.4: other comments are ignored
    }
    const kind = m[1]!;
    if (kind === 'UNIT' && !om) return;
    let i = m[0].length;
    const ns = i;
    if (!isNameStart(line.charCodeAt(i))) fail('expected a metric name', i);
    while (isNameChar(line.charCodeAt(i))) i++;
    const name = line.slice(ns, i);
    const rest =
      line.charCodeAt(i) === 32 || line.charCodeAt(i) === 9
        ? line.slice(i + 1)
        : i >= line.length
          ? ''
          : fail(`unexpected character ${JSON.stringify(line[i])} after the metric name`, i);
    let f = families.get(name);
    if (!f) {
      f = { type: om ? 'unknown' : 'untyped', sampled: false };
      families.set(name, f);
      familyOf.clear();
    }
    if (kind === 'TYPE') {
      const type = rest.trim();
      if (!(om ? OM_TYPES : PROM_TYPES).has(type))
        fail(`unknown metric type "${type}" (one of ${[...(om ? OM_TYPES : PROM_TYPES)].join(', ')})`, i + 1);
      if (f.typed) fail(`a second # TYPE line for "${name}"`, 0);
      if (f.sampled) fail(`# TYPE for "${name}" comes after its samples; it must come first`, 0);
      f.type = type;
      f.typed = true;
    } else if (kind === 'HELP') {
      if (f.help !== undefined) fail(`a second # HELP line for "${name}"`, 0);
      f.help = rest.replace(/\\(\\|n|")/g, (_s, e: string) => (e === 'n' ? '\n' : e));
    } else {
      f.unit = rest.trim();
    }
  };

  const sampleLine = () => {
    let i = 0;
    if (!isNameStart(line.charCodeAt(0))) fail(`expected a metric name, found ${JSON.stringify(line[0])}`, 0);
    let name = lastName;
    if (line.startsWith(name) && name !== '' && !isNameChar(line.charCodeAt(name.length))) i = name.length;
    else {
      while (isNameChar(line.charCodeAt(i))) i++;
      name = line.slice(0, i);
      lastName = name;
    }
    let labels: Record<string, string> = {};
    if (line.charCodeAt(i) === 123) {
      labels = readLabels(i);
      i = labelsEnd;
    }
    const c = line.charCodeAt(i);
    if (c !== 32 && c !== 9)
      fail(
        i >= line.length
          ? `sample "${name}" has no value`
          : `expected a space before the value, found ${JSON.stringify(line[i])}`,
        i,
      );
    while (line.charCodeAt(i) === 32 || line.charCodeAt(i) === 9) i++;
    let end = i;
    while (end < line.length && line.charCodeAt(end) !== 32 && line.charCodeAt(end) !== 9) end++;
    if (end === i) fail(`sample "${name}" has no value`, i);
    const value = plainInteger(i, end) ?? readValue(line.slice(i, end), i, 'value');
    const fam = family(name);
    let f = families.get(fam);
    if (!f) {
      // Remembered so that a # TYPE for it further down is refused (TYPE must come first).
      f = { type: om ? 'unknown' : 'untyped', sampled: true };
      families.set(fam, f);
    }
    const sample: MetricSample = { name, family: fam, type: f.type, labels, value };
    f.sampled = true;
    if (f.help !== undefined) sample.help = f.help;
    if (f.unit !== undefined && f.unit !== '') sample.unit = f.unit;
    i = end;
    while (line.charCodeAt(i) === 32 || line.charCodeAt(i) === 9) i++;
    if (i < line.length && line.charCodeAt(i) !== 35) {
      end = i;
      while (end < line.length && line.charCodeAt(end) !== 32 && line.charCodeAt(end) !== 9) end++;
      sample.timestamp = (om ? undefined : plainInteger(i, end)) ?? readTimestamp(line.slice(i, end), i);
      i = end;
      while (line.charCodeAt(i) === 32 || line.charCodeAt(i) === 9) i++;
    }
    if (i < line.length) {
      if (!om || line.charCodeAt(i) !== 35)
        fail(`unexpected content after the ${sample.timestamp === undefined ? 'value' : 'timestamp'}`, i);
      // OpenMetrics exemplar: ` # {labels} value [timestamp]`.
      i++;
      while (line.charCodeAt(i) === 32) i++;
      if (line.charCodeAt(i) !== 123) fail('an exemplar must start with a label set', i);
      const exLabels = readLabels(i);
      i = labelsEnd;
      const parts = line
        .slice(i)
        .trim()
        .split(/[ \t]+/);
      if (parts[0] === '' || parts.length > 2)
        fail('an exemplar needs a value and at most a timestamp after its labels', i);
      const exemplar: NonNullable<MetricSample['exemplar']> = {
        labels: exLabels,
        value: readValue(parts[0]!, i, 'exemplar value'),
      };
      if (parts[1] !== undefined) exemplar.timestamp = readTimestamp(parts[1], i);
      sample.exemplar = exemplar;
    }
    out.push(sample);
  };

  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    line = text.charCodeAt(end - 1) === 13 ? text.slice(start, end - 1) : text.slice(start, end);
    lineNo++;
    start = end + 1;
    if (sawEof) fail('content after # EOF', 0);
    if (line === '') {
      if (om) fail('blank lines are not allowed in OpenMetrics', 0);
      continue;
    }
    lineBackslash = line.indexOf('\\');
    if (line.charCodeAt(0) === 35) metaLine();
    else if (!om && (line.charCodeAt(0) === 32 || line.charCodeAt(0) === 9) && line.trim() === '') continue;
    else sampleLine();
  }
  if (om && !sawEof) {
    lineNo = Math.max(lineNo, 1);
    fail('the exposition does not end with # EOF (truncated?)', 0);
  }
  return out;
}
