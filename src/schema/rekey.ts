import { iso } from '../clock.js';
import { Fingerprinter } from './fingerprint.js';
import type { FingerprintRules } from './rules.js';
import type { Segment, Shape, ShapeEntry } from './shape.js';
import type { ShapeRecord } from './book.js';
import { fieldsOf, stateRank, type SchemaVersionRecord } from './versions.js';

/**
 * Re-keying: the collection's history of shapes fingerprinted again under new rules. Each stored
 * shape is re-described from its sample record (exact when the record is kept) or, failing that,
 * from a skeleton record built from its entries — exact whenever the new rules are coarser (more
 * opaque paths, lower depth), which is the direction proposals take.
 */

const VALUE_OF: Record<string, () => unknown> = {
  string: () => '',
  number: () => 0,
  boolean: () => false,
  null: () => null,
  object: () => ({}),
  array: () => [],
};

function typeOfValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/** A record having exactly the given shape (one element per distinct element type in arrays). */
export function skeletonOf(entries: readonly ShapeEntry[]): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  const sorted = [...entries].sort((a, b) => a.segments.length - b.segments.length);
  for (const e of sorted) place(root, e.segments, e.type);
  return root;
}

function place(root: Record<string, unknown>, segments: readonly Segment[], type: string): void {
  let container: unknown = root;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i] as Segment;
    const last = i === segments.length - 1;
    const wantType = last ? type : segments[i + 1] === null ? 'array' : 'object';
    if (seg === null) {
      if (!Array.isArray(container)) return;
      let el = container.find((x) => typeOfValue(x) === wantType);
      if (el === undefined) container.push((el = VALUE_OF[wantType]!()));
      container = el;
    } else {
      if (typeof container !== 'object' || container === null || Array.isArray(container)) return;
      const obj = container as Record<string, unknown>;
      // Own properties only, defined rather than assigned: keys such as `constructor` or
      // `__proto__` are data like any other (assigning `__proto__` would set the prototype).
      if (!Object.hasOwn(obj, seg))
        Object.defineProperty(obj, seg, {
          value: VALUE_OF[wantType]!(),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      container = obj[seg];
    }
  }
}

/** The shape a stored shape takes under `fp`'s rules (sample first, skeleton as fallback). */
export function reshape(fp: Fingerprinter, s: Pick<ShapeRecord, 'entries' | 'sample'>): Shape {
  if (s.sample !== null) {
    try {
      const out = fp.describe(JSON.parse(s.sample));
      if (typeof out !== 'number') return out;
    } catch {
      // A sample that no longer parses falls back to the skeleton.
    }
  }
  const out = fp.describe(skeletonOf(s.entries));
  if (typeof out === 'number') throw new Error('a skeleton record was refused');
  return out;
}

/** Distinct shapes the stored shapes collapse to under `rules` (`shapes.after` of a report). */
export function countShapesUnder(
  rules: FingerprintRules,
  shapes: Iterable<Pick<ShapeRecord, 'entries' | 'sample'>>,
): number {
  const fp = new Fingerprinter(rules);
  const seen = new Set<string>();
  for (const s of shapes) seen.add(reshape(fp, s).hash);
  return seen.size;
}

/** Result of a re-key: the full new state of the collection's versions and shapes. */
export interface RekeyResult {
  versions: SchemaVersionRecord[];
  shapes: ShapeRecord[];
  /** Shape ids (old hashes) that no longer exist. */
  removedShapes: string[];
  merged: number;
}

/**
 * Re-fingerprint every stored shape under `rules`; versions whose shapes now coincide merge into
 * one (the survivor: settled first, then the oldest), summing rows, and the others are kept as
 * `merged_into` the survivor so files and links naming them still resolve.
 */
export function rekey(
  rules: FingerprintRules,
  versions: readonly SchemaVersionRecord[],
  shapes: readonly ShapeRecord[],
  nowMs: number,
): RekeyResult {
  const fp = new Fingerprinter(rules);
  const now = iso(nowMs);
  const live = versions.filter((v) => v.merged_into === null);
  const byId = new Map(versions.map((v) => [v.id, v]));
  // New shape of each version: from its opening shape's stored record when present.
  const shapeById = new Map(shapes.map((s) => [s.id, s]));
  const groups = new Map<string, { shape: Shape; members: SchemaVersionRecord[] }>();
  for (const v of live) {
    const opening = shapeById.get(v.signature_hash);
    const shape = reshape(fp, opening ?? { entries: entriesOfVersion(v), sample: null });
    const g = groups.get(shape.hash);
    if (g) g.members.push(v);
    else groups.set(shape.hash, { shape, members: [v] });
  }
  const out = new Map<string, SchemaVersionRecord>();
  const survivorOf = new Map<string, string>();
  let merged = 0;
  for (const { shape, members } of groups.values()) {
    members.sort((a, b) => stateRank(b.state) - stateRank(a.state) || a.version - b.version);
    const head = members[0]!;
    const survivor: SchemaVersionRecord = {
      ...head,
      signature_hash: shape.hash,
      signature: shape.signature,
      fields: fieldsOf(shape.entries),
      entry_keys: shape.entries.map((e) => e.path + '\u0001' + e.type),
      first_seen_at: members.map((m) => m.first_seen_at).sort()[0]!,
      last_seen_at: members
        .map((m) => m.last_seen_at)
        .sort()
        .at(-1)!,
      row_count: members.reduce((n, m) => n + m.row_count, 0),
      shape_count: members.reduce((n, m) => n + m.shape_count, 0),
      updated_at: now,
    };
    out.set(survivor.id, survivor);
    for (const m of members) survivorOf.set(m.id, survivor.id);
    for (const m of members.slice(1)) {
      out.set(m.id, { ...m, merged_into: survivor.id, updated_at: now });
      merged++;
    }
  }
  for (const v of versions) {
    if (!out.has(v.id))
      out.set(
        v.id,
        v.merged_into !== null && survivorOf.has(v.merged_into)
          ? { ...v, merged_into: survivorOf.get(v.merged_into)! }
          : v,
      );
  }
  // Shapes: re-described, coinciding ones summed; an unclassified shape landing on a version's
  // signature joins it. Each new record remembers the ids its members had (`former_ids`): files
  // written under them carry those hashes, and docs / retention resolve them through it.
  const survivorBySig = new Map<string, string>();
  for (const v of out.values()) if (v.merged_into === null) survivorBySig.set(v.signature_hash, v.id);
  const newShapes = new Map<string, ShapeRecord>();
  const membersOf = new Map<string, ShapeRecord[]>();
  for (const s of shapes) {
    const shape = reshape(fp, s);
    const versionId =
      s.version_id !== null
        ? (survivorOf.get(byId.get(s.version_id)?.merged_into ?? s.version_id) ?? s.version_id)
        : (survivorBySig.get(shape.hash) ?? null);
    const prev = newShapes.get(shape.hash);
    const group = membersOf.get(shape.hash);
    if (group) group.push(s);
    else membersOf.set(shape.hash, [s]);
    if (prev) {
      newShapes.set(shape.hash, {
        ...prev,
        version_id: prev.version_id ?? versionId,
        rows: prev.rows + s.rows,
        first_seen_at: prev.first_seen_at < s.first_seen_at ? prev.first_seen_at : s.first_seen_at,
        last_seen_at: prev.last_seen_at > s.last_seen_at ? prev.last_seen_at : s.last_seen_at,
        sample: prev.sample ?? s.sample,
      });
    } else
      newShapes.set(shape.hash, {
        ...s,
        id: shape.hash,
        signature: shape.signature,
        entries: shape.entries,
        version_id: versionId,
      });
  }
  const rowsLinked = new Map<string, number>();
  for (const [hash, members] of membersOf) {
    const rec = newShapes.get(hash)!;
    const former = new Set<string>();
    for (const m of members) {
      if (m.id !== hash) former.add(m.id);
      for (const f of m.former_ids ?? []) if (f !== hash) former.add(f);
    }
    // Rows stored without a version under the members; linked (and counted) when the record now has one.
    const unlinked = members.reduce((n, m) => n + (m.version_id === null ? (m.unclassified_rows ?? m.rows) : 0), 0);
    if (rec.version_id !== null && unlinked > 0)
      rowsLinked.set(rec.version_id, (rowsLinked.get(rec.version_id) ?? 0) + unlinked);
    newShapes.set(hash, { ...rec, former_ids: [...former], unclassified_rows: rec.version_id === null ? unlinked : 0 });
  }
  for (const [id, rows] of rowsLinked) {
    const v = out.get(id);
    if (v) out.set(id, { ...v, row_count: v.row_count + rows });
  }
  const removedShapes = shapes.map((s) => s.id).filter((id) => !newShapes.has(id));
  return { versions: [...out.values()], shapes: [...newShapes.values()], removedShapes, merged };
}

/** Entries of a version rebuilt from its entry keys (when its opening shape record is gone). */
function entriesOfVersion(v: SchemaVersionRecord): ShapeEntry[] {
  return v.entry_keys.map((k) => {
    const i = k.indexOf('\u0001');
    const path = k.slice(0, i);
    return { path, segments: parseRenderedPath(path), type: k.slice(i + 1) as ShapeEntry['type'] };
  });
}

/** Inverse of shape.ts `renderPath`. */
export function parseRenderedPath(path: string): Segment[] {
  const out: Segment[] = [];
  let i = 0;
  while (i < path.length) {
    if (path.startsWith('[]', i)) {
      out.push(null);
      i += 2;
    } else if (path[i] === '[') {
      // ["…"]: a JSON string up to the matching `"]`.
      let j = i + 2;
      while (j < path.length && path[j] !== '"') j += path[j] === '\\' ? 2 : 1;
      out.push(JSON.parse(path.slice(i + 1, j + 1)) as string);
      i = j + 2;
    } else {
      if (path[i] === '.') i++;
      let j = i;
      while (j < path.length && path[j] !== '.' && path[j] !== '[') j++;
      out.push(path.slice(i, j));
      i = j;
    }
  }
  return out;
}
