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
 * docs/schema.md ("Collection files", "Benchmarks") has what it takes and what it saved.
 */

import { isUtf8 } from 'node:buffer';
import { COMMA, COLON, isDigit, LBRACE, LBRACKET, literalEnd, MINUS, numberDigits, numberEnd, numberFractionDigits, numberFractionEnd, numberHasExponent, numberIntegerDigits, numberMantissa, numberNegative, numberValueEnd, plainStringEnd, QUOTE, RBRACE, RBRACKET, skipSpace, stringEnd, stringEscaped, ZERO } from '../records/json-bytes.js';
import { timestampMs } from '../timestamp.js';

/** Kind of the value after a literal; END: the literal runs to the end of the record. */
export const K_END = 0;
export const K_STRING = 1;
export const K_NUMBER = 2;
export const K_BOOLEAN = 3;
/** An array holding objects or arrays, read by its own skeleton (`Template.nestedArrays`). */
export const K_ARRAY = 4;

/** Templates learned per stage (collection and rule set); past it records take the slow path. */
const MAX_TEMPLATES = 256;
/** Templates per shape key (whitespace and key-order variants of one shape: producers). */
const MAX_TEMPLATES_PER_KEY = 8;
/** Entries (values, nulls, objects, arrays), nesting, record size and key length of a template. */
const MAX_SLOTS = 1024;
const MAX_DEPTH = 32;
const MAX_RECORD_BYTES = 64 * 1024;
const MAX_KEY_BYTES = 256;
/** Literal bytes and path text (characters) per template: keys and structure, not values. */
const MAX_LITERAL_BYTES = 16 * 1024;
const MAX_PATH_TEXT = 64 * 1024;
/** Records of one shape a template could not be learned from before the shape is given up. */
const MAX_FAILURES_PER_KEY = 8;
/** Shapes whose failures are remembered (past it the count starts over). */
const MAX_FAILED_KEYS = 10_000;
/** Memory all the templates of one processor may hold, estimated (see `costOf`). */
export const TEMPLATE_BUDGET_BYTES = 64 << 20;

/** Path segment of an array's elements (no key is null). */
const ELEMENT = null;

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
  return v.escaped[slot] === 1 ? (JSON.parse(b.toString('utf8', v.starts[slot]! - 1, v.ends[slot]! + 1)) as string) : b.toString('utf8', v.starts[slot]!, v.ends[slot]!);
}

/**
 * The trie is flat, for locality (a match walks one path of it, and the templates of a busy
 * collection exceed the CPU caches as scattered objects): step records in one Int32Array, each a
 * header then its literal's bytes as little-endian words (the last one zero-padded), compared a
 * word at a time. A level is a chain of sibling steps; a step's next level starts at S_HEAD.
 */
const S_SIBLING = 0;
const S_HEAD = 1;
/** The next level's byte index (`tables`), or -1. */
const S_TABLE = 2;
const S_KIND = 3;
const S_LEN = 4;
/** K_END: the template's index; K_ARRAY: the array skeleton's index; else -1. */
const S_REF = 5;
const S_WORDS = 6;
/** Masks of the first 1, 2, 3 bytes of a little-endian word. */
const TAIL_MASKS = [0, 0xff, 0xffff, 0xffffff];

/** Words of `lit`, little-endian, the last one zero-padded. */
function wordsOf(lit: Uint8Array): Int32Array {
  const words = new Int32Array((lit.length + 3) >> 2);
  for (let k = 0; k < lit.length; k++) words[k >> 2] = words[k >> 2]! | (lit[k]! << ((k & 3) * 8));
  return words;
}

/** Whether `b[i, i + len)` (within the record: `i + len <= e`) equals the literal of `len` bytes in `code` at `w`. */
function litEquals(code: Int32Array, w: number, len: number, b: Uint8Array, view: DataView, i: number): boolean {
  const full = len >> 2;
  let k = 0;
  for (let x = 0; x < full; x++, k += 4, w++) if (view.getInt32(i + k, true) !== code[w]) return false;
  const tail = len - k;
  if (tail === 0) return true;
  if (i + k + 4 <= view.byteLength) return (view.getInt32(i + k, true) & TAIL_MASKS[tail]!) === code[w];
  const word = code[w]!;
  for (let t = 0; t < tail; t++) if (b[i + k + t] !== ((word >>> (t * 8)) & 0xff)) return false;
  return true;
}

/**
 * A level with three steps or more whose literals differ first at byte `at` (shapes that share a
 * prefix part at a key: `,"f0_0":` / `,"f1_0":`): its steps by that byte's value, so a match tries
 * one step instead of every one.
 */
interface LevelTable {
  at: number;
  byByte: Array<number[] | undefined>;
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
const TIMESTAMP = pathKey(['timestamp']);

/** A copy of `b[s, e)` (Buffer#slice would be a view keeping the whole body alive). */
const copyOf = (b: Uint8Array, s: number, e: number) => new Uint8Array(b.subarray(s, e));

/** Whether every value an array match read so far is written as JSON.stringify writes it. */
let verbatim = true;

/**
 * End of the JSON number at `i`, or -1 (its value is not computed: no column reads inside an
 * array). `verbatim` is cleared unless the text is the one JSON.stringify writes for its value: no
 * exponent, not `-0`, no trailing fraction zero, exact (up to 15 significant digits, or an integer
 * below 2^53), not below 1e-6 (written with an exponent). Conservative: a false answer only costs
 * a stringify.
 */
function numberCheck(b: Uint8Array, i: number, e: number): number {
  i = numberEnd(b, i, e);
  if (i < 0) return -1;
  let canonical: boolean;
  if (numberHasExponent) canonical = false;
  else if (numberFractionDigits > 0) {
    // Leading zeros of the fraction of a number below 1 (`0.000001`).
    const zeros = numberIntegerDigits === 0 ? numberFractionDigits - numberDigits : 0;
    canonical = b[numberFractionEnd - 1] !== ZERO && numberDigits <= 15 && zeros <= 5;
  } else canonical = !(numberNegative && numberMantissa[0] === 0) && (numberDigits <= 15 || numberMantissa[0]! < 2 ** 53);
  if (!canonical) verbatim = false;
  return i;
}

/** End of the value `q` reads at `i`, or -1. Values are checked (and `verbatim` kept), not stored. */
function matchSeq(q: Seq, b: Uint8Array, view: DataView, i: number, e: number): number {
  const code = q.code;
  for (let p = 0; ; ) {
    const kind = code[p]!;
    const len = code[p + 1]!;
    const entry = code[p + 2]!;
    p += 3;
    if (i + len > e || !litEquals(code, p, len, b, view, i)) return -1;
    p += (len + 3) >> 2;
    i += len;
    if (kind === K_END) return i;
    const c = b[i];
    if (kind === K_STRING) {
      if (c !== QUOTE) return -1;
      i = stringEnd(b, i, e);
      if (stringEscaped) verbatim = false;
    } else if (kind === K_NUMBER) i = numberCheck(b, i, e);
    else if (kind === K_BOOLEAN) i = c === 0x74 ? literalEnd(b, i, e, 'true') : literalEnd(b, i, e, 'false');
    else i = c === LBRACKET ? matchArray(q.subs[entry]!, b, view, i, e) : -1;
    if (i < 0) return -1;
  }
}

const bytesAt = (b: Uint8Array, i: number, e: number, lit: Uint8Array): boolean => {
  if (i + lit.length > e) return false;
  for (let k = 0; k < lit.length; k++) if (b[i + k] !== lit[k]) return false;
  return true;
};

/** End of the array `a` reads at `i` (its `[`), or -1. */
function matchArray(a: ArraySkeleton, b: Uint8Array, view: DataView, i: number, e: number): number {
  if (a.sep === null) return matchSeq(a.element, b, view, i, e);
  if (!bytesAt(b, i, e, a.open)) return -1;
  i += a.open.length;
  for (;;) {
    i = matchSeq(a.element, b, view, i, e);
    if (i < 0) return -1;
    // The separator has a comma where the close has a bracket: at most one of them matches.
    if (bytesAt(b, i, e, a.sep)) i += a.sep.length;
    else return bytesAt(b, i, e, a.close) ? i + a.close.length : -1;
  }
}

const latin1 = (lit: Uint8Array) => Buffer.from(lit.buffer, lit.byteOffset, lit.byteLength).toString('latin1');
const seqId = (q: Seq): string => JSON.stringify([Array.from(q.kinds), q.lits.map(latin1), q.subs.map((x) => x?.id ?? null)]);

/** A Seq being built. */
interface SeqBuilder {
  lits: Uint8Array[];
  kinds: number[];
  subs: Array<ArraySkeleton | null>;
}

const newSeq = (): SeqBuilder => ({ lits: [], kinds: [], subs: [] });
function seqOf(q: SeqBuilder): Seq {
  const parts: number[] = [];
  q.lits.forEach((lit, k) => parts.push(q.kinds[k]!, lit.length, k, ...wordsOf(lit)));
  return { lits: q.lits, kinds: Uint8Array.from(q.kinds), subs: q.subs, code: Int32Array.from(parts) };
}

const concatBytes = (parts: Uint8Array[]): Uint8Array => (parts.length === 1 ? parts[0]! : new Uint8Array(Buffer.concat(parts)));

/** An array index key (integer-like): JSON.parse objects list such keys first, so the text order is not kept. */
const INDEX_KEY = /^(?:0|[1-9][0-9]{0,9})$/;

/** A JSON array whose elements differ: their skeletons joined into one, with the bytes between. */
function fixedSeq(b: Uint8Array, open: number, elements: readonly SeqBuilder[], starts: readonly number[], ends: readonly number[], close: number): SeqBuilder {
  const out = newSeq();
  let pending: Uint8Array[] = [copyOf(b, open, starts[0]!)];
  for (let j = 0; j < elements.length; j++) {
    const el = elements[j]!;
    for (let k = 0; k < el.kinds.length; k++) {
      pending.push(el.lits[k]!);
      if (el.kinds[k] === K_END) break;
      out.lits.push(concatBytes(pending));
      out.kinds.push(el.kinds[k]!);
      out.subs.push(el.subs[k]!);
      pending = [];
    }
    pending.push(copyOf(b, ends[j]!, j + 1 < elements.length ? starts[j + 1]! : close));
  }
  out.lits.push(concatBytes(pending));
  out.kinds.push(K_END);
  out.subs.push(null);
  return out;
}

const COMMA_LIT = Uint8Array.of(COMMA);

type Path = readonly (string | null)[];

interface Skeleton {
  lits: Uint8Array[];
  kinds: number[];
  subs: Array<ArraySkeleton | null>;
  paths: string[];
  nulls: Set<string>;
  objects: Set<string>;
  emptyObjects: Set<string>;
  arrays: Map<string, number[]>;
  nestedArrays: Map<string, ArraySkeleton>;
  /** Characters of every path kept. */
  pathText: number;
  /** Literal bytes of the whole skeleton. */
  literalBytes: number;
}

/**
 * The skeleton of the object record in `b[s, e)`, or null when it cannot be a template (not an
 * object, an array holding scalars then containers, escaped or duplicate keys, too deep or too
 * many values).
 */
function skeletonOf(b: Buffer, s: number, e: number): Skeleton | null {
  const scratch = new Float64Array(1);
  const sk: Skeleton = { lits: [], kinds: [], subs: [], paths: [], nulls: new Set(), objects: new Set(), emptyObjects: new Set(), arrays: new Map(), nestedArrays: new Map(), pathText: 0, literalBytes: 0 };
  let i = s;
  let litStart = s;
  /** The skeleton being built: the record's, or an array element's. */
  let cur: SeqBuilder = sk;
  /** Arrays of objects or arrays entered: their contents are not described by paths. */
  let inside = 0;
  /** Whitespace bytes and integer-like keys met so far (an array's text is compact when none). */
  let spaces = 0;
  let indexKeys = 0;
  const ws = () => {
    const from = i;
    i = skipSpace(b, i, e);
    spaces += i - from;
  };
  /** Past the opening bracket at `i`: true (and past `close`) when the container is empty. */
  const empty = (close: number): boolean => {
    i++;
    ws();
    if (b[i] !== close) return false;
    i++;
    return true;
  };
  /** After a member or element: true past a comma, false past `close`, null for anything else. */
  const more = (close: number): boolean | null => {
    ws();
    if (b[i] === COMMA) {
      i++;
      return true;
    }
    if (b[i] !== close) return null;
    i++;
    return false;
  };
  // Every path kept costs its text: bounded, as nesting under long keys would make it quadratic.
  let entries = 0;
  const keep = (path: Path): string | null => {
    // Paths inside an array of objects or arrays are not kept: only counted.
    if (inside > 0) return ++entries > MAX_SLOTS ? null : '';
    const key = pathKey(path);
    sk.pathText += key.length;
    return ++entries > MAX_SLOTS || sk.pathText > MAX_PATH_TEXT ? null : key;
  };
  /** Push the literal `b[litStart, to)` and the value kind after it onto the current skeleton. */
  const push = (to: number, kind: number, sub: ArraySkeleton | null): boolean => {
    sk.literalBytes += to - litStart;
    if (sk.literalBytes > MAX_LITERAL_BYTES) return false;
    cur.lits.push(copyOf(b, litStart, to));
    cur.kinds.push(kind);
    cur.subs.push(sub);
    return true;
  };
  const slot = (kind: number, path: Path): boolean => {
    const key = keep(path);
    if (key === null || !push(i, kind, null)) return false;
    if (inside === 0) sk.paths.push(key);
    return true;
  };
  const value = (path: Path, depth: number): boolean => {
    ws();
    const c = b[i];
    let end: number;
    if (c === LBRACE) {
      const key = keep(path);
      if (key === null) return false;
      const before = entries;
      if (!(depth < MAX_DEPTH && object(path, depth + 1))) return false;
      if (inside === 0) {
        sk.objects.add(key);
        if (entries === before) sk.emptyObjects.add(key);
      }
      return true;
    } else if (c === LBRACKET) {
      return depth < MAX_DEPTH && array(path, depth + 1);
    } else if (c === QUOTE) {
      if (!slot(K_STRING, path)) return false;
      end = stringEnd(b, i, e);
    } else if (c === MINUS || (c !== undefined && isDigit(c))) {
      if (!slot(K_NUMBER, path)) return false;
      end = numberValueEnd(b, i, e, scratch, 0);
    } else if (c === 0x74 || c === 0x66) {
      if (!slot(K_BOOLEAN, path)) return false;
      end = literalEnd(b, i, e, c === 0x74 ? 'true' : 'false');
    } else if (c === 0x6e) {
      // null is part of the literal: it has no value to read.
      const key = keep(path);
      if (key === null) return false;
      if (inside === 0) sk.nulls.add(key);
      end = literalEnd(b, i, e, 'null');
      if (end < 0) return false;
      i = end;
      return true;
    } else return false;
    if (end < 0) return false;
    i = litStart = end;
    return true;
  };
  const array = (path: Path, depth: number): boolean => {
    const key = keep(path);
    if (key === null) return false;
    const open = i;
    const element = [...path, ELEMENT];
    if (empty(RBRACKET)) {
      if (inside === 0) sk.arrays.set(key, []);
      return true;
    }
    ws();
    if (b[i] === LBRACE || b[i] === LBRACKET) return nested(key, element, open, depth);
    // Arrays of scalars: an array's elements are slots (their count is part of the skeleton).
    const items: number[] = [];
    if (inside === 0) sk.arrays.set(key, items);
    for (;;) {
      ws();
      const c = b[i];
      if (c === LBRACE || c === LBRACKET) return false;
      items.push(c === 0x6e ? -1 : sk.kinds.length);
      if (!value(element, depth)) return false;
      const next = more(RBRACKET);
      if (next !== true) return next === false;
    }
  };
  /** An array holding objects or arrays (`i` at its first element, `open` at its `[`): one K_ARRAY value. */
  const nested = (key: string, element: Path, open: number, depth: number): boolean => {
    const outer = cur;
    const outerLitStart = litStart;
    const spaces0 = spaces - (i - open - 1);
    const indexKeys0 = indexKeys;
    inside++;
    const elements: SeqBuilder[] = [];
    const starts: number[] = [];
    const ends: number[] = [];
    let id0 = '';
    let same = true;
    // An element of the first one's skeleton adds nothing to the template: its entries and literal
    // bytes are not counted (a long array is learned as one element), unless the array is read as
    // it is after all (separators that differ).
    let skippedEntries = 0;
    let skippedBytes = 0;
    for (;;) {
      ws();
      starts.push(i);
      cur = newSeq();
      litStart = i;
      const entriesBefore = entries;
      const bytesBefore = sk.literalBytes;
      if (!value(element, depth)) return false;
      if (!push(i, K_END, null)) return false;
      const id = seqId(seqOf(cur));
      if (elements.length === 0) id0 = id;
      else if (id === id0) {
        skippedEntries += entries - entriesBefore;
        skippedBytes += sk.literalBytes - bytesBefore;
        entries = entriesBefore;
        sk.literalBytes = bytesBefore;
      } else same = false;
      elements.push(cur);
      ends.push(i);
      const next = more(RBRACKET);
      if (next === null) return false;
      if (!next) break;
    }
    inside--;
    cur = outer;
    litStart = outerLitStart;
    const compact = spaces === spaces0 && indexKeys === indexKeys0;
    const n = elements.length;
    let repeated = same;
    const sep = n > 1 ? copyOf(b, ends[0]!, starts[1]!) : COMMA_LIT;
    for (let k = 1; repeated && k + 1 < n; k++) repeated = bytesAt(b, ends[k]!, starts[k + 1]!, sep) && starts[k + 1]! - ends[k]! === sep.length;
    let sub: ArraySkeleton;
    if (repeated) {
      const q = seqOf(elements[0]!);
      const [o, c] = [copyOf(b, open, starts[0]!), copyOf(b, ends[n - 1]!, i)];
      sk.literalBytes += o.length + sep.length + c.length;
      sub = { open: o, element: q, sep, close: c, compact, id: JSON.stringify(['r', latin1(o), id0, latin1(sep), latin1(c)]) };
    } else {
      entries += skippedEntries;
      if (entries > MAX_SLOTS) return false;
      const q = seqOf(fixedSeq(b, open, elements, starts, ends, i));
      sk.literalBytes += skippedBytes + (i - open) - ends.reduce((sum, end, k) => sum + end - starts[k]!, 0);
      sub = { open: new Uint8Array(0), element: q, sep: null, close: new Uint8Array(0), compact, id: JSON.stringify(['f', seqId(q)]) };
    }
    if (sk.literalBytes > MAX_LITERAL_BYTES || !push(open, K_ARRAY, sub)) return false;
    if (inside === 0) {
      sk.paths.push(key);
      sk.nestedArrays.set(key, sub);
    }
    litStart = i;
    return true;
  };
  const object = (path: Path, depth: number): boolean => {
    if (empty(RBRACE)) return true;
    const seen = new Set<string>();
    for (;;) {
      ws();
      if (b[i] !== QUOTE) return false;
      const ks = i + 1;
      const ke = plainStringEnd(b, i, e) - 1;
      if (ke < 0 || ke - ks > MAX_KEY_BYTES) return false;
      const key = b.toString('utf8', ks, ke);
      // JSON.parse keeps the last of duplicate keys; a template would read the first.
      if (seen.has(key)) return false;
      seen.add(key);
      if (INDEX_KEY.test(key)) indexKeys++;
      i = ke + 1;
      ws();
      if (b[i] !== COLON) return false;
      i++;
      if (!value([...path, key], depth)) return false;
      const next = more(RBRACE);
      if (next !== true) return next === false;
    }
  };
  ws();
  if (b[i] !== LBRACE || !object([], 1)) return null;
  ws();
  if (i !== e) return null;
  if (!push(e, K_END, null)) return null;
  return sk;
}

/** Memory templates may still take (bytes, estimated). */
export interface TemplateBudget {
  bytes: number;
}

/** Estimated memory of a template: its literals, its path strings and a share per entry. */
function costOf(sk: Skeleton): number {
  let bytes = 2 * sk.pathText + 96 * (sk.kinds.length + sk.nulls.size + sk.objects.size + sk.arrays.size + sk.nestedArrays.size);
  const seq = (q: { lits: readonly Uint8Array[]; subs: ReadonlyArray<ArraySkeleton | null> }) => {
    for (const lit of q.lits) bytes += lit.length + 48;
    for (const sub of q.subs) if (sub !== null) array(sub);
  };
  const array = (a: ArraySkeleton) => {
    bytes += 2 * a.id.length + a.open.length + a.close.length + (a.sep?.length ?? 0) + 96;
    seq(a.element);
  };
  seq(sk);
  return bytes;
}

/** One stage's templates: `learn` from records the slow path classified, `match` the rest. */
export class RecordTemplates {
  /** The trie's step records (S_*), `used` ints of it; the root level's first step and table. */
  private code = new Int32Array(4096);
  private used = 0;
  private rootHead = -1;
  private rootTable = -1;
  private readonly tables: LevelTable[] = [];
  /** Per step (by offset): its literal and array skeleton, for learning. */
  private readonly steps = new Map<number, { lit: Uint8Array; sub: ArraySkeleton | null }>();
  private readonly subs: ArraySkeleton[] = [];
  private readonly templates: Template[] = [];
  /** The body last matched in, and a view of it for word reads. */
  private viewed: Uint8Array | null = null;
  private view: DataView = new DataView(new ArrayBuffer(0));

  /** Let go of the last body matched in (called when a batch is decoded). */
  release(): void {
    this.viewed = null;
    this.view = new DataView(new ArrayBuffer(0));
  }
  private count = 0;
  private readonly perKey = new Map<number, number>();
  /** Records of a shape a template could not be learned from. */
  private readonly failures = new Map<number, number>();

  /** `budget`: memory left for templates, shared by the stages of one processor. */
  constructor(private readonly budget: TemplateBudget = { bytes: TEMPLATE_BUDGET_BYTES }) {}
  readonly values: SlotValues = { starts: new Int32Array(MAX_SLOTS + 1), ends: new Int32Array(MAX_SLOTS + 1), nums: new Float64Array(MAX_SLOTS + 1), escaped: new Uint8Array(MAX_SLOTS + 1) };

  /** Whether a record of shape `key` would be learned (cheap: called for every slow-path record). */
  wants(key: number): boolean {
    return key >= 0 && this.count < MAX_TEMPLATES && (this.perKey.get(key) ?? 0) < MAX_TEMPLATES_PER_KEY && (this.failures.get(key) ?? 0) < MAX_FAILURES_PER_KEY;
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
    let owner = -1;
    for (let k = 0; k < sk.kinds.length; k++) {
      const lit = sk.lits[k]!;
      const kind = sk.kinds[k]!;
      const sub = sk.subs[k]!;
      let step = -1;
      let last = -1;
      for (let o = this.headOf(owner); o >= 0; o = this.code[o + S_SIBLING]!) {
        const m = this.steps.get(o)!;
        if (this.code[o + S_KIND] === kind && Buffer.compare(m.lit, lit) === 0 && m.sub?.id === sub?.id) {
          step = o;
          break;
        }
        last = o;
      }
      if (step < 0) {
        step = this.append(lit, kind, sub);
        if (last < 0) this.setHead(owner, step);
        else this.code[last + S_SIBLING] = step;
        this.index(owner);
      }
      if (kind === K_END) {
        // The same skeleton again (a whitespace-identical record of the same shape).
        const ref = this.code[step + S_REF]!;
        if (ref >= 0) {
          this.budget.bytes += cost;
          return this.templates[ref]!;
        }
        this.code[step + S_REF] = this.templates.length;
        this.templates.push(template);
      }
      owner = step;
    }
    this.count++;
    this.perKey.set(key, (this.perKey.get(key) ?? 0) + 1);
    return template;
  }

  private headOf(owner: number): number {
    return owner < 0 ? this.rootHead : this.code[owner + S_HEAD]!;
  }

  private setHead(owner: number, step: number): void {
    if (owner < 0) this.rootHead = step;
    else this.code[owner + S_HEAD] = step;
  }

  /** A new step record (no siblings, no next level): its offset. */
  private append(lit: Uint8Array, kind: number, sub: ArraySkeleton | null): number {
    const words = wordsOf(lit);
    const size = S_WORDS + words.length;
    if (this.used + size > this.code.length) {
      const grown = new Int32Array(Math.max(this.code.length * 2, this.used + size));
      grown.set(this.code.subarray(0, this.used));
      this.code = grown;
    }
    const o = this.used;
    const code = this.code;
    code[o + S_SIBLING] = -1;
    code[o + S_HEAD] = -1;
    code[o + S_TABLE] = -1;
    code[o + S_KIND] = kind;
    code[o + S_LEN] = lit.length;
    code[o + S_REF] = -1;
    if (sub !== null) {
      code[o + S_REF] = this.subs.length;
      this.subs.push(sub);
    }
    code.set(words, o + S_WORDS);
    this.used += size;
    this.steps.set(o, { lit, sub });
    return o;
  }

  /** Index the level after `owner` by the first byte its literals do not share (none when one literal ends first). */
  private index(owner: number): void {
    const steps: number[] = [];
    for (let o = this.headOf(owner); o >= 0; o = this.code[o + S_SIBLING]!) steps.push(o);
    let table = -1;
    if (steps.length >= 3) {
      const lits = steps.map((o) => this.steps.get(o)!.lit);
      let min = Infinity;
      for (const lit of lits) min = Math.min(min, lit.length);
      let at = 0;
      while (at < min && lits.every((lit) => lit[at] === lits[0]![at])) at++;
      if (at < min) {
        const byByte: Array<number[] | undefined> = [];
        steps.forEach((o, k) => (byByte[lits[k]![at]!] ??= []).push(o));
        table = this.tables.length;
        this.tables.push({ at, byByte });
      }
    }
    if (owner < 0) this.rootTable = table;
    else this.code[owner + S_TABLE] = table;
  }

  /**
   * The template the record in `b[s, e)` matches, its values in `values`; null when none does. The
   * body must be valid UTF-8 (strings are kept as bytes).
   */
  match(b: Uint8Array, s: number, e: number): Template | null {
    const { starts, ends, nums, escaped } = this.values;
    if (b !== this.viewed) {
      this.viewed = b;
      this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    }
    const view = this.view;
    const code = this.code;
    let head = this.rootHead;
    let table = this.rootTable;
    let pos = s;
    let arrayEnd = -1;
    for (let slot = 0; ; slot++) {
      // Candidates: the level's sibling chain, or the steps its table gives for the byte at `at`.
      let list: number[] | null = null;
      let next = 0;
      let o = head;
      if (table >= 0) {
        const t = this.tables[table]!;
        list = pos + t.at < e ? (t.byByte[b[pos + t.at]!] ?? null) : null;
        if (list === null) return null;
        o = list[next++]!;
      }
      let step = -1;
      for (; o >= 0; o = list !== null ? (next < list.length ? list[next++]! : -1) : code[o + S_SIBLING]!) {
        const len = code[o + S_LEN]!;
        if (pos + len > e || !litEquals(code, o + S_WORDS, len, b, view, pos)) continue;
        const kind = code[o + S_KIND]!;
        if (kind === K_END) {
          if (pos + len === e) return this.templates[code[o + S_REF]!]!;
          continue;
        }
        const c = b[pos + len]!;
        if (kind === K_ARRAY) {
          // Steps that differ only in the array's skeleton: the array's bytes tell which one.
          if (c !== LBRACKET) continue;
          const sub = this.subs[code[o + S_REF]!]!;
          verbatim = sub.compact;
          arrayEnd = matchArray(sub, b, view, pos + len, e);
          if (arrayEnd < 0) continue;
          step = o;
          break;
        }
        if (kind === K_STRING ? c === QUOTE : kind === K_NUMBER ? c === MINUS || isDigit(c) : c === 0x74 || c === 0x66) {
          step = o;
          break;
        }
      }
      if (step < 0) return null;
      pos += code[step + S_LEN]!;
      const kind = code[step + S_KIND]!;
      let end: number;
      if (kind === K_STRING) {
        end = stringEnd(b, pos, e);
        starts[slot] = pos + 1;
        ends[slot] = end - 1;
        escaped[slot] = stringEscaped ? 1 : 0;
      } else if (kind === K_NUMBER) {
        end = numberValueEnd(b, pos, e, nums, slot);
        starts[slot] = pos;
        ends[slot] = end;
      } else if (kind === K_ARRAY) {
        end = arrayEnd;
        starts[slot] = pos;
        ends[slot] = end;
        escaped[slot] = verbatim ? 0 : 1;
      } else {
        const t = b[pos] === 0x74;
        end = t ? literalEnd(b, pos, e, 'true') : literalEnd(b, pos, e, 'false');
        nums[slot] = t ? 1 : 0;
        starts[slot] = pos;
        ends[slot] = end;
      }
      if (end < 0) return null;
      pos = end;
      head = code[step + S_HEAD]!;
      table = code[step + S_TABLE]!;
    }
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
  const ms = kind === K_NUMBER ? timestampMs(v.nums[slot]!) : kind === K_STRING ? timestampMs(stringValue(v, b, slot)) : NaN;
  return Number.isNaN(ms) ? fallback : ms;
}
