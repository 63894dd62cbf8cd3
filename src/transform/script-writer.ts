import { createHash } from 'node:crypto';
import type { Segment } from '../schema/shape.js';
import type { OutputFieldType } from './mapping-types.js';

/**
 * Writes a generated mapping as plain JavaScript a user can read and paste into manual mode:
 * `function transform(record, ctx)` returning one property per output field, plus the few small
 * helpers it uses. Output is a pure function of the input (byte-identical for equal input).
 */

/** One output field of the script: the paths it reads in order (`a ?? b`) and why. */
export interface ScriptField {
  name: string;
  type: OutputFieldType;
  /** Segment lists (null: each array element); empty: the field is always null. */
  paths: Segment[][];
  /** One line saying where the value comes from (becomes a comment). */
  note: string;
}

export interface ScriptSpec {
  versionId: string;
  versionNumber: number;
  fields: ScriptField[];
}

/** Equal hashes run identical scripts: sha256 of the script text, first 16 hex digits. */
export function scriptHash(script: string): string {
  return createHash('sha256').update(script, 'utf8').digest('hex').slice(0, 16);
}

// Helpers in the order they are written; each is emitted only when used.
const HELPERS: ReadonlyArray<[name: string, source: string]> = [
  [
    'get',
    `// The value at a list of keys, or null when a key is missing or a parent is not an object.
// Own keys only, so a missing "constructor" never reads Object's.
function get(value, keys) {
  for (const key of keys) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.prototype.hasOwnProperty.call(value, key)) return null;
    value = value[key];
  }
  return value === undefined ? null : value;
}`,
  ],
  [
    'each',
    `// One value per element of an array (null when it is not an array).
function each(list, read) {
  return Array.isArray(list) ? list.map(read) : null;
}`,
  ],
  [
    'str',
    `// A string output: strings as they are, numbers and booleans as text, anything else null.
function str(v) {
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : null;
}`,
  ],
  [
    'num',
    `function num(v) {
  return typeof v === 'number' ? v : null;
}`,
  ],
  [
    'bool',
    `function bool(v) {
  return typeof v === 'boolean' ? v : null;
}`,
  ],
  [
    'date',
    `// A date output: an ISO 8601 string or epoch milliseconds, passed on as it is.
function date(v) {
  return typeof v === 'string' || typeof v === 'number' ? v : null;
}`,
  ],
  [
    'list',
    `function list(v) {
  return Array.isArray(v) ? v : null;
}`,
  ],
];

/**
 * The `get` helper's declaration as written (without its comment): script-reads.ts knows what a
 * call of exactly this function reads, so generated scripts get records cut down too.
 */
export const GET_HELPER_DECLARATION = HELPERS[0]![1].slice(HELPERS[0]![1].indexOf('function get('));

const WRAP: Record<Exclude<OutputFieldType, 'null'>, string> = {
  string: 'str',
  number: 'num',
  boolean: 'bool',
  date: 'date',
  array: 'list',
};

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** JSON string text, with the two line separators escaped too (so a string is always one line). */
function jsString(s: string): string {
  return JSON.stringify(s)
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** Text safe inside a `//` comment: line breaks and control characters escaped. */
export function commentText(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function propertyKey(name: string): string {
  // `__proto__: v` in a literal sets the prototype; a computed key makes an own property.
  if (name === '__proto__') return '["__proto__"]';
  return IDENT.test(name) ? name : jsString(name);
}

function keysArg(keys: readonly string[]): string {
  return '[' + keys.map(jsString).join(', ') + ']';
}

/** The expression reading `segments` from `base`; element markers become `each(…)`. */
function readExpr(base: string, segments: readonly Segment[], depth: number, used: Set<string>): string {
  // A trailing element marker reads the array itself.
  let end = segments.length;
  while (end > 0 && segments[end - 1] === null) end--;
  const at = segments.indexOf(null);
  if (at < 0 || at >= end) {
    const keys = segments.slice(0, end) as string[];
    if (keys.length === 0) return base;
    used.add('get');
    return `get(${base}, ${keysArg(keys)})`;
  }
  const head = readExpr(base, segments.slice(0, at), depth, used);
  const item = depth === 0 ? 'item' : `item${depth + 1}`;
  used.add('each');
  return `each(${head}, (${item}) => ${readExpr(item, segments.slice(at + 1, end), depth + 1, used)})`;
}

function fieldExpr(f: ScriptField, used: Set<string>): string {
  if (f.type === 'null' || f.paths.length === 0) return 'null';
  const wrap = WRAP[f.type];
  return f.paths
    .map((p) => {
      const read = readExpr('record', p, 0, used);
      // each(…) already yields an array or null.
      if (wrap === 'list' && read.startsWith('each(')) return read;
      used.add(wrap);
      return `${wrap}(${read})`;
    })
    .join(' ?? ');
}

/** The script text for `spec`. */
export function writeTransformScript(spec: ScriptSpec): string {
  const used = new Set<string>();
  const lines: string[] = [
    `// Generated by Sluice auto mapping for schema version ${spec.versionNumber} (${commentText(spec.versionId)}).`,
    '// Plain JavaScript: copy it into manual mode to change it. Each field says which paths it reads',
    '// and how they were chosen; a path missing from a record reads as null.',
    'function transform(record, ctx) {',
    '  return {',
  ];
  for (const f of spec.fields) {
    lines.push(`    // ${commentText(f.name)} (${f.type}): ${commentText(f.note)}`);
    lines.push(`    ${propertyKey(f.name)}: ${fieldExpr(f, used)},`);
  }
  lines.push('  };', '}');
  for (const [name, source] of HELPERS) if (used.has(name)) lines.push('', source);
  return lines.join('\n') + '\n';
}
