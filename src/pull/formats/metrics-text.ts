import { FormatError } from './format-error.js';

/**
 * Prometheus text exposition 0.0.4 and OpenMetrics 1.0, one record per sample (histogram buckets,
 * sums and counts, summary quantiles included): `{ name, family, type, help?, unit?, labels, value,
 * timestamp?, exemplar? }`. `value` is a number, or the string `NaN`, `+Inf` or `-Inf` (JSON has no
 * such numbers). `timestamp` is epoch milliseconds (OpenMetrics' seconds are converted), so the
 * record's event time is the sample's own. Strict: the first line that does not follow the format
 * fails the whole body with its line and column.
 *
 * Samples written with the same label set (the same text between `{` and `}`) may share one
 * `labels` object, frozen: treat records as read-only (copy `labels` to change them).
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
/** Distinct label values, and distinct label sets, shared per parse (beyond it, each is kept as read). */
const INTERN_LIMIT = 50_000;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
/** Exact powers of ten for the plain-decimal fast path (a ≤ 15-digit integer over 10^k is correctly rounded). */
const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
const NO_LABELS: Record<string, string> = Object.freeze({}) as Record<string, string>;

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
  return new ExpositionParser(text, dialect).parse();
}

/**
 * One parse. It scans `text` itself with absolute offsets (no string per line); a line is
 * [`ls`, `le`) — `le` before a `\r\n`'s `\r`. Positions in errors are relative to `ls`. Why a class:
 * its fields are plain property loads in optimised code, where closures over mutable `let`s are not.
 */
class ExpositionParser {
  private readonly om: boolean;
  private readonly families = new Map<string, Family>();
  private readonly familyOf = new Map<string, string>();
  private readonly out: MetricSample[] = [];
  private lineNo = 0;
  private ls = 0;
  private le = 0;
  private sawEof = false;
  /** The first backslash at or after `ls` (text.length when none): values before it need no unescaping. */
  private nextBackslash = -1;
  /** The last sample name read, with its family (a run of samples of one name is the common case). */
  private lastName = '';
  private lastFamily = '';
  private lastF: Family | null = null;
  /** Where readLabels stopped (the index after `}`): a field rather than a returned pair. */
  private labelsEnd = 0;
  /** Label names of the previous label set, reused when the text repeats them (saves a string per label). */
  private readonly seenNames: string[] = [];
  // Label values repeat across samples (instance, job, method, code, le): each distinct one is kept
  // once, so the records hold shared strings and the fresh slice dies young.
  private readonly internedValues = new Map<string, string>();
  // Whole label sets repeat too (a histogram's _sum and _count, every metric of one handler or
  // instance): the text between the braces maps to the labels object it parsed to, so a repeat costs
  // one lookup and no parse. Only sets that parsed in full are kept, and a parse depends on nothing
  // but that text (and the dialect), so a hit is exactly what parsing would give.
  private readonly internedSets = new Map<string, Record<string, string>>();
  private setLookups = true;
  private setHits = 0;
  private setMisses = 0;
  /** The last label set parsed in full or found, and its text. */
  private lastSetKey = '';
  private lastSet: Record<string, string> | null = null;
  /** Label values of the previous label set by position: a histogram's buckets repeat all but `le`. */
  private readonly seenValues: string[] = [];

  constructor(
    private readonly text: string,
    private readonly dialect: MetricsDialect,
  ) {
    this.om = dialect === 'openmetrics';
  }

  parse(): MetricSample[] {
    const text = this.text;
    const n = text.length;
    const om = this.om;
    let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
    while (start < n) {
      let end = text.indexOf('\n', start);
      if (end === -1) end = n;
      const ls = start;
      const le = text.charCodeAt(end - 1) === 13 ? end - 1 : end;
      this.ls = ls;
      this.le = le;
      this.lineNo++;
      start = end + 1;
      if (this.sawEof) this.fail('content after # EOF', ls);
      if (le === ls) {
        if (om) this.fail('blank lines are not allowed in OpenMetrics', ls);
        continue;
      }
      const c = text.charCodeAt(ls);
      if (c === 35) this.metaLine();
      else if (!om && (c === 32 || c === 9) && text.slice(ls, le).trim() === '') continue;
      else this.sampleLine();
    }
    if (om && !this.sawEof) {
      this.lineNo = Math.max(this.lineNo, 1);
      this.ls = 0;
      this.fail('the exposition does not end with # EOF (truncated?)', 0);
    }
    return this.out;
  }

  /** Throws the format error at absolute offset `at` of the current line. */
  private fail(reason: string, at: number): never {
    throw new FormatError(this.dialect, reason, this.lineNo, at - this.ls + 1);
  }

  /** The character at `i` as a JSON string, for messages ("" quoting as the old per-line parser did). */
  private shown(i: number): string {
    return JSON.stringify(this.text[i]);
  }

  private family(name: string): string {
    let f = this.familyOf.get(name);
    if (f !== undefined) return f;
    f = name;
    if (!this.families.has(name)) {
      for (const s of SUFFIXES) {
        if (name.endsWith(s) && this.families.has(name.slice(0, -s.length))) {
          f = name.slice(0, -s.length);
          break;
        }
      }
    }
    this.familyOf.set(name, f);
    return f;
  }

  private internValue(v: string): string {
    const kept = this.internedValues.get(v);
    if (kept !== undefined) return kept;
    if (this.internedValues.size < INTERN_LIMIT) this.internedValues.set(v, v);
    return v;
  }

  /** The label set at `i` (the `{`), shared with earlier samples that wrote the same text; sets `labelsEnd`. */
  private internedLabels(i: number): Record<string, string> {
    const text = this.text;
    // The set ends at its first `}` unless a value holds one; then no key matches and the set is parsed.
    const close = text.indexOf('}', i + 1);
    if (close === -1 || close >= this.le) return this.readLabels(i);
    // The previous sample's set first (a summary's or histogram's _sum and _count): a compare, no key.
    const prev = this.lastSetKey;
    if (this.lastSet !== null && prev.length === close - i - 1 && text.startsWith(prev, i + 1)) {
      this.labelsEnd = close + 1;
      return this.lastSet;
    }
    let key: string | undefined;
    if (this.setLookups) {
      key = text.slice(i + 1, close);
      const kept = this.internedSets.get(key);
      if (kept !== undefined) {
        this.setHits++;
        this.lastSetKey = key;
        this.lastSet = kept;
        this.labelsEnd = close + 1;
        return kept;
      }
      // Where label sets do not repeat (every histogram bucket has its own `le`), stop paying for the lookup.
      if (++this.setMisses >= 1024 && this.setHits * 4 < this.setMisses) this.setLookups = false;
    }
    const labels = this.readLabels(i);
    if (this.labelsEnd === close + 1) {
      Object.freeze(labels);
      key ??= text.slice(i + 1, close);
      this.lastSetKey = key;
      this.lastSet = labels;
      if (this.setLookups && this.internedSets.size < INTERN_LIMIT) this.internedSets.set(key, labels);
    }
    return labels;
  }

  // Reads `{name="value",…}` starting at `i` (the `{`); returns the labels and sets `labelsEnd`.
  private readLabels(i: number): Record<string, string> {
    const text = this.text;
    const le = this.le;
    const labels: Record<string, string> = {};
    i++;
    for (let k = 0; ; k++) {
      if (text.charCodeAt(i) === 125) {
        this.labelsEnd = i + 1;
        return labels;
      }
      const ns = i;
      if (i >= le) this.fail('unterminated label set', i);
      if (!isNameStart(text.charCodeAt(i))) this.fail(`expected a label name, found ${this.shown(i)}`, i);
      // Name characters stop at `\r` and `\n`, so name scans need no bound.
      let name = this.seenNames[k];
      if (name !== undefined && text.startsWith(name, i) && !isNameChar(text.charCodeAt(i + name.length)))
        i += name.length;
      else {
        while (isNameChar(text.charCodeAt(i))) i++;
        name = text.slice(ns, i);
        this.seenNames[k] = name;
      }
      if (text.charCodeAt(i) !== 61) this.fail(`expected '=' after label name "${name}"`, i);
      i++;
      if (text.charCodeAt(i) !== 34) this.fail(`the value of label "${name}" must be in double quotes`, i);
      i++;
      let value: string;
      const quote = text.indexOf('"', i);
      if (this.nextBackslash < i) {
        const b = text.indexOf('\\', i);
        this.nextBackslash = b === -1 ? text.length : b;
      }
      if (quote !== -1 && quote < le && quote < this.nextBackslash) {
        // No backslash before the closing quote: nothing to unescape.
        const seen = this.seenValues[k];
        value =
          seen !== undefined && seen.length === quote - i && text.startsWith(seen, i)
            ? seen
            : this.internValue(text.slice(i, quote));
        i = quote;
      } else {
        value = '';
        let seg = i;
        for (;;) {
          if (i >= le) this.fail(`unterminated value of label "${name}"`, i);
          const c = text.charCodeAt(i);
          if (c === 34) break;
          if (c === 92) {
            const e = i + 1 < le ? text[i + 1] : undefined;
            value += text.slice(seg, i);
            if (e === '\\') value += '\\';
            else if (e === '"') value += '"';
            else if (e === 'n') value += '\n';
            else this.fail(`invalid escape "\\${e ?? ''}" in the value of label "${name}" (use \\\\, \\" or \\n)`, i);
            i += 2;
            seg = i;
          } else i++;
        }
        value = this.internValue(value + text.slice(seg, i));
      }
      this.seenValues[k] = value;
      i++;
      if (Object.hasOwn(labels, name)) this.fail(`label "${name}" appears twice`, ns);
      labels[name] = value;
      const c = text.charCodeAt(i);
      if (c === 44) {
        i++;
        // 0.0.4 allows a trailing comma; OpenMetrics does not.
        if (text.charCodeAt(i) === 125 && this.om) this.fail('a trailing comma is not allowed in a label set', i - 1);
        continue;
      }
      if (c !== 125) this.fail(`expected ',' or '}' after the value of label "${name}"`, i);
    }
  }

  /**
   * A plain decimal in text[from, to) — `-?digits[.digits]`, at most 15 digits — read without a
   * substring; else undefined (the caller then takes the exact slow path). Exact: a ≤ 15-digit
   * integer and 10^k are both exact doubles, and one division rounds correctly, as Number() does.
   */
  private plainNumber(from: number, to: number): number | undefined {
    const text = this.text;
    let i = from;
    let neg = false;
    if (text.charCodeAt(i) === 45) {
      neg = true;
      i++;
    }
    if (to - i > 16) return undefined;
    let n = 0;
    let digits = 0;
    let point = -1;
    for (; i < to; i++) {
      const c = text.charCodeAt(i) - 48;
      if (c >= 0 && c <= 9) {
        n = n * 10 + c;
        digits++;
      } else if (c === -2 && point === -1) point = i;
      else return undefined;
    }
    if (digits === 0 || digits > 15) return undefined;
    if (point !== -1) n /= POW10[to - point - 1]!;
    return neg ? -n : n;
  }

  /** A plain integer of at most 15 digits in text[from, to) (0.0.4 timestamps), read without a substring; else undefined. */
  private plainInteger(from: number, to: number): number | undefined {
    const text = this.text;
    let i = from;
    let neg = false;
    if (text.charCodeAt(i) === 45) {
      neg = true;
      i++;
    }
    if (i === to || to - i > 15) return undefined;
    let n = 0;
    for (; i < to; i++) {
      const c = text.charCodeAt(i) - 48;
      if (c < 0 || c > 9) return undefined;
      n = n * 10 + c;
    }
    return neg ? -n : n;
  }

  private readValue(tok: string, at: number, what: string): number | string {
    if (NUMBER.test(tok)) return Number(tok);
    const lower = tok.toLowerCase();
    if (lower === 'nan') return 'NaN';
    if (lower === '+inf' || lower === 'inf') return '+Inf';
    if (lower === '-inf') return '-Inf';
    return this.fail(`${what} ${JSON.stringify(tok)} is not a number (NaN, +Inf and -Inf are allowed)`, at);
  }

  private readTimestamp(tok: string, at: number): number {
    if (this.om) {
      if (!NUMBER.test(tok)) this.fail(`timestamp ${JSON.stringify(tok)} is not a number of seconds`, at);
      return Math.round(Number(tok) * 1000);
    }
    if (!/^-?\d+$/.test(tok)) this.fail(`timestamp ${JSON.stringify(tok)} is not an integer of milliseconds`, at);
    return Number(tok);
  }

  /** Comment lines are rare (a few per family): read on a string of their own, positions as offsets into it. */
  private metaLine(): void {
    const line = this.text.slice(this.ls, this.le);
    const fail = (reason: string, col: number): never => this.fail(reason, this.ls + col);
    const om = this.om;
    // "# HELP name text", "# TYPE name type", "# UNIT name unit" (OpenMetrics), "# EOF" (OpenMetrics).
    if (om && line === '# EOF') {
      this.sawEof = true;
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
    let f = this.families.get(name);
    if (!f) {
      f = { type: om ? 'unknown' : 'untyped', sampled: false };
      this.families.set(name, f);
      // A new family can claim names already resolved (`x_total` → `x`): resolve them again.
      this.familyOf.clear();
      this.lastName = '';
      this.lastF = null;
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
  }

  private sampleLine(): void {
    const text = this.text;
    const ls = this.ls;
    const le = this.le;
    const om = this.om;
    let i = ls;
    if (!isNameStart(text.charCodeAt(ls))) this.fail(`expected a metric name, found ${this.shown(ls)}`, ls);
    let name = this.lastName;
    let fam: string;
    let f: Family | null;
    if (name !== '' && text.startsWith(name, ls) && !isNameChar(text.charCodeAt(ls + name.length))) {
      i += name.length;
      fam = this.lastFamily;
      f = this.lastF;
    } else {
      while (isNameChar(text.charCodeAt(i))) i++;
      name = text.slice(ls, i);
      this.lastName = name;
      fam = this.family(name);
      this.lastFamily = fam;
      f = null;
      this.lastF = null;
    }
    let labels = NO_LABELS;
    if (text.charCodeAt(i) === 123) {
      labels = this.internedLabels(i);
      i = this.labelsEnd;
    }
    let c = text.charCodeAt(i);
    if (i >= le || (c !== 32 && c !== 9))
      this.fail(
        i >= le ? `sample "${name}" has no value` : `expected a space before the value, found ${this.shown(i)}`,
        i,
      );
    // Spaces and tabs stop at `\r` and `\n`: skips need no bound, token scans do.
    while ((c = text.charCodeAt(i)) === 32 || c === 9) i++;
    let end = i;
    while (end < le && (c = text.charCodeAt(end)) !== 32 && c !== 9) end++;
    if (end === i) this.fail(`sample "${name}" has no value`, i);
    const value = this.plainNumber(i, end) ?? this.readValue(text.slice(i, end), i, 'value');
    if (f === null) {
      f = this.families.get(fam) ?? null;
      if (f === null) {
        // Remembered so that a # TYPE for it further down is refused (TYPE must come first).
        f = { type: om ? 'unknown' : 'untyped', sampled: true };
        this.families.set(fam, f);
      }
      this.lastF = f;
    }
    f.sampled = true;
    i = end;
    while ((c = text.charCodeAt(i)) === 32 || c === 9) i++;
    let timestamp: number | undefined;
    if (i < le && c !== 35) {
      end = i;
      while (end < le && (c = text.charCodeAt(end)) !== 32 && c !== 9) end++;
      if (om) {
        const s = this.plainNumber(i, end);
        timestamp = s !== undefined ? Math.round(s * 1000) : this.readTimestamp(text.slice(i, end), i);
      } else {
        timestamp = this.plainInteger(i, end) ?? this.readTimestamp(text.slice(i, end), i);
      }
      i = end;
      while ((c = text.charCodeAt(i)) === 32 || c === 9) i++;
    }
    const sample = newSample(name, fam, f, labels, value, timestamp);
    if (i < le) {
      if (!om || text.charCodeAt(i) !== 35)
        this.fail(`unexpected content after the ${timestamp === undefined ? 'value' : 'timestamp'}`, i);
      sample.exemplar = this.exemplar(i);
    }
    this.out.push(sample);
  }

  /** OpenMetrics exemplar at `i` (its `#`): ` # {labels} value [timestamp]`. Rare: read on substrings. */
  private exemplar(i: number): NonNullable<MetricSample['exemplar']> {
    const text = this.text;
    i++;
    while (text.charCodeAt(i) === 32) i++;
    if (i >= this.le || text.charCodeAt(i) !== 123) this.fail('an exemplar must start with a label set', i);
    const exLabels = this.readLabels(i);
    i = this.labelsEnd;
    const parts = text
      .slice(i, this.le)
      .trim()
      .split(/[ \t]+/);
    if (parts[0] === '' || parts.length > 2)
      this.fail('an exemplar needs a value and at most a timestamp after its labels', i);
    const exemplar: NonNullable<MetricSample['exemplar']> = {
      labels: exLabels,
      value: this.readValue(parts[0]!, i, 'exemplar value'),
    };
    if (parts[1] !== undefined) exemplar.timestamp = this.readTimestamp(parts[1], i);
    return exemplar;
  }
}

/**
 * A record with its optional fields in the order they always had (JSON keeps it): one object literal
 * per combination, so each record is allocated with its fields in place rather than grown.
 */
function newSample(
  name: string,
  family: string,
  f: Family,
  labels: Record<string, string>,
  value: number | string,
  timestamp: number | undefined,
): MetricSample {
  const type = f.type;
  const help = f.help;
  const unit = f.unit === '' ? undefined : f.unit;
  if (unit === undefined) {
    if (help === undefined)
      return timestamp === undefined
        ? { name, family, type, labels, value }
        : { name, family, type, labels, value, timestamp };
    return timestamp === undefined
      ? { name, family, type, labels, value, help }
      : { name, family, type, labels, value, help, timestamp };
  }
  if (help === undefined)
    return timestamp === undefined
      ? { name, family, type, labels, value, unit }
      : { name, family, type, labels, value, unit, timestamp };
  return timestamp === undefined
    ? { name, family, type, labels, value, help, unit }
    : { name, family, type, labels, value, help, unit, timestamp };
}
