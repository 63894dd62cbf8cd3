import { iso } from '../clock.js';
import type { SchemaSettings } from '../catalog/records.js';
import { entryKey, type Shape, type ShapeEntry } from './shape.js';
import { openVersion, sighted, stateRank, staleIfDue, withJoinedShape, type SchemaVersionRecord } from './versions.js';

/**
 * One collection's schema state held in memory by the main thread: versions, the registry of exact
 * shapes seen, and the alias cache (exact shape key → shape hash, bounded by schema_alias_pool).
 * `planBatch` is pure with respect to the book: it returns the records to persist, and the caller
 * calls `apply` only after they are committed, so a failed batch leaves no trace.
 */

/** A distinct exact shape the collection has produced (classified or not). */
export interface ShapeRecord {
  /** The signature hash; unique within the collection. */
  id: string;
  collection_id: string;
  signature: string;
  entries: ShapeEntry[];
  /** Its version, or null while unclassified (past the pools). */
  version_id: string | null;
  rows: number;
  first_seen_at: string;
  last_seen_at: string;
  /**
   * The first record of this shape as sent (capped), used to re-key under finer rules. Kept for
   * classified shapes and the first UNCLASSIFIED_SAMPLE_CAP unclassified ones only.
   */
  sample: string | null;
  /**
   * Rows stored under this shape's signature (`_unclassified/<hash>` files) while it had no
   * version: they are linked to the version it gets, and counted in that version's row_count.
   * Absent on records written before it existed.
   */
  unclassified_rows?: number;
  /** Signature hashes this shape had under earlier rules (files written then carry them). */
  former_ids?: string[];
}

/**
 * Unclassified shapes a collection keeps records of (signature, entries, counts). A new shape past
 * the pools and past this cap is not recorded: its rows go to the `_overflow` file (no signature,
 * never linked) and only their totals are kept (`UnclassifiedOverflow`). Bounds memory and LMDB
 * against keys invented per record.
 */
export const UNCLASSIFIED_SHAPE_CAP = 10_000;
/** (path, type) entries those unclassified records may hold together (one shape has up to 4,096). */
export const UNCLASSIFIED_ENTRY_CAP = 1_000_000;
/** Unclassified shapes whose first record is kept as `sample`; the rest re-key from their entries. */
export const UNCLASSIFIED_SAMPLE_CAP = 256;

/** Totals of unclassified rows whose shapes were past UNCLASSIFIED_SHAPE_CAP (not recorded). */
export interface UnclassifiedOverflow {
  rows: number;
  /** A lower bound of their distinct shapes: the most distinct ones a single batch brought. */
  shapes_min: number;
}

/** What a worker saw of one exact shape in one batch. */
export interface Sighting {
  /** 53-bit shape key (hash.ts). */
  key: number;
  /** Signature hash, 16 hex. */
  hash: string;
  rows: number;
  firstMs: number;
  lastMs: number;
  /** The full shape; required when the book does not know the key (see `unknownKeys`). */
  shape?: Shape;
  sample?: string | null;
}

/** Where one exact shape's rows of a batch go. */
export interface Assignment {
  versionId: string | null;
  shapeHash: string;
}

/** Records to persist for one batch, and the assignment of its shapes. */
export interface BatchPlan {
  assign: Map<number, Assignment>;
  versions: SchemaVersionRecord[];
  shapes: ShapeRecord[];
  aliases: Array<[number, string]>;
  /** Rows (and distinct shapes) of this batch past UNCLASSIFIED_SHAPE_CAP: not recorded, not assigned. */
  overflow: { rows: number; shapes: number };
  /**
   * Ids of `versions` that were settled in the book the plan was made against. Settled in a book
   * of the current generation means settled in LMDB by the time the batch commits (the book is
   * only ahead of LMDB by plans of earlier batches, which commit first or end the generation), so
   * the commit need not read them back (schema-service.ts `stageCommit`). Absent: none known.
   */
  settledBefore?: ReadonlySet<string>;
  /** The book's `handSettles` when the plan was made (schema-service.ts `stageCommit`). */
  handSettles?: number;
}

export type BookSettings = Pick<
  SchemaSettings,
  | 'schema_nulls'
  | 'schema_optional_keys'
  | 'schema_recurrence_gap_ms'
  | 'schema_bulk_rows'
  | 'schema_stale_after_ms'
  | 'schema_identity_limit'
  | 'schema_candidate_pool'
  | 'schema_alias_pool'
>;

export interface BookOwner {
  teamId: string;
  projectId: string;
  collectionId: string;
}

export class SchemaBook {
  readonly versions = new Map<string, SchemaVersionRecord>();
  readonly shapes = new Map<string, ShapeRecord>();
  private readonly bySignature = new Map<string, string>();
  private readonly aliases = new Map<number, string>();
  private nextNumber = 1;
  /** Current shape id of each former id (shapes re-keyed to a new hash). */
  private readonly formerIds = new Map<string, string>();
  /** Unclassified records held: count, entries, and how many keep a sample (bounded by the caps). */
  private readonly held = { shapes: 0, entries: 0, samples: 0 };
  /** Unclassified rows past the shape cap (loaded from and persisted to the collection's meta). */
  overflow: UnclassifiedOverflow = { rows: 0, shapes_min: 0 };
  /** Bumped on every change: cached reports are keyed by (generation, revision). */
  revision = 0;
  /** Entry key → ids of the live versions holding it, at `revision` (see `joinIndexNow`). */
  private joinIndex: { revision: number; byEntry: Map<string, string[]> } | null = null;
  /**
   * Which load of the collection's rules this book is (set by its owner). A re-key builds a new
   * book with a higher generation, so a batch planned against an older one can tell it is stale.
   */
  generation = 0;
  /**
   * Hand settles of the collection this book holds (set by its owner once each is in LMDB and
   * here): a plan carries it, so its commit can tell whether a hand settle landed after it.
   */
  handSettles = 0;

  constructor(
    readonly owner: BookOwner,
    versions: Iterable<SchemaVersionRecord> = [],
    shapes: Iterable<ShapeRecord> = [],
  ) {
    for (const v of versions) this.putVersion(v);
    for (const s of shapes) this.putShape(s);
  }

  /** Live (not merged) versions. */
  live(): SchemaVersionRecord[] {
    return [...this.versions.values()].filter((v) => v.merged_into === null);
  }

  /** The version a (possibly merged) id stands for now. */
  current(id: string): SchemaVersionRecord | undefined {
    let v = this.versions.get(id);
    for (let hops = 0; v && v.merged_into !== null && hops < 64; hops++) v = this.versions.get(v.merged_into);
    return v;
  }

  /** Keys of `keys` the alias cache cannot resolve: the worker must describe those shapes. */
  unknownKeys(keys: Iterable<number>): number[] {
    const out: number[] = [];
    for (const k of keys) if (!this.aliases.has(k)) out.push(k);
    return out;
  }

  /** The stored shape a signature hash names now: its own record, or the one it was re-keyed into. */
  shapeByHash(hash: string): ShapeRecord | undefined {
    return this.shapes.get(hash) ?? this.shapes.get(this.formerIds.get(hash) ?? '');
  }

  /** Recorded unclassified shapes and their rows (rows past the shape cap are in `overflow`). */
  unclassified(): { shapes: number; rows: number } {
    let rows = 0;
    for (const s of this.shapes.values()) if (s.version_id === null) rows += s.rows;
    return { shapes: this.held.shapes, rows };
  }

  /** Unclassified records held (for tests and the caps). */
  heldUnclassified(): { shapes: number; entries: number; samples: number } {
    return { ...this.held };
  }

  /**
   * Resolve a batch's sightings to versions: known shapes keep theirs; a new shape joins a version
   * with the same signature, or (schema_optional_keys auto) one whose keys it is a subset of, or
   * opens a candidate if the pools have room, else stays unclassified. Then each version seen moves
   * state (versions.ts `sighted`), and overdue candidates go stale.
   */
  planBatch(
    sightings: readonly Sighting[],
    nowMs: number,
    settings: BookSettings,
    newVersionId: () => string,
  ): BatchPlan {
    const draftV = new Map<string, SchemaVersionRecord>();
    const draftS = new Map<string, ShapeRecord>();
    const aliases: Array<[number, string]> = [];
    const getV = (id: string) => draftV.get(id) ?? this.versions.get(id);
    let settled = 0;
    let pool = 0;
    for (const v of this.live()) {
      const due = staleIfDue(v, nowMs, settings);
      if (due) draftV.set(v.id, due);
      if (v.state === 'settled') settled++;
      else pool++;
    }
    let nextNumber = this.nextNumber;
    const perVersion = new Map<string, { rows: number; firstMs: number; lastMs: number }>();
    // Rows stored earlier under shapes this batch links to a version (row_count, not the bulk rule).
    const linked = new Map<string, number>();
    const held = { ...this.held };
    const overflow = { rows: 0, shapes: 0 };
    const assign = new Map<number, Assignment>();
    // In order of first sight: by receive time, then (a stable sort) in the order the batch met
    // them — sightings come in the order of each shape's first row.
    const ordered = [...sightings].sort((x, y) => x.firstMs - y.firstMs);

    // Versions this batch opens: later shapes of the same batch may join them too.
    const opened = new OpenedVersions();
    const classify = (shape: Shape, firstMs: number): string | null => {
      const match = this.match(shape, settings, getV, opened);
      if (match) {
        const joined = match.signature_hash === shape.hash ? match : withJoinedShape(match, shape, nowMs);
        draftV.set(match.id, joined);
        return match.id;
      }
      if (settled >= settings.schema_identity_limit || pool >= settings.schema_candidate_pool) return null;
      const v = openVersion({ id: newVersionId(), ...this.owner, number: nextNumber++, shape, firstMs, nowMs });
      draftV.set(v.id, v);
      opened.add(v);
      pool++;
      return v.id;
    };

    for (const s of ordered) {
      const hash = this.aliases.get(s.key) ?? s.hash;
      let rec = draftS.get(hash) ?? this.shapes.get(hash);
      if (!rec) {
        if (!s.shape) throw new Error(`shape ${hash} is new to the book but was not described`);
        const versionId = classify(s.shape, s.firstMs);
        let keepSample = true;
        if (versionId === null) {
          if (held.shapes >= UNCLASSIFIED_SHAPE_CAP || held.entries + s.shape.entries.length > UNCLASSIFIED_ENTRY_CAP) {
            // Past the cap: not recorded, not cached, not assigned (its rows go to `_overflow`).
            overflow.rows += s.rows;
            overflow.shapes++;
            continue;
          }
          held.shapes++;
          held.entries += s.shape.entries.length;
          keepSample = held.samples < UNCLASSIFIED_SAMPLE_CAP;
          if (keepSample) held.samples++;
        }
        rec = {
          id: hash,
          collection_id: this.owner.collectionId,
          signature: s.shape.signature,
          entries: s.shape.entries,
          version_id: versionId,
          rows: 0,
          first_seen_at: iso(s.firstMs),
          last_seen_at: iso(s.firstMs),
          sample: keepSample ? (s.sample ?? null) : null,
          unclassified_rows: 0,
          former_ids: [],
        };
      } else if (rec.version_id === null) {
        // Unclassified before: the pools may have room now. Its stored rows are linked to the version.
        const versionId = classify({ hash: rec.id, signature: rec.signature, entries: rec.entries }, s.firstMs);
        if (versionId) {
          linked.set(versionId, (linked.get(versionId) ?? 0) + (rec.unclassified_rows ?? rec.rows));
          rec = { ...rec, version_id: versionId, unclassified_rows: 0 };
        }
      } else {
        const v = this.current(rec.version_id);
        if (v && v.id !== rec.version_id) rec = { ...rec, version_id: v.id };
      }
      rec = {
        ...rec,
        rows: rec.rows + s.rows,
        last_seen_at: s.lastMs > Date.parse(rec.last_seen_at) ? iso(s.lastMs) : rec.last_seen_at,
      };
      draftS.set(hash, rec);
      if (!this.aliases.has(s.key) && this.aliases.size + aliases.length < settings.schema_alias_pool)
        aliases.push([s.key, hash]);
      assign.set(s.key, { versionId: rec.version_id, shapeHash: hash });
      if (rec.version_id) {
        const acc = perVersion.get(rec.version_id);
        if (acc) {
          acc.rows += s.rows;
          acc.firstMs = Math.min(acc.firstMs, s.firstMs);
          acc.lastMs = Math.max(acc.lastMs, s.lastMs);
        } else perVersion.set(rec.version_id, { rows: s.rows, firstMs: s.firstMs, lastMs: s.lastMs });
      }
    }

    for (const [id, acc] of perVersion) {
      const before = getV(id)!;
      const after = sighted(before, { rows: acc.rows, lastMs: acc.lastMs, nowMs, settledCount: settled }, settings);
      if (after.state === 'settled' && before.state !== 'settled') {
        settled++;
        pool--;
      }
      draftV.set(id, after);
    }
    for (const [id, rows] of linked) {
      const v = getV(id)!;
      draftV.set(id, { ...v, row_count: v.row_count + rows });
    }
    const settledBefore = new Set<string>();
    for (const id of draftV.keys()) if (this.versions.get(id)?.state === 'settled') settledBefore.add(id);
    return {
      assign,
      versions: [...draftV.values()],
      shapes: [...draftS.values()],
      aliases,
      overflow,
      settledBefore,
      handSettles: this.handSettles,
    };
  }

  /** The best version `shape` belongs to under the collection's matching rules, if any. */
  private match(
    shape: Shape,
    settings: BookSettings,
    getV: (id: string) => SchemaVersionRecord | undefined,
    opened: OpenedVersions,
  ): SchemaVersionRecord | undefined {
    const exact = this.bySignature.get(shape.hash);
    if (exact) {
      const v = this.current(exact);
      if (v) return getV(v.id);
    }
    const openedExact = opened.bySignature.get(shape.hash);
    if (openedExact) return getV(openedExact)!;
    const nullsAuto = settings.schema_nulls === 'auto';
    const subsetAuto = settings.schema_optional_keys === 'auto';
    if (!nullsAuto && !subsetAuto) return undefined;
    let best: SchemaVersionRecord | undefined;
    const consider = (v: SchemaVersionRecord) => {
      if (joins(shape, v, nullsAuto, subsetAuto) && (!best || better(v, best))) best = v;
    };
    for (const id of candidatesIn(this.joinIndexNow(), shape, () => this.live().map((v) => v.id))) consider(getV(id)!);
    for (const id of candidatesIn(opened.byEntry, shape, () => opened.ids)) consider(getV(id)!);
    return best;
  }

  /** Entry key → ids of the live versions holding it, rebuilt when the book changed (see `candidatesIn`). */
  private joinIndexNow(): Map<string, string[]> {
    if (!this.joinIndex || this.joinIndex.revision !== this.revision) {
      const byEntry = new Map<string, string[]>();
      for (const v of this.live()) indexEntries(byEntry, v);
      this.joinIndex = { revision: this.revision, byEntry };
    }
    return this.joinIndex.byEntry;
  }

  /** Apply a committed plan. */
  apply(plan: Pick<BatchPlan, 'versions' | 'shapes' | 'aliases'> & Partial<Pick<BatchPlan, 'overflow'>>): void {
    for (const v of plan.versions) this.putVersion(v);
    for (const s of plan.shapes) this.putShape(s);
    for (const [k, h] of plan.aliases) this.aliases.set(k, h);
    if (plan.overflow && plan.overflow.rows > 0) this.overflow = addOverflow(this.overflow, plan.overflow);
    this.revision++;
  }

  /** Store a shape record, keeping the unclassified counters and the former-id index current. */
  private putShape(s: ShapeRecord): void {
    const old = this.shapes.get(s.id);
    if (old && old.version_id === null) {
      this.held.shapes--;
      this.held.entries -= old.entries.length;
      if (old.sample !== null) this.held.samples--;
    }
    if (s.version_id === null) {
      this.held.shapes++;
      this.held.entries += s.entries.length;
      if (s.sample !== null) this.held.samples++;
    }
    this.shapes.set(s.id, s);
    for (const f of s.former_ids ?? []) this.formerIds.set(f, s.id);
  }

  putVersion(v: SchemaVersionRecord): void {
    const old = this.versions.get(v.id);
    // Settled never goes back, even if a stale copy is applied after a hand settle.
    const merged =
      old && stateRank(old.state) === 2 && v.state !== 'settled'
        ? { ...v, state: old.state, settled_at: old.settled_at, settled_by: old.settled_by, stale_at: null }
        : v;
    this.versions.set(v.id, merged);
    if (merged.merged_into === null) this.bySignature.set(merged.signature_hash, merged.id);
    else if (this.bySignature.get(merged.signature_hash) === merged.id) this.bySignature.delete(merged.signature_hash);
    if (v.version >= this.nextNumber) this.nextNumber = v.version + 1;
    this.revision++;
  }
}

/** Overflow totals after a batch's overflow (`shapes`: its distinct past-cap shapes). */
export function addOverflow(o: UnclassifiedOverflow, batch: { rows: number; shapes: number }): UnclassifiedOverflow {
  return { rows: o.rows + batch.rows, shapes_min: Math.max(o.shapes_min, batch.shapes) };
}

/** Preference among matching versions: settled first, then fewer fields, then older. */
function better(a: SchemaVersionRecord, b: SchemaVersionRecord): boolean {
  const ra = stateRank(a.state);
  const rb = stateRank(b.state);
  if (ra !== rb) return ra > rb;
  if (a.entry_keys.length !== b.entry_keys.length) return a.entry_keys.length < b.entry_keys.length;
  return a.version < b.version;
}

const NONE: readonly string[] = [];

/** Versions a batch opens, indexed like the live ones (later shapes of the batch may join them). */
class OpenedVersions {
  readonly ids: string[] = [];
  readonly bySignature = new Map<string, string>();
  readonly byEntry = new Map<string, string[]>();

  add(v: SchemaVersionRecord): void {
    this.ids.push(v.id);
    this.bySignature.set(v.signature_hash, v.id);
    indexEntries(this.byEntry, v);
  }
}

function indexEntries(byEntry: Map<string, string[]>, v: SchemaVersionRecord): void {
  for (const k of v.entry_keys) {
    const ids = byEntry.get(k);
    if (ids) ids.push(v.id);
    else byEntry.set(k, [v.id]);
  }
}

/**
 * Versions `shape` may join among those indexed in `byEntry`: a version it joins holds every
 * non-null entry of the shape, so only those holding its rarest one need checking. A shape with
 * keys no version has — keys invented per record — meets none instead of every version. A shape of
 * nulls only may join any (`all`).
 */
function candidatesIn(
  byEntry: ReadonlyMap<string, readonly string[]>,
  shape: Shape,
  all: () => readonly string[],
): readonly string[] {
  let fewest: readonly string[] | null = null;
  for (const e of shape.entries) {
    if (e.type === 'null') continue;
    const ids = byEntry.get(entryKey(e)) ?? NONE;
    if (!fewest || ids.length < fewest.length) fewest = ids;
    if (ids.length === 0) break;
  }
  return fewest ?? all();
}

/** A version's entry keys and paths as sets, built once per (immutable) entry list. */
const entrySets = new WeakMap<readonly string[], { keys: Set<string>; paths: Set<string> }>();

function entrySetsOf(v: Pick<SchemaVersionRecord, 'entry_keys'>): { keys: Set<string>; paths: Set<string> } {
  let sets = entrySets.get(v.entry_keys);
  if (!sets) {
    sets = { keys: new Set(v.entry_keys), paths: new Set(v.entry_keys.map((k) => k.slice(0, k.indexOf('\u0001')))) };
    entrySets.set(v.entry_keys, sets);
  }
  return sets;
}

/**
 * Whether a shape joins a version: each of its entries is one of the version's, or (nulls auto) a
 * null where the version has the path with another type. With optional keys manual, the shape must
 * also carry every path of the version, except paths below one it has as null.
 */
export function joins(
  shape: Shape,
  v: Pick<SchemaVersionRecord, 'entry_keys'>,
  nullsAuto: boolean,
  subsetAuto: boolean,
): boolean {
  const { keys, paths } = entrySetsOf(v);
  const nullPaths: string[] = [];
  const covered = new Set<string>();
  for (const e of shape.entries) {
    if (keys.has(entryKey(e))) {
      covered.add(e.path);
      continue;
    }
    if (nullsAuto && e.type === 'null' && paths.has(e.path)) {
      covered.add(e.path);
      nullPaths.push(e.path);
      continue;
    }
    return false;
  }
  if (subsetAuto) return true;
  for (const p of paths) {
    if (covered.has(p)) continue;
    if (!nullPaths.some((n) => p.startsWith(n + '.') || p.startsWith(n + '[') || p.startsWith(n + '[]'))) return false;
  }
  return true;
}
