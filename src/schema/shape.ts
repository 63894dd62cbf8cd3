/**
 * The typed shape of a record: a set of (path, type) entries. A path is a list of segments, each an
 * object key or `null` for "an element of this array". The canonical signature and the 64-bit
 * signature hash are both functions of the entry set alone, so key order never matters.
 * Format documented in docs/schema.md.
 */

/** Type tags in entry hashes; their order is part of the stored hash, never reorder. */
export const TYPE_NAMES = ['string', 'number', 'boolean', 'null', 'object', 'array'] as const;
export type TypeName = (typeof TYPE_NAMES)[number];
export const T_STRING = 0;
export const T_NUMBER = 1;
export const T_BOOLEAN = 2;
export const T_NULL = 3;
export const T_OBJECT = 4;
export const T_ARRAY = 5;

/** One path segment: an object key, or null for the elements of an array. */
export type Segment = string | null;

/** One (path, type) pair of a shape. */
export interface ShapeEntry {
  /** Rendered path, e.g. `user.id`, `items[].sku`, `["a.b"]`. */
  path: string;
  segments: Segment[];
  type: TypeName;
}

/** A fully described shape: what a version or an unclassified shape is stored with. */
export interface Shape {
  /** 16 hex digits: the signature hash (see docs/schema.md). */
  hash: string;
  /** Canonical signature: entries sorted, `path:type` joined by `,`. */
  signature: string;
  entries: ShapeEntry[];
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Render segments as a JS-like path: identifiers dotted, other keys bracketed JSON strings, arrays `[]`. */
export function renderPath(segments: readonly Segment[]): string {
  let out = '';
  for (const seg of segments) {
    if (seg === null) out += '[]';
    else if (IDENT.test(seg)) out += out === '' ? seg : '.' + seg;
    else out += '[' + JSON.stringify(seg) + ']';
  }
  return out;
}

/** Compare entries for the canonical order: by rendered path, then by type name (code-unit order). */
export function compareEntries(x: ShapeEntry, y: ShapeEntry): number {
  if (x.path !== y.path) return x.path < y.path ? -1 : 1;
  return x.type < y.type ? -1 : x.type > y.type ? 1 : 0;
}

/** The canonical signature string of a set of entries (sorted copy; input untouched). */
export function signatureOf(entries: readonly ShapeEntry[]): string {
  return [...entries]
    .sort(compareEntries)
    .map((e) => `${e.path}:${e.type}`)
    .join(',');
}

/** Key identifying an entry within a shape, for set operations. */
export function entryKey(e: { path: string; type: string }): string {
  return e.path + '\u0001' + e.type;
}
