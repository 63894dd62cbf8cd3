/**
 * Record templates: records of one shape, written by one producer, are byte for byte the same
 * apart from their scalar values — `{"event":"…","ts":…,"ctx":{"ip":"…"}}`. A template is that
 * skeleton, learned from a record the slow path (JSON.parse + fingerprint) has already parsed and
 * given a shape key: the literal bytes between values (braces, keys, colons, commas, `null`s,
 * whitespace) and the kind of each value (string, number, boolean).
 *
 * A record that matches a template byte for byte outside its values, with values of the same
 * kinds, parses to an object with the same keys, the same nesting and the same value types as the
 * record the template was learned from, so it has the same shape key under any rules: matching
 * replaces JSON.parse and the fingerprint walk, and allocates nothing. The value byte ranges (and
 * numbers, read as JSON.parse reads them) are left in `values` for the field columns.
 *
 * Values are checked by the JSON grammar as they are read: strings (escapes validated, raw control
 * characters refused), numbers, `true`/`false`; the elements of an array of scalars are values too
 * (its length is part of the skeleton). Anything else (other whitespace, another key order, a key
 * with an escape) fails the match: the slow path.
 *
 * An array holding objects or arrays is one value (K_ARRAY) with a skeleton of its own
 * (`ArraySkeleton`): when its elements share one skeleton, that element skeleton repeated one or
 * more times, so arrays of any length match; else its elements as they are (fixed count). The
 * shape of an array is its type and the union of its elements' entries (fingerprint.ts dedupes
 * them), so one element skeleton read n ≥ 1 times gives the shape it gives once; an empty array
 * (no element entries) stays a literal `[]`. The elements' values are checked, not kept: no column
 * reads a path inside an array; the array's JSON column takes its bytes when they are what
 * JSON.stringify writes (`escaped` 0: no whitespace, no integer-like keys, no string escapes,
 * numbers in the shortest form), else the array is parsed and stringified for it.
 * Anything else inside an array (scalars, then objects or arrays) fails the match.
 *
 * Templates are held in a trie of (literal, value kind) steps, so shapes that start alike share
 * their first steps and a match reads each byte of the record once; the trie (and each array
 * skeleton) is flat in one Int32Array, so a match reads contiguous memory.
 *
 * The parts: what a template and its slots are (records/template-slots.ts), the JSON byte readers
 * (records/json-bytes.ts), the skeleton of a record (template-skeleton.ts), the trie that holds
 * and matches the skeletons (template-trie.ts); this module decides what is learned.
 *
 * docs/schema.md ("Collection files", "Benchmarks") has what it takes and what it saved.
 */

import { isUtf8 } from 'node:buffer';
import {
  K_NUMBER,
  K_STRING,
  MAX_SLOTS,
  pathKey,
  stringValue,
  type SlotValues,
  type Template,
} from '../records/template-slots.js';
import { timestampMs } from '../timestamp.js';
import { costOf, skeletonOf } from './template-skeleton.js';
import { TemplateTrie } from './template-trie.js';

/** Templates learned per stage (collection and rule set); past it records take the slow path. */
const MAX_TEMPLATES = 256;
/** Templates per shape key (whitespace and key-order variants of one shape: producers). */
const MAX_TEMPLATES_PER_KEY = 8;
/** Records larger than this are not learned from. */
const MAX_RECORD_BYTES = 64 * 1024;
/** Records of one shape a template could not be learned from before the shape is given up. */
const MAX_FAILURES_PER_KEY = 8;
/** Shapes whose failures are remembered (past it the count starts over). */
const MAX_FAILED_KEYS = 10_000;
/** Memory all the templates of one processor may hold, estimated (see `costOf`). */
export const TEMPLATE_BUDGET_BYTES = 64 << 20;

const TIMESTAMP = pathKey(['timestamp']);

/** Memory templates may still take (bytes, estimated). */
export interface TemplateBudget {
  bytes: number;
}

/** One stage's templates: `learn` from records the slow path classified, `match` the rest. */
export class RecordTemplates {
  /** Values of the last successful match, by slot. */
  readonly values: SlotValues = {
    starts: new Int32Array(MAX_SLOTS + 1),
    ends: new Int32Array(MAX_SLOTS + 1),
    nums: new Float64Array(MAX_SLOTS + 1),
    escaped: new Uint8Array(MAX_SLOTS + 1),
  };
  private readonly trie = new TemplateTrie(this.values);
  private count = 0;
  private readonly perKey = new Map<number, number>();
  /** Records of a shape a template could not be learned from. */
  private readonly failures = new Map<number, number>();

  /** `budget`: memory left for templates, shared by the stages of one processor. */
  constructor(private readonly budget: TemplateBudget = { bytes: TEMPLATE_BUDGET_BYTES }) {}

  /** Let go of the last body matched in (called when a batch is decoded). */
  release(): void {
    this.trie.release();
  }

  /** Whether a record of shape `key` would be learned (cheap: called for every slow-path record). */
  wants(key: number): boolean {
    return (
      key >= 0 &&
      this.count < MAX_TEMPLATES &&
      (this.perKey.get(key) ?? 0) < MAX_TEMPLATES_PER_KEY &&
      (this.failures.get(key) ?? 0) < MAX_FAILURES_PER_KEY
    );
  }

  /**
   * Learn the template of the record in `b[s, e)`, which the slow path parsed and gave shape `key`
   * (signature `hash`). The body must be valid UTF-8.
   */
  learn(b: Buffer, s: number, e: number, key: number, hash: string): Template | null {
    // Keys are decoded from the bytes: only a valid UTF-8 record (as the matcher is only offered).
    // A large record is skipped, not held against its shape (the next one may be small).
    if (!this.wants(key) || e - s > MAX_RECORD_BYTES || !isUtf8(b.subarray(s, e))) return null;
    const sk = skeletonOf(b, s, e);
    if (sk === null) {
      // One odd record (an escaped key, an array of objects) need not stop its shape from being
      // learned; a shape that keeps failing is given up.
      if (this.failures.size >= MAX_FAILED_KEYS) this.failures.clear();
      this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
      return null;
    }
    const cost = costOf(sk);
    if (cost > this.budget.bytes) return null;
    this.budget.bytes -= cost;
    const kinds = Uint8Array.from(sk.kinds.slice(0, -1));
    const template: Template = {
      key,
      hash,
      kinds,
      paths: sk.paths,
      nulls: sk.nulls,
      objects: sk.objects,
      arrays: sk.arrays,
      nestedArrays: sk.nestedArrays,
      emptyObjects: sk.emptyObjects,
      timestampSlot: sk.paths.indexOf(TIMESTAMP),
      plans: new Map(),
    };
    const added = this.trie.add(sk, template);
    if (added !== template) {
      // The same skeleton again: its template was learned already.
      this.budget.bytes += cost;
      return added;
    }
    this.count++;
    this.perKey.set(key, (this.perKey.get(key) ?? 0) + 1);
    return template;
  }

  /**
   * The template the record in `b[s, e)` matches, its values in `values`; null when none does. The
   * body must be valid UTF-8 (strings are kept as bytes).
   */
  match(b: Uint8Array, s: number, e: number): Template | null {
    return this.trie.match(b, s, e);
  }
}

/**
 * Event time of a record matched by `t` (values in `v`, bytes in `b`): its top-level `timestamp`
 * read as decode.ts `eventTime` reads it, else `fallback`.
 */
export function matchedEventTime(t: Template, v: SlotValues, b: Buffer, fallback: number): number {
  const slot = t.timestampSlot;
  if (slot < 0) return fallback;
  const kind = t.kinds[slot];
  const ms =
    kind === K_NUMBER ? timestampMs(v.nums[slot]!) : kind === K_STRING ? timestampMs(stringValue(v, b, slot)) : NaN;
  return Number.isNaN(ms) ? fallback : ms;
}
