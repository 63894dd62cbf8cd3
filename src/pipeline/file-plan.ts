import type { Assignment } from '../schema/book.js';
import { parseRenderedPath } from '../schema/rekey.js';
import type { VersionField } from '../schema/versions.js';

/**
 * Which collection files one batch writes (spec: schema_writer_limit). Versions get one file each,
 * most rows first, up to the limit (past it, the smaller versions share one `mixed` file whose rows
 * carry their version id). Unclassified shapes get the same number of files, most rows first; rows
 * of the shapes past that budget, and refused rows, go to one `overflow` file and cannot later be
 * linked to a version.
 */

export type FileKind = 'version' | 'mixed' | 'unclassified' | 'overflow';

/** A typed column for one scalar field (paths inside arrays stay in the document only). */
export interface FieldColumn {
  name: string;
  segments: string[];
  type: 'string' | 'number' | 'boolean';
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

/**
 * Whether version files carry typed columns for scalar fields beside the documents. Off: measured
 * on 2 cores, ten typed columns cost ~4.7 µs per row (string encoding and their Parquet pages),
 * more than parsing and fingerprinting together, which puts spool → Parquet under its target.
 * DuckDB reads fields from `_sluice_doc` with json_extract meanwhile.
 */
export const FIELD_COLUMNS_ENABLED = false;
const RESERVED_PREFIX = '_sluice_';

/** Typed columns for fields: scalar, outside arrays, one type (null allowed), not a reserved name. */
export function fieldColumns(fields: readonly Pick<VersionField, 'path' | 'type'>[], enabled = FIELD_COLUMNS_ENABLED): FieldColumn[] {
  const out: FieldColumn[] = [];
  if (!enabled) return out;
  for (const f of fields) {
    if (out.length >= MAX_FIELD_COLUMNS) break;
    if (f.path.includes('[]') || f.path.startsWith(RESERVED_PREFIX)) continue;
    const types = f.type.split('|').filter((t) => t !== 'null');
    if (types.length !== 1) continue;
    const t = types[0];
    if (t !== 'string' && t !== 'number' && t !== 'boolean') continue;
    const segments = parseRenderedPath(f.path);
    if (segments.some((s) => s === null)) continue;
    out.push({ name: f.path, segments: segments as string[], type: t });
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
}): FileSpec[] {
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
    files.push({ kind: 'version', dir: id, versionId: id, shapeHash: null, keys: v.keys, rows: v.rows, columns: fieldColumns(args.versionFields(id)) });
  }
  const rest = versions.slice(own);
  if (rest.length > 0) {
    files.push({ kind: 'mixed', dir: '_mixed', versionId: null, shapeHash: null, keys: rest.flatMap(([, v]) => v.keys), rows: rest.reduce((n, [, v]) => n + v.rows, 0), columns: [] });
  }
  unclassified.sort((x, y) => y.rows - x.rows || x.key - y.key);
  for (const u of unclassified.slice(0, limit)) {
    files.push({ kind: 'unclassified', dir: `_unclassified/${u.hash}`, versionId: null, shapeHash: u.hash, keys: [u.key], rows: u.rows, columns: fieldColumns(args.shapeFields(u.hash)) });
  }
  for (const u of unclassified.slice(limit)) {
    overflowKeys.push(u.key);
    overflowRows += u.rows;
  }
  if (overflowKeys.length > 0) files.push({ kind: 'overflow', dir: '_overflow', versionId: null, shapeHash: null, keys: overflowKeys, rows: overflowRows, columns: [] });
  return files;
}
