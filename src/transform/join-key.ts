import { createHash } from 'node:crypto';
import type { OutputFieldType } from './output-schema.js';

/**
 * Join keys (docs/views.md, "Join views"): a key compares by its stored value and its field's
 * type, so a `string` key never matches a `number` key, and null never matches. Long keys are
 * hashed to fit an LMDB key.
 */

/** Longest key text kept as is; longer ones are stored as their SHA-256. */
const MAX_KEY_CHARS = 400;

/** The index key of a stored value of a field of `type`, or null when it matches nothing. */
export function joinKey(value: unknown, type: OutputFieldType): string | null {
  if (value === null || value === undefined || type === 'null') return null;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === undefined) return null;
  const key = `${type}:${text}`;
  return key.length <= MAX_KEY_CHARS ? key : `${type}#${createHash('sha256').update(text).digest('hex')}`;
}

/** Where a lookup row sits: the latest by event time wins; ties by sequence, row, then file. */
export interface RowPlace {
  ts: number;
  seq: number;
  row: number;
  file: string;
}

/** Whether `a` is later than `b` in the order `latest` matching uses. */
export function isLater(a: RowPlace, b: RowPlace): boolean {
  if (a.ts !== b.ts) return a.ts > b.ts;
  if (a.seq !== b.seq) return a.seq > b.seq;
  if (a.row !== b.row) return a.row > b.row;
  return a.file > b.file;
}
