import { recordReads, type ReadTree } from './script-reads.js';

/**
 * A record's JSON bytes cut down to what its view script reads (script-reads.ts), written where
 * the sandbox input is joined (view-stage.ts): the keys the script reads, in the order sent, each
 * value as sent, objects the script reads into projected in turn, and an object or array that is
 * only tested as `{}` or `[]`. Arrays the script reads into are given whole. The bytes are the
 * record's own (no value is parsed or re-serialised), so the isolate parses the same values.
 *
 * The record was checked as JSON when it was ingested; anything unexpected here all the same (and
 * a key the script reads sent twice, where JSON.parse keeps the last) gives the record whole.
 */
export interface Projection {
  whole: boolean;
  keys: KeyRead[];
}

interface KeyRead {
  name: string;
  /** The key's UTF-8 bytes (compared with keys sent without escapes). */
  bytes: Uint8Array;
  child: Projection;
}

const ENCODER = new TextEncoder();

function compile(tree: ReadTree): Projection {
  return {
    whole: tree.whole,
    keys: [...tree.keys].map(([name, child]) => ({ name, bytes: ENCODER.encode(name), child: compile(child) })),
  };
}

/** Scripts' projections by script hash (null: the whole record); bounded, cleared when full. */
const cache = new Map<string, Projection | null>();
const CACHE_MAX = 256;

/** The projection of records given to `script` (null: give them whole). */
export function projectionOf(scriptHash: string, script: string): Projection | null {
  let p = cache.get(scriptHash);
  if (p === undefined) {
    if (cache.size >= CACHE_MAX) cache.clear();
    let tree: ReadTree | null;
    try {
      tree = recordReads(script);
    } catch {
      // Anything the analysis did not expect (a script nested past the stack, say): whole records.
      tree = null;
    }
    p = tree === null ? null : compile(tree);
    cache.set(scriptHash, p);
  }
  return p;
}

/** Thrown when the bytes are not as expected (or a read key repeats): the record goes whole. */
const GIVE_WHOLE = new Error('record-projection: give the record whole');

// The output and its write position, for the duration of one projectRecord call.
let out: Uint8Array = new Uint8Array(0);
let dst = 0;
// Set by skipString: the string just skipped holds a backslash.
let escaped = false;

/**
 * Writes the record at `src[start, end)` projected by `p` into `into` at `at` and returns where it
 * ends. Never longer than the record (`{}`, `[]` and the separators replace at least as many bytes).
 */
export function projectRecord(
  src: Uint8Array,
  start: number,
  end: number,
  p: Projection,
  into: Uint8Array,
  at: number,
): number {
  out = into;
  dst = at;
  try {
    let i = space(src, start);
    if (src[i] !== 0x7b) throw GIVE_WHOLE;
    // Only white space may follow up to `end` (the next line follows it).
    i = projectValue(src, i, p);
    while (i < end && (src[i] === 0x20 || src[i] === 0x0a || src[i] === 0x0d || src[i] === 0x09)) i++;
    if (i !== end) throw GIVE_WHOLE;
    return dst;
  } catch {
    // GIVE_WHOLE, or anything else these bytes led to: the record as sent is always right.
    into.set(src.subarray(start, end), at);
    return at + end - start;
  } finally {
    out = EMPTY;
  }
}

const EMPTY = new Uint8Array(0);

function space(s: Uint8Array, i: number): number {
  for (;;) {
    const b = s[i];
    if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return i;
    i++;
  }
}

function copy(s: Uint8Array, from: number, to: number): void {
  dst = copyBytes(s, from, to, out, dst);
}

/** Copies `src[from, to)` to `into` at `at` (short runs byte by byte: no subarray, no native call); where it ends. */
export function copyBytes(src: Uint8Array, from: number, to: number, into: Uint8Array, at: number): number {
  if (to - from > 32) into.set(src.subarray(from, to), at);
  else for (let k = from; k < to; k++) into[at + k - from] = src[k]!;
  return at + to - from;
}

/** Index after the string whose opening quote is at `i`. */
function skipString(s: Uint8Array, i: number): number {
  escaped = false;
  for (i++; ; ) {
    const b = s[i++];
    if (b === 0x22) return i;
    if (b === 0x5c) {
      escaped = true;
      i++;
    } else if (b === undefined) throw GIVE_WHOLE;
  }
}

/** Index after the value starting at `i`. */
function skipValue(s: Uint8Array, i: number): number {
  const c = s[i];
  if (c === 0x22) return skipString(s, i);
  if (c === 0x7b || c === 0x5b) {
    for (let depth = 0; ; ) {
      const b = s[i++];
      if (b === 0x22) i = skipString(s, i - 1);
      else if (b === 0x7b || b === 0x5b) depth++;
      else if (b === 0x7d || b === 0x5d) {
        if (--depth === 0) return i;
      } else if (b === undefined) throw GIVE_WHOLE;
    }
  }
  // A number, true, false or null: up to the next delimiter.
  for (;;) {
    const b = s[i];
    if (
      b === 0x2c ||
      b === 0x7d ||
      b === 0x5d ||
      b === 0x20 ||
      b === 0x0a ||
      b === 0x0d ||
      b === 0x09 ||
      b === undefined
    )
      return i;
    i++;
  }
}

/** Writes the value at `i` as `p` reads it; index after the value. */
function projectValue(s: Uint8Array, i: number, p: Projection): number {
  const c = s[i];
  if (p.whole || (c !== 0x7b && c !== 0x5b)) {
    const e = skipValue(s, i);
    copy(s, i, e);
    return e;
  }
  if (p.keys.length === 0 || c === 0x5b) {
    const e = skipValue(s, i);
    if (p.keys.length === 0) {
      // Only tested: an empty one of the same kind.
      out[dst++] = c;
      out[dst++] = c + 2; // '{' → '}', '[' → ']'
    } else copy(s, i, e);
    return e;
  }
  return projectObject(s, i, p.keys);
}

/** Writes the object at `i` with only the `keys` read; index after it. */
function projectObject(s: Uint8Array, i: number, keys: KeyRead[]): number {
  out[dst++] = 0x7b;
  let wrote = false;
  // Keys written so far (bit k: keys[k]); a read key sent twice gives the record whole.
  let seen = 0;
  const many = keys.length > 30 ? new Uint8Array(keys.length) : null;
  i = space(s, i + 1);
  if (s[i] === 0x7d) {
    out[dst++] = 0x7d;
    return i + 1;
  }
  for (;;) {
    if (s[i] !== 0x22) throw GIVE_WHOLE;
    const ks = i;
    const ke = skipString(s, i);
    const k = matchKey(s, ks, ke, keys);
    i = space(s, ke);
    if (s[i] !== 0x3a) throw GIVE_WHOLE;
    i = space(s, i + 1);
    if (k < 0) i = skipValue(s, i);
    else {
      if (many !== null) {
        if (many[k] === 1) throw GIVE_WHOLE;
        many[k] = 1;
      } else {
        if ((seen & (1 << k)) !== 0) throw GIVE_WHOLE;
        seen |= 1 << k;
      }
      if (wrote) out[dst++] = 0x2c;
      wrote = true;
      copy(s, ks, ke);
      out[dst++] = 0x3a;
      i = projectValue(s, i, keys[k]!.child);
    }
    i = space(s, i);
    const b = s[i];
    if (b === 0x7d) {
      out[dst++] = 0x7d;
      return i + 1;
    }
    if (b !== 0x2c) throw GIVE_WHOLE;
    i = space(s, i + 1);
  }
}

/** Index in `keys` of the quoted key at `s[ks, ke)` (skipString has just run over it), or -1. */
function matchKey(s: Uint8Array, ks: number, ke: number, keys: KeyRead[]): number {
  if (escaped) {
    const name = JSON.parse(Buffer.from(s.buffer, s.byteOffset + ks, ke - ks).toString('utf8')) as string;
    return keys.findIndex((k) => k.name === name);
  }
  const len = ke - ks - 2;
  next: for (let k = 0; k < keys.length; k++) {
    const b = keys[k]!.bytes;
    if (b.length !== len) continue;
    for (let j = 0; j < len; j++) if (b[j] !== s[ks + 1 + j]) continue next;
    return k;
  }
  return -1;
}
