import { copyBytes, type Projection } from './record-projection.js';
import { addShape, shapeOf, type ShapeNode, type TemplateRecords } from './record-slots.js';

/**
 * Templated records (record-slots.ts) cut down to what a script reads (record-projection.ts): the
 * record's shape with only the keys read (an object or array only tested: empty), so the sandbox's
 * factory builds only those, and as the record's text only its kept strings, one after the other —
 * the factory reads nothing else of the text. A flat bench record's text goes from ~200 bytes to
 * the ~25 of the strings the bench view reads.
 *
 * A record's text here is its kept string slots' contents (a string with escapes: its quoted
 * text), with the offsets in `ints` pointing into it, and at least one byte (the sandbox reads a
 * record per U+001E-separated text). The script gets the object JSON.parse would give for the
 * record cut down by the byte projection: same keys in the same order, same values.
 */

/** A shape under one projection: its id and which of the original's strings and scalars it keeps. */
interface Cut {
  id: number;
  desc: string;
  /** Indexes into the original's string slots (in slot order), and into its number/boolean slots. */
  strings: Int32Array;
  scalars: Int32Array;
}

/** Value buffers a call that has answered left for the next (up to SPARE_MAX_ENTRIES entries each). */
let spare: { ints: Int32Array; nums: Float64Array } | null = null;
const SPARE_MAX_ENTRIES = 4 << 20;

/** Cut shapes per projection, by original shape id (null: keep the original: budget spent). */
const cuts = new WeakMap<Projection, Map<number, Cut | null>>();

function cutOf(id: number, p: Projection): Cut | null {
  let byShape = cuts.get(p);
  if (byShape === undefined) cuts.set(p, (byShape = new Map()));
  let cut = byShape.get(id);
  if (cut === undefined) {
    cut = makeCut(shapeOf(id)!.desc, p);
    byShape.set(id, cut);
  }
  return cut;
}

function makeCut(desc: string, p: Projection): Cut | null {
  const { k: kinds, t: tree } = JSON.parse(desc) as { k: string; t: ShapeNode };
  const kept = new Uint8Array(kinds.length);
  const keepAll = (node: ShapeNode): void => {
    if (typeof node === 'number') kept[node] = 1;
    else if (node !== null) for (const child of 'a' in node ? node.a : node.o.map((m) => m[1])) keepAll(child);
  };
  const cut = (node: ShapeNode, q: Projection): ShapeNode => {
    if (q.whole || node === null || typeof node === 'number') {
      keepAll(node);
      return node;
    }
    // Arrays are given whole when read into, empty when only tested (as record-projection.ts does).
    if ('a' in node) {
      if (q.keys.length === 0) return { a: [] };
      keepAll(node);
      return node;
    }
    const o: Array<[string, ShapeNode]> = [];
    for (const [key, child] of node.o) {
      const read = q.keys.find((k) => k.name === key);
      if (read !== undefined) o.push([key, cut(child, read.child)]);
    }
    return { o };
  };
  const cutTree = cut(tree, p);
  // Kept slots renumbered in slot order (the harness gives string slots their ints in that order).
  const index = new Int32Array(kinds.length).fill(-1);
  let k2 = '';
  const strings: number[] = [];
  const scalars: number[] = [];
  for (let j = 0, s = 0, x = 0; j < kinds.length; j++) {
    const isString = kinds[j] === 's';
    if (kept[j] === 1) {
      index[j] = k2.length;
      k2 += kinds[j];
      (isString ? strings : scalars).push(isString ? s : x);
    }
    if (isString) s++;
    else x++;
  }
  const renumber = (node: ShapeNode): ShapeNode =>
    typeof node === 'number'
      ? index[node]!
      : node === null
        ? null
        : 'a' in node
          ? { a: node.a.map(renumber) }
          : { o: node.o.map(([key, child]) => [key, renumber(child)] as [string, ShapeNode]) };
  const cutDesc = JSON.stringify({ k: k2, t: renumber(cutTree) });
  const id = addShape(cutDesc, 1 + 2 * strings.length, scalars.length);
  return id === null
    ? null
    : { id, desc: cutDesc, strings: Int32Array.from(strings), scalars: Int32Array.from(scalars) };
}

/**
 * The templated records of one sandbox call (`t`), cut down by `p` as their texts are written:
 * `write` for every record of the call in order, then `templates()`.
 */
export class SlotProjection {
  private readonly ids: Int32Array;
  private readonly ints: Int32Array;
  private readonly nums: Float64Array;
  /** Where the next templated record's values are, in `t` and in the output. */
  private o = 0;
  private f = 0;
  private ni = 0;
  private nf = 0;
  private readonly used = new Map<number, string>();

  constructor(
    private readonly t: TemplateRecords,
    private readonly p: Projection,
  ) {
    this.ids = new Int32Array(t.ids.length);
    // The last call's value buffers when free and large enough: memory outside the JS heap, whose
    // growth starts the worker's collections, is not allocated anew per call.
    const kept =
      spare !== null && spare.ints.length >= t.ints.length && spare.nums.length >= t.nums.length ? spare : null;
    if (kept !== null) spare = null;
    this.ints = kept?.ints ?? new Int32Array(t.ints.length);
    this.nums = kept?.nums ?? new Float64Array(t.nums.length);
  }

  /** The call has answered: its value buffers are kept for the next call. */
  release(): void {
    if (
      this.ints.length <= SPARE_MAX_ENTRIES &&
      this.nums.length <= SPARE_MAX_ENTRIES &&
      (spare === null || spare.ints.length < this.ints.length)
    )
      spare = { ints: this.ints, nums: this.nums };
  }

  /**
   * Writes record `k` of the call (its bytes at `body[start…]`) into `out` at `at` when it is
   * templated and returns where it ends; -1 when it is not (the caller writes its text).
   */
  write(k: number, body: Uint8Array, start: number, out: Uint8Array, at: number): number {
    const t = this.t;
    const id = t.ids[k]!;
    if (id < 0) {
      this.ids[k] = -1;
      return -1;
    }
    const shape = shapeOf(id)!;
    const o = this.o;
    const f = this.f;
    this.o += shape.ints;
    this.f += shape.nums;
    const cut = cutOf(id, this.p);
    if (cut === null) {
      // As captured: the original shape, values and text.
      this.ids[k] = id;
      this.used.set(id, shape.desc);
      this.ints.set(t.ints.subarray(o, o + shape.ints), this.ni);
      this.nums.set(t.nums.subarray(f, f + shape.nums), this.nf);
      this.ni += shape.ints;
      this.nf += shape.nums;
      const len = t.ints[o]!;
      copyBytes(body, start, start + len, out, at);
      return at + len;
    }
    this.ids[k] = cut.id;
    this.used.set(cut.id, cut.desc);
    const ints = this.ints;
    let ni = this.ni;
    const lengthAt = ni++;
    let w = at;
    for (let q = 0; q < cut.strings.length; q++) {
      const s = o + 1 + 2 * cut.strings[q]!;
      const a = t.ints[s]!;
      const end = t.ints[s + 1]!;
      if (a >= 0) {
        ints[ni++] = w - at;
        w = copyBytes(body, start + a, start + end, out, w);
        ints[ni++] = w - at;
      } else {
        // With escapes: its quoted text, which the sandbox parses (`~a − 1` is the opening quote).
        ints[ni++] = ~(w - at + 1);
        w = copyBytes(body, start + ~a - 1, start + end + 1, out, w);
        ints[ni++] = w - at - 1;
      }
    }
    if (w === at) out[w++] = 0x20;
    ints[lengthAt] = w - at;
    this.ni = ni;
    for (let q = 0; q < cut.scalars.length; q++) this.nums[this.nf++] = t.nums[f + cut.scalars[q]!]!;
    return w;
  }

  /** The call's templated records, as written. */
  templates(): TemplateRecords {
    return {
      ids: this.ids,
      ints: this.ints.subarray(0, this.ni),
      nums: this.nums.subarray(0, this.nf),
      used: [...this.used.keys()],
      shapes: this.used,
    };
  }
}
