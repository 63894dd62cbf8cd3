/**
 * The skeleton of a record: the literal bytes between its values (braces, keys, colons, commas,
 * `null`s, whitespace) and the kind of each value (string, number, boolean), with the paths of its
 * values, nulls, objects and arrays — what a template is learned from (record-templates.ts).
 *
 * An array holding objects or arrays is one value (K_ARRAY) with a skeleton of its own
 * (`ArraySkeleton`): when its elements share one skeleton, that element skeleton repeated one or
 * more times, so arrays of any length match; else its elements as they are (fixed count). The
 * shape of an array is its type and the union of its elements' entries (fingerprint.ts dedupes
 * them), so one element skeleton read n ≥ 1 times gives the shape it gives once; an empty array
 * (no element entries) stays a literal `[]`. The elements' values are checked, not kept: no column
 * reads a path inside an array. An array holding scalars then objects or arrays has no skeleton.
 */

import {
  COMMA,
  COLON,
  isDigit,
  LBRACE,
  LBRACKET,
  falseEnd,
  nullEnd,
  trueEnd,
  MINUS,
  numberValueEnd,
  plainStringEnd,
  QUOTE,
  RBRACE,
  RBRACKET,
  skipSpace,
  stringEnd,
} from '../records/json-bytes.js';
import {
  K_ARRAY,
  K_BOOLEAN,
  K_END,
  K_NUMBER,
  K_STRING,
  MAX_SLOTS,
  pathKey,
  type ArraySkeleton,
  type Seq,
} from '../records/template-slots.js';
import { bytesAt, wordsOf } from './template-trie.js';

/** Nesting, key length, literal bytes and path text (characters) of a template: keys and structure, not values. */
const MAX_DEPTH = 32;
const MAX_KEY_BYTES = 256;
const MAX_LITERAL_BYTES = 16 * 1024;
const MAX_PATH_TEXT = 64 * 1024;

/** Path segment of an array's elements (no key is null). */
const ELEMENT = null;

/** A copy of `b[s, e)` (Buffer#slice would be a view keeping the whole body alive). */
const copyOf = (b: Uint8Array, s: number, e: number) => new Uint8Array(b.subarray(s, e));

const latin1 = (lit: Uint8Array) => Buffer.from(lit.buffer, lit.byteOffset, lit.byteLength).toString('latin1');
const seqId = (q: Seq): string =>
  JSON.stringify([Array.from(q.kinds), q.lits.map(latin1), q.subs.map((x) => x?.id ?? null)]);

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

const concatBytes = (parts: Uint8Array[]): Uint8Array =>
  parts.length === 1 ? parts[0]! : new Uint8Array(Buffer.concat(parts));

/** An array index key (integer-like): JSON.parse objects list such keys first, so the text order is not kept. */
const INDEX_KEY = /^(?:0|[1-9][0-9]{0,9})$/;

/** A JSON array whose elements differ: their skeletons joined into one, with the bytes between. */
function fixedSeq(
  b: Uint8Array,
  open: number,
  elements: readonly SeqBuilder[],
  starts: readonly number[],
  ends: readonly number[],
  close: number,
): SeqBuilder {
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

/** A record's skeleton: its literals, value kinds and array skeletons (K_END last), and its paths. */
export interface Skeleton {
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
export function skeletonOf(b: Buffer, s: number, e: number): Skeleton | null {
  const scratch = new Float64Array(1);
  const sk: Skeleton = {
    lits: [],
    kinds: [],
    subs: [],
    paths: [],
    nulls: new Set(),
    objects: new Set(),
    emptyObjects: new Set(),
    arrays: new Map(),
    nestedArrays: new Map(),
    pathText: 0,
    literalBytes: 0,
  };
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
      end = c === 0x74 ? trueEnd(b, i, e) : falseEnd(b, i, e);
    } else if (c === 0x6e) {
      // null is part of the literal: it has no value to read.
      const key = keep(path);
      if (key === null) return false;
      if (inside === 0) sk.nulls.add(key);
      end = nullEnd(b, i, e);
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
    for (let k = 1; repeated && k + 1 < n; k++)
      repeated = bytesAt(b, ends[k]!, starts[k + 1]!, sep) && starts[k + 1]! - ends[k]! === sep.length;
    let sub: ArraySkeleton;
    if (repeated) {
      const q = seqOf(elements[0]!);
      const [o, c] = [copyOf(b, open, starts[0]!), copyOf(b, ends[n - 1]!, i)];
      sk.literalBytes += o.length + sep.length + c.length;
      sub = {
        open: o,
        element: q,
        sep,
        close: c,
        compact,
        id: JSON.stringify(['r', latin1(o), id0, latin1(sep), latin1(c)]),
      };
    } else {
      entries += skippedEntries;
      if (entries > MAX_SLOTS) return false;
      const q = seqOf(fixedSeq(b, open, elements, starts, ends, i));
      sk.literalBytes += skippedBytes + (i - open) - ends.reduce((sum, end, k) => sum + end - starts[k]!, 0);
      sub = {
        open: new Uint8Array(0),
        element: q,
        sep: null,
        close: new Uint8Array(0),
        compact,
        id: JSON.stringify(['f', seqId(q)]),
      };
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

/** Estimated memory of a template: its literals, its path strings and a share per entry. */
export function costOf(sk: Skeleton): number {
  let bytes =
    2 * sk.pathText + 96 * (sk.kinds.length + sk.nulls.size + sk.objects.size + sk.arrays.size + sk.nestedArrays.size);
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
