import { isAscii } from 'node:buffer';
import { K_BOOLEAN, K_NUMBER, K_STRING, pathKey, type SlotValues, type Template } from '../records/template-slots.js';

/**
 * Records a view reads as template values instead of text to parse (docs/views.md, "How records
 * reach the script").
 *
 * A record the worker matched against a learned template (pipeline/record-templates.ts) is that
 * template's skeleton with its slot values filled in. For such a record the sandbox need not
 * `JSON.parse` its text: it is sent, once per template, a description of the skeleton (a
 * `RecordShape`: object keys in the order JSON.parse gives them, nesting, `null`s, arrays of
 * scalars, each leaf's slot), from which the harness compiles a factory (one object literal), and
 * per record its slots' values: numbers and booleans as float64s, strings as character offsets
 * into the record's text, which the sandbox has anyway. The record the script gets is the one
 * JSON.parse would give (test/transform/record-slots.test.ts holds the contract).
 *
 * Offsets are characters only where the record's bytes are ASCII (one byte, one character; the
 * sandbox's text keeps an ASCII record as it is, see records-text.ts); any other record, and any
 * template this module does not understand, is sent as text only (template index -1) and parsed.
 *
 * Per templated record, in `TemplateRecords.ints`: its length in characters, then for each string
 * slot (slot order) the start and end of its contents, relative to the record's first character
 * (a string with escapes: `~start`, and the sandbox parses its quoted text); in `nums`: each number
 * slot's value, each boolean's as 1 or 0.
 */

/** A batch's (or a sandbox call's) templated records, as `BatchInput.templates`. */
export interface TemplateRecords {
  /** Per record: its template's shape id, or -1 (parse its text). */
  ids: Int32Array;
  ints: Int32Array;
  nums: Float64Array;
  /** The distinct shape ids in `ids`. */
  used: readonly number[];
  /** Shape descriptions (JSON text) by id: at least those in `used` not yet given to the sandbox's context. */
  shapes: ReadonlyMap<number, string>;
}

/** A template as the sandbox builds its records. */
interface RecordShape {
  id: number;
  /** JSON text: `{k: kinds ("s" string, "n" number, "b" boolean per slot), t: tree}`; tree nodes: a
   * slot index, null, `{o: [[key, node], …]}` (keys in JSON.parse's order) or `{a: [node, …]}`. */
  desc: string;
  /** String slots, and number and boolean slots, in slot order. */
  strings: Int32Array;
  scalars: Int32Array;
  /** Entries of `ints` and `nums` per record. */
  ints: number;
  nums: number;
  /** Serial of the capture that last took a record of this shape (so each capture lists it once). */
  seenBy: number;
}

/**
 * Characters of shape descriptions a worker thread gives out in its lifetime: a sandbox process
 * keeps every description it was sent, so this bounds what it holds. Past it, records of new
 * templates are parsed.
 */
const SHAPE_BUDGET_CHARS = 8 << 20;
/** One description at most (a template of up to 1,024 slots and 64 KB of keys fits). */
const MAX_SHAPE_CHARS = 256 * 1024;

/** Per template: its shape, or null when it has none (not understood, too large, out of budget). */
const shapes = new WeakMap<Template, RecordShape | null>();
let nextShapeId = 0;
let shapeBudget = SHAPE_BUDGET_CHARS;
let captures = 0;
/** Value buffers a released capture left for the next one (up to SPARE_MAX_ENTRIES entries each). */
let spare: { ints: Int32Array; nums: Float64Array } | null = null;
const SPARE_MAX_ENTRIES = 4 << 20;

/** A node of a shape description's tree (see RecordShape.desc). */
export type ShapeNode = number | null | { o: Array<[string, ShapeNode]> } | { a: ShapeNode[] };
type Node = ShapeNode;

/** Slot kind letter of the description. */
const KIND_LETTER: Record<number, string> = { [K_STRING]: 's', [K_NUMBER]: 'n', [K_BOOLEAN]: 'b' };

/**
 * The description of `t` from one of its (ASCII) records, or null when the template holds anything
 * not understood here (every leaf must map to exactly one slot of the right kind, arrays hold
 * scalars only) or the description built back from the record's slot values is not that record.
 */
function describe(t: Template, v: SlotValues, body: Buffer, s: number, e: number): RecordShape | null {
  const text = body.toString('latin1', s, e);
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch {
    return null;
  }
  const n = t.kinds.length;
  let kinds = '';
  for (let j = 0; j < n; j++) {
    const letter = KIND_LETTER[t.kinds[j]!];
    if (letter === undefined) return null;
    kinds += letter;
  }
  // Slots by path (an array's elements share their path: the template lists them per array).
  const slotOf = new Map<string, number>();
  for (let j = 0; j < n; j++) if (!slotOf.has(t.paths[j]!)) slotOf.set(t.paths[j]!, j);
  const used = new Uint8Array(n);
  const leaf = (j: number | undefined, value: unknown): Node | undefined => {
    if (j === undefined || !(j >= 0 && j < n) || used[j] === 1) return undefined;
    const kind = t.kinds[j];
    if (
      !(typeof value === 'string'
        ? kind === K_STRING
        : typeof value === 'number'
          ? kind === K_NUMBER
          : typeof value === 'boolean'
            ? kind === K_BOOLEAN
            : false)
    )
      return undefined;
    used[j] = 1;
    return j;
  };
  const walk = (value: unknown, path: Array<string | null>): Node | undefined => {
    const key = pathKey(path);
    if (value === null) return t.nulls.has(key) ? null : undefined;
    if (Array.isArray(value)) {
      const items = t.arrays.get(key);
      if (items === undefined || items.length !== value.length) return undefined;
      const a: Node[] = [];
      for (let k = 0; k < value.length; k++) {
        const x = value[k] as unknown;
        if (x === null) {
          if (items[k] !== -1) return undefined;
          a.push(null);
          continue;
        }
        if (typeof x === 'object') return undefined;
        const node = leaf(items[k], x);
        if (node === undefined) return undefined;
        a.push(node);
      }
      return { a };
    }
    if (typeof value === 'object') {
      if (path.length > 0 && !t.objects.has(key)) return undefined;
      const o: Array<[string, Node]> = [];
      for (const k of Object.keys(value)) {
        // Offsets count characters: keys (the template's literals) must be ASCII too.
        if (!/^[\x00-\x7f]*$/.test(k)) return undefined;
        const node = walk((value as Record<string, unknown>)[k], [...path, k]);
        if (node === undefined) return undefined;
        o.push([k, node]);
      }
      return { o };
    }
    return leaf(slotOf.get(key), value);
  };
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return null;
  const tree = walk(record, []);
  if (tree === undefined || used.indexOf(0) >= 0) return null;
  const desc = JSON.stringify({ k: kinds, t: tree });
  if (!fits(desc)) return null;
  const strings: number[] = [];
  const scalars: number[] = [];
  for (let j = 0; j < n; j++) (t.kinds[j] === K_STRING ? strings : scalars).push(j);
  const shape: RecordShape = {
    id: -1,
    desc,
    strings: Int32Array.from(strings),
    scalars: Int32Array.from(scalars),
    ints: 1 + 2 * strings.length,
    nums: scalars.length,
    seenBy: -1,
  };
  // A self-check: the record built back from its slot values must be the record.
  const ints = new Int32Array(shape.ints);
  const nums = new Float64Array(shape.nums);
  put(shape, v, s, e, ints, 0, nums, 0);
  if (JSON.stringify(buildRecord(desc, text, 0, ints, 0, nums, 0)) !== JSON.stringify(record)) return null;
  const id = addShape(desc, shape.ints, shape.nums);
  if (id === null) return null;
  shape.id = id;
  return shape;
}

/** True when a description of this size may still be given out. */
const fits = (desc: string): boolean => desc.length <= MAX_SHAPE_CHARS && desc.length <= shapeBudget;

/** Every shape given an id, by id (bounded with the descriptions: SHAPE_BUDGET_CHARS). */
const byId = new Map<number, Pick<RecordShape, 'desc' | 'ints' | 'nums'>>();

/** Shape `id`'s description and entries per record in `ints` and `nums`. */
export function shapeOf(id: number): Pick<RecordShape, 'desc' | 'ints' | 'nums'> | undefined {
  return byId.get(id);
}

/**
 * Gives a shape its id within the budget (a described template's, or slot-projection.ts's shape cut
 * down to what a script reads); null when the budget is spent.
 */
export function addShape(desc: string, ints: number, nums: number): number | null {
  if (!fits(desc)) return null;
  const id = nextShapeId++;
  shapeBudget -= desc.length;
  byId.set(id, { desc, ints, nums });
  return id;
}

/** Writes a matched record's slot values (`v`, record at `body[s, e)`) at `ints[o]` and `nums[f]`. */
function put(
  shape: RecordShape,
  v: SlotValues,
  s: number,
  e: number,
  ints: Int32Array,
  o: number,
  nums: Float64Array,
  f: number,
): void {
  const { starts, ends, escaped } = v;
  const strings = shape.strings;
  const scalars = shape.scalars;
  ints[o++] = e - s;
  for (let k = 0; k < strings.length; k++) {
    const j = strings[k]!;
    const a = starts[j]! - s;
    ints[o++] = escaped[j] === 1 ? ~a : a;
    ints[o++] = ends[j]! - s;
  }
  const values = v.nums;
  for (let k = 0; k < scalars.length; k++) nums[f++] = values[scalars[k]!]!;
}

/**
 * A record built from its shape's description and slot values the way the harness's factories
 * build it (here: the worker's self-check and the tests).
 */
export function buildRecord(
  desc: string,
  text: string,
  p: number,
  ints: Int32Array,
  o: number,
  nums: Float64Array,
  f: number,
): unknown {
  const { k: kinds, t: tree } = JSON.parse(desc) as { k: string; t: Node };
  const at: number[] = [];
  for (let j = 0, si = 1, fi = 0; j < kinds.length; j++) at.push(kinds[j] === 's' ? ((si += 2), si - 2) : fi++);
  const build = (node: Node): unknown => {
    if (node === null) return null;
    if (typeof node === 'number') {
      const x = at[node]!;
      if (kinds[node] === 'n') return nums[f + x];
      if (kinds[node] === 'b') return nums[f + x] !== 0;
      const a = ints[o + x]!;
      const end = p + ints[o + x + 1]!;
      return a >= 0 ? text.slice(p + a, end) : (JSON.parse(text.slice(p + ~a - 1, end + 1)) as string);
    }
    if ('a' in node) return node.a.map(build);
    const out: Record<string, unknown> = {};
    for (const [key, value] of node.o)
      Object.defineProperty(out, key, { value: build(value), writable: true, enumerable: true, configurable: true });
    return out;
  };
  return build(tree);
}

/** Grows `a` to hold at least `need` entries. */
function grown<T extends Int32Array | Float64Array>(a: T, need: number): T {
  if (a.length >= need) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(need, 2 * a.length));
  b.set(a);
  return b;
}

/**
 * One batch's templated records, captured as the worker matches them (`take`, rows in order), cut
 * into sandbox calls by `range` or `pick`.
 */
export class SlotCapture {
  /** Per row: shape id, or -1. */
  private readonly ids: Int32Array;
  /** Per row (and one past the last): where its values start in `ints` / `nums`. */
  private readonly intAt: Int32Array;
  private readonly numAt: Int32Array;
  private ints: Int32Array;
  private nums: Float64Array;
  private ni = 0;
  private nf = 0;
  /** Rows whose starts are set. */
  private filled = 0;
  private readonly descs = new Map<number, string>();
  private lastBody: Buffer | null = null;
  private lastAscii = false;
  private readonly serial = captures++;

  constructor(private readonly count: number) {
    this.ids = new Int32Array(count).fill(-1);
    this.intAt = new Int32Array(count + 1);
    this.numAt = new Int32Array(count + 1);
    // The last batch's value buffers, when free: memory outside the JS heap, whose growth starts
    // the worker's collections, is not allocated anew per batch.
    const kept = spare;
    spare = null;
    this.ints = kept?.ints ?? new Int32Array(Math.max(64, count * 16));
    this.nums = kept?.nums ?? new Float64Array(Math.max(64, count * 8));
  }

  /** The batch is done with its values (every sandbox call over them answered): their buffers are kept for the next. */
  release(): void {
    if (this.ints.length <= SPARE_MAX_ENTRIES && this.nums.length <= SPARE_MAX_ENTRIES)
      spare = { ints: this.ints, nums: this.nums };
    this.ints = new Int32Array(0);
    this.nums = new Float64Array(0);
  }

  /** Row `row` (bytes `body[s, e)`) matched `t`, its values in `v`. */
  take(row: number, t: Template, v: SlotValues, body: Buffer, s: number, e: number): void {
    // A template found not understood costs one lookup per record, not an ASCII check.
    let shape = shapes.get(t);
    if (shape === null) return;
    if (body !== this.lastBody) {
      this.lastBody = body;
      this.lastAscii = isAscii(body);
    }
    if (!this.lastAscii && !isAscii(body.subarray(s, e))) return;
    // Described from the first ASCII record of the template.
    if (shape === undefined) shapes.set(t, (shape = describe(t, v, body, s, e)));
    if (shape === null) return;
    if (this.filled <= row) this.fillTo(row);
    if (this.ints.length < this.ni + shape.ints) this.ints = grown(this.ints, this.ni + shape.ints);
    if (this.nums.length < this.nf + shape.nums) this.nums = grown(this.nums, this.nf + shape.nums);
    put(shape, v, s, e, this.ints, this.ni, this.nums, this.nf);
    this.ni += shape.ints;
    this.nf += shape.nums;
    this.ids[row] = shape.id;
    if (shape.seenBy !== this.serial) {
      shape.seenBy = this.serial;
      this.descs.set(shape.id, shape.desc);
    }
  }

  private fillTo(row: number): void {
    for (; this.filled <= row; this.filled++) {
      this.intAt[this.filled] = this.ni;
      this.numAt[this.filled] = this.nf;
    }
  }

  /** Rows `from`..`to` − 1 as a call's templated records (undefined: none of them is). */
  range(from: number, to: number): TemplateRecords | undefined {
    this.fillTo(this.count);
    const ids = this.ids.subarray(from, to);
    const used = this.usedIn(ids);
    if (used.length === 0) return undefined;
    return {
      ids,
      ints: this.ints.subarray(this.intAt[from], this.intAt[to]),
      nums: this.nums.subarray(this.numAt[from], this.numAt[to]),
      used,
      shapes: this.descs,
    };
  }

  /** Rows `rows` (ascending) as a call's templated records (undefined: none of them is). */
  pick(rows: readonly number[]): TemplateRecords | undefined {
    this.fillTo(this.count);
    const ids = Int32Array.from(rows, (r) => this.ids[r]!);
    const used = this.usedIn(ids);
    if (used.length === 0) return undefined;
    let ni = 0;
    let nf = 0;
    for (const r of rows) {
      ni += this.intAt[r + 1]! - this.intAt[r]!;
      nf += this.numAt[r + 1]! - this.numAt[r]!;
    }
    const ints = new Int32Array(ni);
    const nums = new Float64Array(nf);
    ni = nf = 0;
    for (const r of rows) {
      ints.set(this.ints.subarray(this.intAt[r], this.intAt[r + 1]), ni);
      nums.set(this.nums.subarray(this.numAt[r], this.numAt[r + 1]), nf);
      ni += this.intAt[r + 1]! - this.intAt[r]!;
      nf += this.numAt[r + 1]! - this.numAt[r]!;
    }
    return { ids, ints, nums, used, shapes: this.descs };
  }

  private usedIn(ids: Int32Array): number[] {
    const used = new Set<number>();
    for (let i = 0; i < ids.length; i++) if (ids[i]! >= 0) used.add(ids[i]!);
    return [...used];
  }
}
