import { fmix32, hashHex, hashKey, hashStringA, hashStringB, mixA, mixB } from './hash.js';
import { compileRules, ruleKeyOf, type CompiledRules, type FingerprintRules } from './rules.js';
import {
  compareEntries,
  renderPath,
  TYPE_NAMES,
  T_ARRAY,
  T_BOOLEAN,
  T_NULL,
  T_NUMBER,
  T_OBJECT,
  T_STRING,
  type Segment,
  type Shape,
  type ShapeEntry,
} from './shape.js';

/** Keys longer than this take part in identity by their first MAX_KEY_CHARS characters plus `…`. */
export const MAX_KEY_CHARS = 256;
/** Elements of one array examined for the element type union (the rest are stored, not typed). */
export const MAX_ARRAY_ELEMENTS = 10_000;
/** A record whose shape has more (path, type) entries than this is refused classification. */
export const MAX_SHAPE_ENTRIES = 4096;
/** Cached path nodes per fingerprinter; past it new paths are built per record (slower, still right). */
export const MAX_PATH_NODES = 50_000;

/** Why a record could not be fingerprinted. Such rows are kept, unclassified, with the reason. */
export type RefusalReason = 'not_an_object' | 'too_many_fields';
export const REFUSED_NOT_OBJECT = -1;
export const REFUSED_TOO_MANY_FIELDS = -2;

export function refusalReason(code: number): RefusalReason {
  return code === REFUSED_NOT_OBJECT ? 'not_an_object' : 'too_many_fields';
}

const ELEMENT_A = 0x5f3759df;
const ELEMENT_B = 0x2545f491;

/**
 * One path of the collection, with everything the walk needs precomputed: its hash lanes, the
 * per-type entry hashes, and what the rules say about it. Built once per path and cached.
 */
class PathNode {
  readonly entryA = new Int32Array(6);
  readonly entryB = new Int32Array(6);
  children: Map<string, PathNode> | null = null;
  element: PathNode | null = null;
  /**
   * The sibling key that followed this node last time, and its node: records of one shape list
   * their keys in the same order, so the next key is usually this one (a pointer comparison of
   * two internalized strings instead of a map lookup).
   */
  nextKey: string | null = null;
  nextNode: PathNode | null = null;
  /** The same for the first key inside this node. */
  firstKey: string | null = null;
  firstNode: PathNode | null = null;
  /** Whether this node's own type takes part in identity (false for elements of an opaque array). */
  readonly recordSelf: boolean;
  /** Whether the walk goes inside an object or array found here. */
  readonly descend: boolean;
  /** Under an opaque path: only children whose key is in this set are visited. null: all are. */
  readonly onlyKeys: Set<string> | null;

  constructor(
    readonly segments: readonly Segment[],
    /** Key segments only (arrays are transparent to rule paths). */
    readonly ruleKey: string,
    readonly depth: number,
    readonly a: number,
    readonly b: number,
    opaque: boolean,
    recordSelf: boolean,
    rules: CompiledRules,
  ) {
    for (let t = 0; t < 6; t++) {
      this.entryA[t] = fmix32(a + Math.imul(t + 1, 0x9e3779b1));
      this.entryB[t] = fmix32(b ^ Math.imul(t + 1, 0x85ebca77));
    }
    this.recordSelf = recordSelf;
    this.onlyKeys = opaque ? (rules.towardsTracked.get(ruleKey) ?? EMPTY) : null;
    this.descend = depth < rules.maxDepth && (!opaque || this.onlyKeys!.size > 0);
  }
}

const EMPTY: Set<string> = new Set();

/** Result lanes of the last `fingerprint` call. */
export interface FingerprintLanes {
  a: number;
  b: number;
}

/**
 * Takes the typed shape of records under one collection's rules. `fingerprint` is the hot path:
 * no allocation per record once the collection's paths are cached, O(fields) work, no recursion
 * past `max_depth` (so 10,000-level nesting costs nothing). `describe` is the slow path used once
 * per new shape. Not thread-safe; one per worker per collection.
 */
export class Fingerprinter {
  readonly rules: CompiledRules;
  private readonly root: PathNode;
  private nodeCount = 0;
  // Running sums of the entry hashes (order-independent shape identity).
  private sumA = 0;
  private sumB = 0;
  private entries = 0;
  private arrayDepth = 0;
  // Dedupe of entries met inside arrays (elements repeat the same paths): open addressing with a
  // generation stamp instead of clearing.
  private readonly seenA = new Int32Array(MAX_SHAPE_ENTRIES * 2);
  private readonly seenB = new Int32Array(MAX_SHAPE_ENTRIES * 2);
  private readonly seenGen = new Uint32Array(MAX_SHAPE_ENTRIES * 2);
  private gen = 0;
  // Collect mode (describe): nodes and tags of the entries, in visit order.
  private collecting = false;
  private readonly collectNodes: PathNode[] = [];
  private readonly collectTags: number[] = [];
  /** Lanes of the last successful fingerprint. */
  readonly last: FingerprintLanes = { a: 0, b: 0 };

  constructor(rules: FingerprintRules) {
    this.rules = compileRules(rules);
    this.root = new PathNode([], '', 0, 0x2f1c3b5d, 0x7a4d9e21, this.rules.opaque.has(''), true, this.rules);
  }

  /**
   * The shape key (a 53-bit integer, see hash.ts) of `record`, or a negative refusal code
   * (REFUSED_NOT_OBJECT, REFUSED_TOO_MANY_FIELDS). Lanes of the full 64-bit hash are in `last`.
   */
  fingerprint(record: unknown): number {
    if (typeof record !== 'object' || record === null || Array.isArray(record)) return REFUSED_NOT_OBJECT;
    this.sumA = 0;
    this.sumB = 0;
    this.entries = 0;
    this.arrayDepth = 0;
    this.gen = (this.gen + 1) >>> 0;
    if (this.gen === 0) {
      this.seenGen.fill(0);
      this.gen = 1;
    }
    this.walkObject(record as Record<string, unknown>, this.root);
    if (this.entries > MAX_SHAPE_ENTRIES) return REFUSED_TOO_MANY_FIELDS;
    this.last.a = this.sumA >>> 0;
    this.last.b = this.sumB >>> 0;
    return hashKey(this.sumA, this.sumB);
  }

  /** The full shape of `record` (slow path: once per new shape), or a refusal code. */
  describe(record: unknown): Shape | number {
    this.collecting = true;
    this.collectNodes.length = 0;
    this.collectTags.length = 0;
    let key: number;
    try {
      key = this.fingerprint(record);
    } finally {
      this.collecting = false;
    }
    if (key < 0) return key;
    const entries: ShapeEntry[] = [];
    for (let i = 0; i < this.collectNodes.length; i++) {
      const node = this.collectNodes[i]!;
      entries.push({
        path: renderPath(node.segments),
        segments: node.segments.slice(),
        type: TYPE_NAMES[this.collectTags[i]!]!,
      });
    }
    entries.sort(compareEntries);
    return {
      hash: hashHex(this.last.a, this.last.b),
      signature: entries.map((e) => `${e.path}:${e.type}`).join(','),
      entries,
    };
  }

  private walkObject(obj: Record<string, unknown>, node: PathNode): void {
    const only = node.onlyKeys;
    let prev: PathNode | null = null;
    for (const key in obj) {
      if (only !== null && !only.has(key)) continue;
      let child: PathNode;
      if (prev === null) {
        if (node.firstKey === key) child = node.firstNode!;
        else {
          child = this.child(node, key);
          node.firstKey = key;
          node.firstNode = child;
        }
      } else if (prev.nextKey === key) child = prev.nextNode!;
      else {
        child = this.child(node, key);
        prev.nextKey = key;
        prev.nextNode = child;
      }
      prev = child;
      if (key.length > MAX_KEY_CHARS) {
        // Keys truncated to the same path are one path: their entries are deduped like the elements
        // of an array (the path's types are the union), never added twice to the hash.
        this.arrayDepth++;
        this.visit(obj[key], child);
        this.arrayDepth--;
      } else this.visit(obj[key], child);
    }
  }

  private visit(v: unknown, node: PathNode): void {
    let tag: number;
    switch (typeof v) {
      case 'string':
        tag = T_STRING;
        break;
      case 'number':
        tag = T_NUMBER;
        break;
      case 'boolean':
        tag = T_BOOLEAN;
        break;
      case 'object':
        tag = v === null ? T_NULL : Array.isArray(v) ? T_ARRAY : T_OBJECT;
        break;
      default:
        // undefined, bigint, function: cannot come from JSON.parse; typed as null to stay total.
        tag = T_NULL;
    }
    if (node.recordSelf) this.record(node, tag);
    if (!node.descend || this.entries > MAX_SHAPE_ENTRIES) return;
    if (tag === T_OBJECT) this.walkObject(v as Record<string, unknown>, node);
    else if (tag === T_ARRAY) {
      const arr = v as unknown[];
      const el = this.elementOf(node);
      const n = arr.length < MAX_ARRAY_ELEMENTS ? arr.length : MAX_ARRAY_ELEMENTS;
      this.arrayDepth++;
      for (let i = 0; i < n; i++) this.visit(arr[i], el);
      this.arrayDepth--;
    }
  }

  private record(node: PathNode, tag: number): void {
    const ea = node.entryA[tag]!;
    const eb = node.entryB[tag]!;
    if (this.arrayDepth > 0 && !this.firstSighting(ea, eb)) return;
    this.sumA = (this.sumA + ea) | 0;
    this.sumB = (this.sumB + eb) | 0;
    this.entries++;
    if (this.collecting && this.entries <= MAX_SHAPE_ENTRIES) {
      this.collectNodes.push(node);
      this.collectTags.push(tag);
    }
  }

  /** True the first time an entry is met in this record (inside arrays, where paths repeat). */
  private firstSighting(ea: number, eb: number): boolean {
    const mask = this.seenGen.length - 1;
    let slot = (ea ^ Math.imul(eb, 0x9e3779b1)) & mask;
    for (let probes = 0; probes <= mask; probes++) {
      if (this.seenGen[slot] !== this.gen) {
        this.seenGen[slot] = this.gen;
        this.seenA[slot] = ea;
        this.seenB[slot] = eb;
        return true;
      }
      if (this.seenA[slot] === ea && this.seenB[slot] === eb) return false;
      slot = (slot + 1) & mask;
    }
    // Table full: more distinct entries than MAX_SHAPE_ENTRIES * 2; the record is refused anyway.
    this.entries = MAX_SHAPE_ENTRIES + 1;
    return false;
  }

  private child(parent: PathNode, rawKey: string): PathNode {
    let children = parent.children;
    // Cached by the key as it takes part: long keys with the same first characters share a node.
    const key = rawKey.length > MAX_KEY_CHARS ? rawKey.slice(0, MAX_KEY_CHARS) + '\u2026' : rawKey;
    if (children !== null) {
      const hit = children.get(key);
      if (hit !== undefined) return hit;
    }
    const ruleKey = parent.ruleKey === '' && parent.depth === 0 ? ruleKeyOf([key]) : parent.ruleKey + '\u0000' + key;
    const r = this.rules;
    // Under an opaque path a child is visited only on the way to a tracked path; a tracked path
    // itself takes part fully unless it is itself opaque.
    const opaque = parent.onlyKeys !== null ? r.opaque.has(ruleKey) || !r.tracked.has(ruleKey) : r.opaque.has(ruleKey);
    const node = new PathNode(
      [...parent.segments, key],
      ruleKey,
      parent.depth + 1,
      mixA(parent.a, hashStringA(key)),
      mixB(parent.b, hashStringB(key)),
      opaque,
      true,
      r,
    );
    if (this.nodeCount < MAX_PATH_NODES) {
      if (children === null) parent.children = children = new Map();
      children.set(key, node);
      this.nodeCount++;
    }
    return node;
  }

  private elementOf(parent: PathNode): PathNode {
    if (parent.element !== null) return parent.element;
    // Elements share their array's rule path ("a path naming an array covers its elements"); the
    // elements of an opaque array do not record their own types, only tracked children.
    const opaque = parent.onlyKeys !== null;
    const node = new PathNode(
      [...parent.segments, null],
      parent.ruleKey,
      parent.depth + 1,
      mixA(parent.a, ELEMENT_A),
      mixB(parent.b, ELEMENT_B),
      opaque,
      !opaque,
      this.rules,
    );
    if (this.nodeCount < MAX_PATH_NODES) {
      parent.element = node;
      this.nodeCount++;
    }
    return node;
  }
}

/** One-off convenience: the shape of `record` under `rules` (tests, previews). */
export function describeRecord(rules: FingerprintRules, record: unknown): Shape | number {
  return new Fingerprinter(rules).describe(record);
}
