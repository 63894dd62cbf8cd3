import type { ShapeEntry } from './shape.js';
import { countShapesUnder } from './rekey.js';
import { ruleKeyOf, type FingerprintRules } from './rules.js';

/**
 * The detector (spec: Schema proposal): finds object paths whose child keys are being invented —
 * dates, ids, hashes, numbers used as keys — where an opaque path would merge shapes.
 */

export interface SchemaProposal {
  object: 'collection_schema_proposal';
  path: string[];
  tracked: string[];
  content_children: number;
  read_by_mapping: boolean;
  shapes_after: number;
}

/** A stored shape as the detector reads it. */
export interface DetectorShape {
  entries: ShapeEntry[];
  sample: string | null;
}

/** Fewest invented children before a path is proposed. */
export const MIN_CONTENT_CHILDREN = 3;

const DATA_KEY_PATTERNS: RegExp[] = [
  /^\d{4}-\d{2}-\d{2}/, // dates, date-times
  /^\d{1,2}[/.]\d{1,2}[/.]\d{2,4}$/, // local dates
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, // uuids
  /^(?:0x)?[0-9a-f]{12,}$/i, // hashes, hex ids
  /^-?\d+(?:\.\d+)?$/, // numbers
  /^[a-z]{1,8}[_-][0-9a-z]{8,}$/i, // prefixed random ids (usr_8f3k2…)
  /^[0-9a-z]{20,}$/i, // long opaque tokens
  /^\d{1,3}(?:\.\d{1,3}){3}$/, // IPv4 addresses
  /@/, // emails, handles
];

/** Whether an object key reads as data rather than as a field name. */
export function keyLooksLikeData(key: string): boolean {
  return DATA_KEY_PATTERNS.some((re) => re.test(key));
}

interface PathStats {
  path: string[];
  /** Shapes carrying an object at this path. */
  shapes: Set<number>;
  children: Map<string, { shapes: Set<number>; types: Set<string> }>;
}

/** Child keys under every object path of the shapes (arrays transparent, as in rule paths). */
function pathStats(shapes: readonly DetectorShape[]): Map<string, PathStats> {
  const stats = new Map<string, PathStats>();
  const get = (path: string[]) => {
    const k = ruleKeyOf(path);
    let s = stats.get(k);
    if (!s) stats.set(k, (s = { path, shapes: new Set(), children: new Map() }));
    return s;
  };
  shapes.forEach((shape, i) => {
    get([]).shapes.add(i);
    for (const e of shape.entries) {
      const last = e.segments[e.segments.length - 1];
      const keys = e.segments.filter((x): x is string => x !== null);
      if (e.type === 'object') get(keys).shapes.add(i);
      if (last === null || last === undefined) continue;
      const parent = get(keys.slice(0, -1));
      let child = parent.children.get(last);
      if (!child) parent.children.set(last, (child = { shapes: new Set(), types: new Set() }));
      child.shapes.add(i);
      child.types.add(e.type);
    }
  });
  return stats;
}

/**
 * Proposals for `shapes` under `rules`. `readsInside(path)` says whether a bound mapping reads
 * inside the path (no views yet: always false).
 */
export function detectProposals(
  shapes: readonly DetectorShape[],
  rules: FingerprintRules,
  readsInside: (path: string[]) => boolean = () => false,
): SchemaProposal[] {
  const stats = pathStats(shapes);
  const opaque = new Set(rules.opaquePaths.map(ruleKeyOf));
  const found: Array<{ path: string[]; tracked: string[]; content: number }> = [];
  const ordered = [...stats.values()].filter((s) => s.path.length > 0).sort((a, b) => a.path.length - b.path.length);
  for (const s of ordered) {
    if (opaque.has(ruleKeyOf(s.path))) continue;
    if (found.some((f) => f.path.every((seg, i) => s.path[i] === seg))) continue;
    let content = 0;
    const tracked: string[] = [];
    for (const [key, c] of s.children) {
      const invented = keyLooksLikeData(key) || (c.shapes.size === 1 && s.shapes.size >= MIN_CONTENT_CHILDREN);
      if (invented) content++;
      else if (c.shapes.size === s.shapes.size && c.types.size === 1) tracked.push(key);
    }
    if (content >= MIN_CONTENT_CHILDREN && content * 2 >= s.children.size)
      found.push({ path: s.path, tracked: tracked.sort(), content });
  }
  return found.map((f) => {
    const applied: FingerprintRules = {
      opaquePaths: [...rules.opaquePaths, f.path],
      trackedPaths: [...rules.trackedPaths, ...f.tracked.map((t) => [...f.path, t])],
      maxDepth: rules.maxDepth,
    };
    return {
      object: 'collection_schema_proposal' as const,
      path: f.path,
      tracked: f.tracked,
      content_children: f.content,
      read_by_mapping: readsInside(f.path),
      shapes_after: countShapesUnder(applied, shapes),
    };
  });
}

/**
 * spec: keys_look_like_data — every shape's top-level keys are its own (no top-level key is shared
 * by two shapes), so no opaque path can merge them. Needs at least two shapes to say so.
 */
export function keysLookLikeData(shapes: readonly DetectorShape[]): boolean {
  if (shapes.length < 2) return false;
  const root = pathStats(shapes).get('');
  if (!root || root.children.size === 0) return false;
  for (const c of root.children.values()) if (c.shapes.size > 1) return false;
  return true;
}
