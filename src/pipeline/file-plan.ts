import type { Assignment } from '../schema/book.js';
import type { FileKind } from '../schema/schema-store.js';
import { parseRenderedPath } from '../schema/rekey.js';
import { renderPath } from '../schema/shape.js';
import type { VersionField } from '../schema/versions.js';

export type { FileKind };

/**
 * A typed column for one field of a version. Scalar leaves (nested objects flattened to their
 * dotted paths) get `number` (float64), `string` (utf8) or `boolean` columns; arrays, objects the
 * walk did not enter (opaque paths, max depth, `{}`) and fields seen with several types get a
 * `json` column holding the value's JSON text. Paths inside arrays stay in the array's column.
 */
export interface FieldColumn {
  name: string;
  segments: string[];
  type: 'string' | 'number' | 'boolean' | 'json';
}

export interface FileSpec {
  kind: FileKind;
  /** Directory under the collection: the version id, `_mixed`, `_unclassified/<hash>` or `_overflow`. */
  dir: string;
  versionId: string | null;
  shapeHash: string | null;
  /** Shape keys whose rows go in this file (negative keys: refused rows). */
  keys: number[];
  rows: number;
  columns: FieldColumn[];
}

/** Most typed field columns per file (the document column always holds everything). */
export const MAX_FIELD_COLUMNS = 256;

const RESERVED_PREFIX = '_sluice_';
/** A key longer than this was truncated in its path (fingerprint.ts MAX_KEY_CHARS): no column reads it. */
const MAX_KEY_CHARS = 256;

/**
 * The typed columns of a version (or an unclassified shape) from its fields: one per scalar leaf,
 * one JSON column per array, unentered object or multi-typed field; none for paths inside arrays,
 * reserved names (`_sluice_…`) or truncated keys. `enabled` false: none (documents only).
 */
export function fieldColumns(fields: readonly Pick<VersionField, 'path' | 'type'>[], enabled = true): FieldColumn[] {
  const out: FieldColumn[] = [];
  if (!enabled) return out;
  // An object whose children are fields is represented by them.
  const parents = new Set<string>();
  for (const f of fields) {
    const segs = parseRenderedPath(f.path);
    if (segs.length > 1) parents.add(renderPath(segs.slice(0, -1)));
  }
  const seen = new Set<string>();
  for (const f of fields) {
    if (out.length >= MAX_FIELD_COLUMNS) break;
    if (f.path.startsWith(RESERVED_PREFIX) || seen.has(f.path)) continue;
    seen.add(f.path);
    const types = f.type.split('|').filter((t) => t !== 'null');
    if (types.length === 0) continue;
    let type: FieldColumn['type'];
    if (types.length > 1) type = 'json';
    else if (types[0] === 'string' || types[0] === 'number' || types[0] === 'boolean') type = types[0];
    else if (types[0] === 'object' && parents.has(f.path)) continue;
    else type = 'json';
    const segments = parseRenderedPath(f.path);
    if (segments.some((s) => s === null || s.length > MAX_KEY_CHARS)) continue;
    out.push({ name: f.path, segments: segments as string[], type });
  }
  return out;
}

/**
 * Plan the files of a batch. `groupRows` gives rows per shape key (refused keys negative),
 * `assign` the resolution of each non-negative key, `fieldsOf` the fields of a version or shape.
 */
export function planFiles(args: {
  groupRows: ReadonlyMap<number, number>;
  assign: ReadonlyMap<number, Assignment>;
  writerLimit: number;
  versionFields: (versionId: string) => readonly Pick<VersionField, 'path' | 'type'>[];
  shapeFields: (shapeHash: string) => readonly Pick<VersionField, 'path' | 'type'>[];
  /** Typed field columns beside the documents (default true; false: documents only, for benchmarks). */
  typedColumns?: boolean;
}): FileSpec[] {
  const typed = args.typedColumns ?? true;
  const limit = Math.max(1, args.writerLimit);
  const byVersion = new Map<string, { keys: number[]; rows: number }>();
  const unclassified: Array<{ key: number; hash: string; rows: number }> = [];
  const overflowKeys: number[] = [];
  let overflowRows = 0;
  for (const [key, rows] of args.groupRows) {
    const a = key >= 0 ? args.assign.get(key) : undefined;
    if (!a) {
      overflowKeys.push(key);
      overflowRows += rows;
    } else if (a.versionId) {
      const v = byVersion.get(a.versionId);
      if (v) {
        v.keys.push(key);
        v.rows += rows;
      } else byVersion.set(a.versionId, { keys: [key], rows });
    } else unclassified.push({ key, hash: a.shapeHash, rows });
  }
  const files: FileSpec[] = [];
  const versions = [...byVersion].sort((x, y) => y[1].rows - x[1].rows || (x[0] < y[0] ? -1 : 1));
  const own = versions.length <= limit ? versions.length : limit - 1;
  for (const [id, v] of versions.slice(0, own)) {
    files.push({
      kind: 'version',
      dir: id,
      versionId: id,
      shapeHash: null,
      keys: v.keys,
      rows: v.rows,
      columns: fieldColumns(args.versionFields(id), typed),
    });
  }
  const rest = versions.slice(own);
  if (rest.length > 0) {
    files.push({
      kind: 'mixed',
      dir: '_mixed',
      versionId: null,
      shapeHash: null,
      keys: rest.flatMap(([, v]) => v.keys),
      rows: rest.reduce((n, [, v]) => n + v.rows, 0),
      columns: [],
    });
  }
  unclassified.sort((x, y) => y.rows - x.rows || x.key - y.key);
  for (const u of unclassified.slice(0, limit)) {
    files.push({
      kind: 'unclassified',
      dir: `_unclassified/${u.hash}`,
      versionId: null,
      shapeHash: u.hash,
      keys: [u.key],
      rows: u.rows,
      columns: fieldColumns(args.shapeFields(u.hash), typed),
    });
  }
  for (const u of unclassified.slice(limit)) {
    overflowKeys.push(u.key);
    overflowRows += u.rows;
  }
  if (overflowKeys.length > 0)
    files.push({
      kind: 'overflow',
      dir: '_overflow',
      versionId: null,
      shapeHash: null,
      keys: overflowKeys,
      rows: overflowRows,
      columns: [],
    });
  return files;
}
