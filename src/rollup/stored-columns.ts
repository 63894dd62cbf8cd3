import { COLUMN_FIGURES, type StoredBucket, type StoredColumns } from './rollup-types.js';
import type { RollupReader, RollupReadQuery } from './rollup-reader-contract.js';

/**
 * Empty columns of `length` rows (figures 0 until set). `wanted` (COLUMN_FIGURES' order): the
 * figures not wanted share one array of NaN, never to be written (a 24 h by-minute read of two
 * values would otherwise allocate and zero nine arrays of 14,400 numbers for nothing).
 */
export function allocColumns(
  length: number,
  names: readonly string[],
  sketches: boolean,
  wanted?: readonly boolean[],
): StoredColumns {
  const c = {
    length,
    names,
    si: new Int32Array(length),
    states: sketches ? new Array(length).fill(null) : null,
  } as StoredColumns;
  let none: Float64Array | null = null;
  COLUMN_FIGURES.forEach((f, k) => {
    if (wanted && !wanted[k]) c[f] = none ??= new Float64Array(length).fill(NaN);
    else c[f] = new Float64Array(length);
  });
  return c;
}

/** Rows as columns, same order (a reader without `readColumns`, or rows merged with partials). */
export function columnsOfBuckets(rows: readonly StoredBucket[]): StoredColumns {
  const names = [...new Set(rows.map((r) => r.series))];
  const index = new Map(names.map((n, i) => [n, i]));
  const c = allocColumns(
    rows.length,
    names,
    rows.some((r) => r.state !== null),
  );
  rows.forEach((r, i) => {
    c.si[i] = index.get(r.series)!;
    for (const f of COLUMN_FIGURES) c[f][i] = r[f] ?? NaN;
    if (c.states) c.states[i] = r.state;
  });
  return c;
}

/** One read column-wise, from the reader's own `readColumns` when it has one. */
export async function readColumns(reader: RollupReader, q: RollupReadQuery): Promise<StoredColumns> {
  return reader.readColumns ? reader.readColumns(q) : columnsOfBuckets(await reader.read(q));
}

/** Several reads' columns end to end, in order (series indexes renumbered over every part's names). */
export function concatColumns(parts: readonly StoredColumns[]): StoredColumns {
  if (parts.length === 1) return parts[0]!;
  const names: string[] = [];
  const index = new Map<string, number>();
  const maps = parts.map((p) => p.names.map((n) => index.get(n) ?? (index.set(n, names.length), names.push(n) - 1)));
  const length = parts.reduce((n, p) => n + p.length, 0);
  const c = allocColumns(
    length,
    names,
    parts.some((p) => p.states !== null),
  );
  let at = 0;
  parts.forEach((p, k) => {
    for (const f of COLUMN_FIGURES) c[f].set(p[f], at);
    for (let i = 0; i < p.length; i++) {
      c.si[at + i] = maps[k]![p.si[i]!]!;
      if (c.states) c.states[at + i] = p.states?.[i] ?? null;
    }
    at += p.length;
  });
  return c;
}

/** The series with a row that counts records. */
export function seriesWithRecords(c: StoredColumns): Set<string> {
  const seen = new Uint8Array(c.names.length);
  for (let i = 0; i < c.length; i++) if (c.count[i]! > 0) seen[c.si[i]!] = 1;
  return new Set(c.names.filter((_, s) => seen[s] === 1));
}
