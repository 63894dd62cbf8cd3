/**
 * What a record template is and what a match of it leaves: the kinds of its value slots, the
 * `Template` (its slots' paths, what else its records hold), the `SlotValues` of the last match and
 * how to read a string slot. The template code (pipeline/record-templates.ts) makes them; the field
 * columns (pipeline/template-fields.ts) and the transforms (transform/record-slots.ts) read them.
 */

/** Kind of the value after a literal; END: the literal runs to the end of the record. */
export const K_END = 0;
export const K_STRING = 1;
export const K_NUMBER = 2;
export const K_BOOLEAN = 3;
/** An array holding objects or arrays, read by its own skeleton (`Template.nestedArrays`). */
export const K_ARRAY = 4;
/** Entries (values, nulls, objects, arrays) of one template at most: its slots fit `SlotValues` of this size + 1. */
export const MAX_SLOTS = 1024;

/** A learned record skeleton. */
export interface Template {
  /** Shape key and signature hash of every record it matches. */
  readonly key: number;
  readonly hash: string;
  /** Value kind per slot (K_STRING, K_NUMBER, K_BOOLEAN, K_ARRAY). */
  readonly kinds: Uint8Array;
  /** Path of each slot (`pathKey`: its segments as JSON, null for an array's elements). */
  readonly paths: readonly string[];
  /** Paths holding a `null` literal, and paths holding an object. */
  readonly nulls: ReadonlySet<string>;
  readonly objects: ReadonlySet<string>;
  /** Paths holding an array (of scalars): each element's slot in order, -1 for a `null`. */
  readonly arrays: ReadonlyMap<string, readonly number[]>;
  /**
   * Paths holding an array of objects or arrays: a K_ARRAY slot (its value range is the array's
   * text), read by this skeleton. Nothing inside it is in `paths`, `nulls`, `objects` or `arrays`.
   */
  readonly nestedArrays: ReadonlyMap<string, ArraySkeleton>;
  /** Paths (of `objects`) holding an empty object `{}`. */
  readonly emptyObjects: ReadonlySet<string>;
  /** Slot of the top-level `timestamp` value, or -1. */
  readonly timestampSlot: number;
  /** Per-use caches (template-fields.ts keeps its column plans here). */
  readonly plans: Map<string, unknown>;
}

/** Values of the last successful match, by slot. */
export interface SlotValues {
  /** Byte range of a string's contents (without quotes), a number's, a boolean's or an array's text. */
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  /** A number's value; 1 or 0 for a boolean. */
  readonly nums: Float64Array;
  /**
   * 1 for a string with escapes (read it with `stringValue`), else 0. For a K_ARRAY slot: 1 when
   * its bytes are not JSON.stringify's text of the array, else 0.
   */
  readonly escaped: Uint8Array;
}

/** The value of string slot `slot` of the last match. */
export function stringValue(v: SlotValues, b: Buffer, slot: number): string {
  // Escapes are rare: JSON.parse reads the quoted text exactly as it reads the whole record.
  return v.escaped[slot] === 1
    ? (JSON.parse(b.toString('utf8', v.starts[slot]! - 1, v.ends[slot]! + 1)) as string)
    : b.toString('utf8', v.starts[slot]!, v.ends[slot]!);
}

/** A linear skeleton (an array's element, or a whole array): literals and value kinds, K_END last. */
export interface Seq {
  readonly lits: readonly Uint8Array[];
  readonly kinds: Uint8Array;
  /** K_ARRAY entries: the inner array's skeleton. */
  readonly subs: ReadonlyArray<ArraySkeleton | null>;
  /** What the match reads: per entry its kind, literal length, index in `subs`, the literal's words. */
  readonly code: Int32Array;
}

/** The skeleton of an array holding objects or arrays (a K_ARRAY value). */
export interface ArraySkeleton {
  /**
   * Repeated (`sep` not null): `open` (`[` and any whitespace), then `element` once or more,
   * separated by `sep`, then `close` (`]`). Fixed (`sep` null): `element` is the whole array, read
   * once; `open` and `close` are empty.
   */
  readonly open: Uint8Array;
  readonly element: Seq;
  readonly sep: Uint8Array | null;
  readonly close: Uint8Array;
  /** Whether its literals are JSON.stringify's (no whitespace, no integer-like keys). */
  readonly compact: boolean;
  /** Identity of the skeleton (equal skeletons, equal ids). */
  readonly id: string;
}

/** A path as one string, one to one (a key may hold any character, NUL included). */
export const pathKey = (segments: readonly (string | null)[]) => JSON.stringify(segments);
