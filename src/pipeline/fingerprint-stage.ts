import { Fingerprinter, REFUSED_NOT_OBJECT } from '../schema/fingerprint.js';
import { hashHex } from '../schema/hash.js';
import { rulesKey, type FingerprintRules } from '../schema/rules.js';
import type { Shape } from '../schema/shape.js';
import type { Sighting } from '../schema/book.js';
import { recordOf, type DecodedRows } from '../records/decode.js';

/** Rows grouped by exact shape; refused rows keep their negative refusal code as key. */
export interface FingerprintedRows {
  /** Shape key per row (negative: refused, see fingerprint.ts). */
  keys: Float64Array;
  groups: Map<number, ShapeGroup>;
}

export interface ShapeGroup {
  key: number;
  hash: string;
  rows: number;
  firstMs: number;
  lastMs: number;
  /** First row of the group (its record describes the shape; its bytes are the sample). */
  firstRow: number;
}

/** A record that failed to parse (cannot happen after the front's validation, but is kept). */
export const REFUSED_UNPARSABLE = -3;

/** Largest sample record kept with a new shape, bytes. */
export const MAX_SAMPLE_BYTES = 64 * 1024;

/**
 * `createFingerprintStage(rules)`: `begin(rows)` takes every row's shape key under the collection's
 * rules as the batch is decoded, grouped by shape. The fingerprinter (and its path cache) lives as
 * long as the stage, so a worker keeps one per collection and rule set.
 */
export function createFingerprintStage(rules: FingerprintRules) {
  const fp = new Fingerprinter(rules);
  const key = rulesKey(rules);
  /** A batch's fingerprints, row by row as records are decoded (`add`), then `result`. */
  function begin(rowCount: number) {
    const keys = new Float64Array(rowCount);
    const groups = new Map<number, ShapeGroup>();
    return {
      /** Shape key of `record` (row `row`, received at `received`), counted in its group. */
      add(row: number, record: unknown, received: number): number {
        const k = record === undefined ? REFUSED_UNPARSABLE : fp.fingerprint(record);
        count(row, k, null, received);
        return k;
      },
      /** Count row `row` of a shape already known (key `k`, signature hash `hash`): a matched template. */
      addKnown(row: number, k: number, hash: string, received: number): void {
        count(row, k, hash, received);
      },
      /** Signature hash of the last record `add` fingerprinted. */
      lastHash: (): string => hashHex(fp.last.a, fp.last.b),
      result: (): FingerprintedRows => ({ keys, groups }),
    };
    function count(row: number, k: number, hash: string | null, received: number): void {
      keys[row] = k;
      const g = groups.get(k);
      if (g) {
        g.rows++;
        if (received < g.firstMs) g.firstMs = received;
        if (received > g.lastMs) g.lastMs = received;
      } else {
        groups.set(k, {
          key: k,
          hash: k < 0 ? '' : (hash ?? hashHex(fp.last.a, fp.last.b)),
          rows: 1,
          firstMs: received,
          lastMs: received,
          firstRow: row,
        });
      }
    }
  }
  /** Full description of a group's shape, with its first record as the sample. */
  function describeGroup(rows: DecodedRows, g: ShapeGroup): { shape: Shape; sample: string | null } {
    const out = fp.describe(recordOf(rows, g.firstRow));
    if (typeof out === 'number') throw new Error(`group ${g.key} cannot be described (refusal ${out})`);
    const e = rows.entries[rows.entry[g.firstRow]!]!;
    const s = rows.start[g.firstRow]!;
    const end = rows.end[g.firstRow]!;
    const sample =
      end - s <= MAX_SAMPLE_BYTES
        ? Buffer.from(e.body.buffer, e.body.byteOffset, e.body.byteLength).toString('utf8', s, end)
        : null;
    return { shape: out, sample };
  }
  /** Sightings of the classifiable groups (refused rows have no shape to sight). */
  function sightings(fr: FingerprintedRows): Sighting[] {
    const out: Sighting[] = [];
    for (const g of fr.groups.values())
      if (g.key >= 0) out.push({ key: g.key, hash: g.hash, rows: g.rows, firstMs: g.firstMs, lastMs: g.lastMs });
    return out;
  }
  return { begin, describeGroup, sightings, rulesKey: key };
}

export type FingerprintStage = ReturnType<typeof createFingerprintStage>;

/** Human reason for a refused row's key. */
export function refusedReason(key: number): string {
  if (key === REFUSED_NOT_OBJECT) return 'refused:not_an_object';
  if (key === REFUSED_UNPARSABLE) return 'refused:unparsable';
  return 'refused:too_many_fields';
}
