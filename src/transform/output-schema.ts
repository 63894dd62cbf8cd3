/**
 * A view's output schema: the typed columns its transform's outputs are stored as. Declared by the
 * user (validated here) or inferred from the first outputs; outputs are coerced to it column by
 * column, and every value that does not fit is counted, never silently dropped.
 */

export type OutputFieldType = 'string' | 'number' | 'boolean' | 'date' | 'array' | 'null';

export const OUTPUT_FIELD_TYPES: readonly OutputFieldType[] = ['string', 'number', 'boolean', 'date', 'array', 'null'];

export interface OutputField {
  name: string;
  type: OutputFieldType;
  description?: string;
}

/**
 * Query parameters of the view query endpoints: a field with one of these names could not be
 * filtered by name. Compared case-insensitively (column names are, in DuckDB).
 */
export const RESERVED_OUTPUT_NAMES: ReadonlySet<string> = new Set([
  'limit',
  'cursor',
  'after',
  'before',
  'sort',
  'order_by',
  'start_at',
  'end_at',
  'interval',
  'timezone',
  'series',
  'max_series',
  'time_range',
  'page_id',
  'normalize',
  'coverage_mode',
  'forecast_at',
]);
/** Sluice's own columns start with this. */
export const RESERVED_OUTPUT_PREFIX = '__';
export const MAX_OUTPUT_FIELDS = 1000;
export const MAX_FIELD_NAME_CHARS = 128;
export const MAX_FIELD_DESCRIPTION_CHARS = 512;

/** One problem with field `index`; `key` names the property at fault (null: the entry itself). */
export interface FieldProblem {
  index: number;
  key: 'name' | 'type' | 'description' | null;
  message: string;
}

const TYPES = new Set<string>(OUTPUT_FIELD_TYPES);
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Why `name` cannot be a field name, or null when it can (uniqueness aside). */
export function fieldNameProblem(name: string): string | null {
  if (name.length === 0) return 'must not be empty';
  if (name.length > MAX_FIELD_NAME_CHARS)
    return `must be at most ${MAX_FIELD_NAME_CHARS} characters (it has ${name.length})`;
  if (CONTROL.test(name)) return 'must not contain control characters';
  if (name.startsWith(RESERVED_OUTPUT_PREFIX))
    return `must not start with "${RESERVED_OUTPUT_PREFIX}" (reserved for Sluice's own columns)`;
  if (RESERVED_OUTPUT_NAMES.has(name.toLowerCase()))
    return `"${name}" is reserved: it is a query parameter of view queries`;
  return null;
}

/**
 * Every problem of a declared schema, in field order (empty: valid). Names are unique
 * case-insensitively. The API reports each as `body.output_schema[<index>].<key>`.
 */
export function validateOutputSchema(fields: readonly unknown[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const seen = new Map<string, number>();
  fields.forEach((f, index) => {
    if (index >= MAX_OUTPUT_FIELDS) {
      if (index === MAX_OUTPUT_FIELDS)
        problems.push({
          index,
          key: null,
          message: `at most ${MAX_OUTPUT_FIELDS} fields are allowed (there are ${fields.length})`,
        });
      return;
    }
    if (f === null || typeof f !== 'object' || Array.isArray(f)) {
      problems.push({ index, key: null, message: 'must be an object {name, type, description?}' });
      return;
    }
    const { name, type, description } = f as Record<string, unknown>;
    if (typeof name !== 'string') problems.push({ index, key: 'name', message: 'must be a string' });
    else {
      const p = fieldNameProblem(name);
      if (p !== null) problems.push({ index, key: 'name', message: p });
      else {
        const first = seen.get(name.toLowerCase());
        if (first !== undefined)
          problems.push({
            index,
            key: 'name',
            message: `duplicates the name of field ${first} (names are compared case-insensitively)`,
          });
        else seen.set(name.toLowerCase(), index);
      }
    }
    if (typeof type !== 'string' || !TYPES.has(type))
      problems.push({ index, key: 'type', message: `must be one of ${OUTPUT_FIELD_TYPES.join(', ')}` });
    if (description !== undefined) {
      if (typeof description !== 'string') problems.push({ index, key: 'description', message: 'must be a string' });
      else if (description.length > MAX_FIELD_DESCRIPTION_CHARS)
        problems.push({
          index,
          key: 'description',
          message: `must be at most ${MAX_FIELD_DESCRIPTION_CHARS} characters (it has ${description.length})`,
        });
    }
    for (const k of Object.keys(f)) {
      if (k !== 'name' && k !== 'type' && k !== 'description')
        problems.push({ index, key: null, message: `unknown property "${k}"` });
    }
  });
  return problems;
}

/** A column of coerced values in schema order; `date` values are epoch ms, `array` values JSON text. */
export type OutputColumn =
  | { name: string; type: 'string' | 'array'; values: (string | null)[] }
  | { name: string; type: 'number' | 'date'; values: (number | null)[] }
  | { name: string; type: 'boolean'; values: (boolean | null)[] }
  | { name: string; type: 'null'; values: null[] };

export interface CoercionCounts {
  /** Values stored after a conversion (e.g. "12.5" into a number column). */
  coerced: number;
  /** Per field: values present (not null) that did not fit its type; each was stored as null. */
  failed: Record<string, number>;
  /** Per key not in the schema: outputs that had it (not stored). */
  extra: Record<string, number>;
}

/**
 * Coerces output rows to `schema`, one value array per field. A missing key or null is null and
 * not a failure. Rules (v = the output value; ✗ = not coercible → null, counted in `failed`):
 *
 * | type    | stored as-is        | converted                                           | ✗                        |
 * |---------|---------------------|-----------------------------------------------------|--------------------------|
 * | string  | string              | number, boolean → String(v); object, array → JSON   | —                        |
 * | number  | finite number       | string in JSON number syntax ("12.5", "-1e3")        | other strings, booleans, objects, arrays |
 * | boolean | boolean             | "true" / "false" (exact), numbers 1 / 0             | other strings/numbers, objects, arrays |
 * | date    | —                   | number → epoch ms (not seconds); ISO-8601 string → epoch ms (no offset = UTC) | other strings, out-of-range times, booleans, objects, arrays |
 * | array   | —                   | array → JSON text                                   | anything not an array    |
 * | null    | null                | —                                                   | any other value          |
 *
 * `counts.coerced` counts the values stored after a conversion (every date and array value, and
 * e.g. a number into a string column).
 */
export function coerceOutputs(
  rows: readonly unknown[],
  schema: readonly OutputField[],
): { columns: OutputColumn[]; counts: CoercionCounts } {
  const raw = rowsToColumns(rows, schema);
  return coerceColumns(raw.columns, raw.extra, schema);
}

/**
 * Output rows as one value array per field of `schema` (a missing key, or a row that is not an
 * object, gives undefined) and, per key outside the schema, how many rows have it. The form the
 * sandbox answers in when the view declares its fields (harness.ts); rows are turned into it when
 * they came as objects.
 */
export function rowsToColumns(
  rows: readonly unknown[],
  schema: readonly OutputField[],
): { columns: unknown[][]; extra: Record<string, number> } {
  const n = rows.length;
  const objs = rows.map((row) =>
    row !== null && typeof row === 'object' && !Array.isArray(row) ? (row as Record<string, unknown>) : null,
  );
  const columns = schema.map(({ name }) => {
    // `toString`, `constructor`…: a plain object inherits them; only own keys are values.
    const inherited = name in Object.prototype;
    const values = new Array<unknown>(n);
    for (let r = 0; r < n; r++) {
      const obj = objs[r] ?? null;
      values[r] = obj === null || (inherited && !Object.hasOwn(obj, name)) ? undefined : obj[name];
    }
    return values;
  });
  const known = new Set(schema.map((f) => f.name));
  const extra: Record<string, number> = {};
  for (const obj of objs) {
    if (obj === null) continue;
    for (const k in obj) {
      if (!known.has(k) && Object.hasOwn(obj, k)) extra[k] = (extra[k] ?? 0) + 1;
    }
  }
  return { columns, extra };
}

/**
 * Coerces raw value columns (`raw[k]` for `schema[k]`, see `rowsToColumns`) by the rules of
 * `coerceOutputs`; `extra` becomes `counts.extra`. `inPlace`: the coerced values are written over
 * the raw ones (the caller's own arrays; no second array per column).
 */
export function coerceColumns(
  raw: readonly (readonly unknown[])[],
  extra: Record<string, number>,
  schema: readonly OutputField[],
  inPlace = false,
): { columns: OutputColumn[]; counts: CoercionCounts } {
  const failed: Record<string, number> = {};
  let coerced = 0;
  // Column at a time: one type per loop keeps the loops monomorphic.
  const columns = schema.map((field, k): OutputColumn => {
    const { name, type } = field;
    const coerce = COERCE[type];
    const native = NATIVE[type];
    const input = raw[k]!;
    const n = input.length;
    const values = inPlace
      ? (input as (string | number | boolean | null)[])
      : new Array<string | number | boolean | null>(n);
    let bad = 0;
    for (let r = 0; r < n; r++) {
      const v = input[r];
      if (v === undefined || v === null) {
        values[r] = null;
        continue;
      }
      const c = coerce(v);
      if (c === FAILED) {
        values[r] = null;
        bad++;
      } else {
        values[r] = c;
        if (typeof v !== native) coerced++;
      }
    }
    if (bad > 0) failed[name] = bad;
    return { name, type, values } as OutputColumn;
  });
  return { columns, counts: { coerced, failed, extra } };
}

const FAILED = Symbol('failed');
type Coerce = (v: unknown) => string | number | boolean | typeof FAILED;

/** The JS type a column's values have without conversion ('' = always converted). */
const NATIVE: Record<OutputFieldType, string> = {
  string: 'string',
  number: 'number',
  boolean: 'boolean',
  date: '',
  array: '',
  null: '',
};

// JSON number syntax, nothing else ("0x10", " 1", "1_000", "Infinity", "" are not numbers here).
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

const COERCE: Record<OutputFieldType, Coerce> = {
  string: (v) =>
    typeof v === 'string'
      ? v
      : typeof v === 'number' || typeof v === 'boolean'
        ? String(v)
        : typeof v === 'object' && v !== null
          ? JSON.stringify(v)
          : FAILED,
  number: (v) => {
    if (typeof v === 'number') return Number.isFinite(v) ? v : FAILED;
    if (typeof v === 'string' && JSON_NUMBER.test(v)) {
      const x = Number(v);
      return Number.isFinite(x) ? x : FAILED;
    }
    return FAILED;
  },
  boolean: (v) =>
    typeof v === 'boolean' ? v : v === 'true' || v === 1 ? true : v === 'false' || v === 0 ? false : FAILED,
  date: (v) => {
    const ms =
      typeof v === 'number'
        ? Number.isFinite(v) && Math.abs(v) <= 8.64e15
          ? v
          : null
        : typeof v === 'string'
          ? parseIsoDate(v)
          : null;
    return ms === null ? FAILED : ms;
  },
  array: (v) => (Array.isArray(v) ? JSON.stringify(v) : FAILED),
  null: () => FAILED,
};

/** One non-null value into `type`: the stored value, or undefined when it does not fit. */
export function coerceValue(v: unknown, type: OutputFieldType): string | number | boolean | undefined {
  const c = COERCE[type](v);
  return c === FAILED ? undefined : c;
}

// ISO 8601 / RFC 3339: date, or date + time with optional fraction and offset (T, t or a space).
const ISO_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

/**
 * Epoch ms of an ISO-8601 date or date-time, null when `s` is not one (or names an impossible
 * date such as 2023-02-30). A date-time without an offset is read as UTC; fractions past
 * milliseconds are truncated.
 */
export function parseIsoDate(s: string): number | null {
  if (s.length === 24) {
    const t = canonicalIsoDate(s);
    if (t !== null) return t;
  }
  const m = ISO_DATE.exec(s);
  if (m === null) return null;
  const [, y, mo, d, h, mi, sec, frac, zone] = m;
  const year = Number(y),
    month = Number(mo),
    day = Number(d);
  const hour = h === undefined ? 0 : Number(h),
    minute = mi === undefined ? 0 : Number(mi),
    second = sec === undefined ? 0 : Number(sec);
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMin = 0;
  if (zone !== undefined && zone !== 'Z' && zone !== 'z') {
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2)),
      om = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
    if (oh > 23 || om > 59) return null;
    offsetMin = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0–99 to 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  // It also rolls 02-30 over to 03-02: refuse instead.
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  date.setUTCHours(hour, minute, second, frac === undefined ? 0 : Number(frac.slice(0, 3).padEnd(3, '0')));
  const t = date.getTime() - offsetMin * 60_000;
  return Number.isFinite(t) && Math.abs(t) <= 8.64e15 ? t : null;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * The form `toISOString` writes (`2026-01-31T12:00:00.000Z`, by far the most common in records),
 * read digit by digit; null when `s` is not exactly that form (the general parser decides then).
 */
function canonicalIsoDate(s: string): number | null {
  if (
    s.charCodeAt(4) !== 45 ||
    s.charCodeAt(7) !== 45 ||
    s.charCodeAt(10) !== 84 ||
    s.charCodeAt(13) !== 58 ||
    s.charCodeAt(16) !== 58 ||
    s.charCodeAt(19) !== 46 ||
    s.charCodeAt(23) !== 90
  )
    return null;
  const num = (from: number, to: number): number => {
    let v = 0;
    for (let i = from; i < to; i++) {
      const d = s.charCodeAt(i) - 48;
      if (d < 0 || d > 9) return -1;
      v = v * 10 + d;
    }
    return v;
  };
  const year = num(0, 4),
    month = num(5, 7),
    day = num(8, 10),
    hour = num(11, 13),
    minute = num(14, 16),
    second = num(17, 19),
    ms = num(20, 23);
  // Years below 100 go the general way (Date.UTC would map them to 1900–1999).
  if (
    year < 100 ||
    month < 1 ||
    month > 12 ||
    day < 1 ||
    hour < 0 ||
    hour > 23 ||
    minute < 0 ||
    minute > 59 ||
    second < 0 ||
    second > 59 ||
    ms < 0
  )
    return null;
  const leap = month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > DAYS_IN_MONTH[month - 1]! + (leap ? 1 : 0)) return null;
  return Date.UTC(year, month - 1, day, hour, minute, second, ms);
}

/** An ISO-8601 date-time (date AND time) string: what inference reads as a date. */
function isIsoDateTime(s: string): boolean {
  return (
    s.length >= 16 && s.length <= 40 && (s[10] === 'T' || s[10] === 't' || s[10] === ' ') && parseIsoDate(s) !== null
  );
}

/**
 * A schema from the first `maxRows` outputs: keys in the order first seen; each key's type from
 * its non-null values: one JS type → that type (a nested object → 'string', stored as JSON text),
 * strings that are all ISO-8601 date-times → 'date', conflicting types → 'string', only null →
 * 'null'. Keys that cannot be field names (reserved, `__…`, too long, a case-insensitive repeat)
 * are left out; at most MAX_OUTPUT_FIELDS fields.
 */
export function inferOutputSchema(rows: readonly unknown[], maxRows = 100): OutputField[] {
  type Seen = { kind: OutputFieldType | 'object' | null; mixed: boolean; dates: boolean };
  const seen = new Map<string, Seen>();
  const lower = new Set<string>();
  const end = Math.min(rows.length, maxRows);
  for (let r = 0; r < end; r++) {
    const row = rows[r];
    if (row === null || typeof row !== 'object' || Array.isArray(row)) continue;
    for (const [k, v] of Object.entries(row as Record<string, unknown>)) {
      let s = seen.get(k);
      if (s === undefined) {
        if (seen.size >= MAX_OUTPUT_FIELDS || fieldNameProblem(k) !== null || lower.has(k.toLowerCase())) continue;
        lower.add(k.toLowerCase());
        s = { kind: null, mixed: false, dates: true };
        seen.set(k, s);
      }
      if (v === null || v === undefined) continue;
      const kind: Seen['kind'] =
        typeof v === 'string'
          ? 'string'
          : typeof v === 'number'
            ? 'number'
            : typeof v === 'boolean'
              ? 'boolean'
              : Array.isArray(v)
                ? 'array'
                : typeof v === 'object'
                  ? 'object'
                  : 'string';
      if (kind === 'string' && s.dates && !isIsoDateTime(v as string)) s.dates = false;
      if (s.kind === null) s.kind = kind;
      else if (s.kind !== kind) s.mixed = true;
    }
  }
  const out: OutputField[] = [];
  for (const [name, s] of seen) {
    let type: OutputFieldType;
    if (s.kind === null) type = 'null';
    else if (s.mixed) type = 'string';
    else if (s.kind === 'object') type = 'string';
    else if (s.kind === 'string') type = s.dates ? 'date' : 'string';
    else type = s.kind;
    out.push({ name, type });
  }
  return out;
}
