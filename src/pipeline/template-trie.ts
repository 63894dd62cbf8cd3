/**
 * The matching trie: templates held as a trie of (literal, value kind) steps, so shapes that start
 * alike share their first steps and a match reads each byte of the record once; the trie (and each
 * array skeleton) is flat in one Int32Array, so a match reads contiguous memory.
 *
 * A match compares the literals byte for byte and checks the values by the JSON grammar as they
 * are read: strings (escapes validated, raw control characters refused), numbers, `true`/`false`,
 * the elements of arrays. An array of objects or arrays (K_ARRAY) is read by its `ArraySkeleton`;
 * its JSON column takes its bytes when they are what JSON.stringify writes (`escaped` 0: no
 * whitespace, no integer-like keys, no string escapes, numbers in the shortest form), else the
 * array is parsed and stringified for it.
 */

import {
  isDigit,
  LBRACKET,
  falseEnd,
  trueEnd,
  MINUS,
  numberDigits,
  numberEnd,
  numberFractionDigits,
  numberFractionEnd,
  numberHasExponent,
  numberIntegerDigits,
  numberMantissa,
  numberNegative,
  numberValueEnd,
  QUOTE,
  stringEnd,
  stringEscaped,
  ZERO,
} from '../records/json-bytes.js';
import {
  K_ARRAY,
  K_BOOLEAN,
  K_END,
  K_NUMBER,
  K_STRING,
  type ArraySkeleton,
  type Seq,
  type SlotValues,
  type Template,
} from '../records/template-slots.js';

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
export function wordsOf(lit: Uint8Array): Int32Array {
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
  } else
    canonical = !(numberNegative && numberMantissa[0] === 0) && (numberDigits <= 15 || numberMantissa[0]! < 2 ** 53);
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
    else if (kind === K_BOOLEAN) i = c === 0x74 ? trueEnd(b, i, e) : falseEnd(b, i, e);
    else i = c === LBRACKET ? matchArray(q.subs[entry]!, b, view, i, e) : -1;
    if (i < 0) return -1;
  }
}

/** Whether the bytes at `i` (before `e`) are `lit`. */
export const bytesAt = (b: Uint8Array, i: number, e: number, lit: Uint8Array): boolean => {
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

/**
 * The templates of one stage as a trie: `add` a skeleton with the template it stands for, `match`
 * a record against all of them at once.
 */
export class TemplateTrie {
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

  /** `values`: where `match` leaves the values of the record it matched. */
  constructor(private readonly values: SlotValues) {}

  /** Let go of the last body matched in. */
  release(): void {
    this.viewed = null;
    this.view = new DataView(new ArrayBuffer(0));
  }

  /**
   * Add the skeleton `q` (its literals, value kinds and array skeletons, K_END last) standing for
   * `template`. Returns `template`, or the template already added for the same skeleton (a
   * whitespace-identical record of the same shape), which is then kept instead.
   */
  add(
    q: {
      readonly lits: readonly Uint8Array[];
      readonly kinds: readonly number[];
      readonly subs: ReadonlyArray<ArraySkeleton | null>;
    },
    template: Template,
  ): Template {
    let owner = -1;
    for (let k = 0; k < q.kinds.length; k++) {
      const lit = q.lits[k]!;
      const kind = q.kinds[k]!;
      const sub = q.subs[k]!;
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
        if (ref >= 0) return this.templates[ref]!;
        this.code[step + S_REF] = this.templates.length;
        this.templates.push(template);
      }
      owner = step;
    }
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
        if (
          kind === K_STRING ? c === QUOTE : kind === K_NUMBER ? c === MINUS || isDigit(c) : c === 0x74 || c === 0x66
        ) {
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
        end = t ? trueEnd(b, pos, e) : falseEnd(b, pos, e);
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
