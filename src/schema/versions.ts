import { iso } from '../clock.js';
import type { SchemaSettings } from '../catalog/records.js';
import type { Shape, ShapeEntry } from './shape.js';

/**
 * Collection schema versions and their states (spec: States and transitions, "Collection schema
 * version"). Pure functions over records; the caller persists what they return.
 */

export const VERSION_STATES = ['candidate', 'settled', 'stale'] as const;
export type VersionState = (typeof VERSION_STATES)[number];

/** How a version came to be settled. */
export type SettledBy = 'recurrence' | 'bulk' | 'hand';

/** One field of a version: a path with its type(s). */
export interface VersionField {
  /** Rendered path: `user.id`, `items[].sku`, `["a.b"]`. */
  path: string;
  /** One type name, or several joined by `|` (elements of mixed arrays; null accepted by schema_nulls auto). */
  type: string;
  /** Some records of this version lack the path (schema_optional_keys auto). */
  optional: boolean;
}

/** A collection schema version as stored (the API shows it less `entry_keys` and `merged_into`). */
export interface SchemaVersionRecord {
  id: string;
  team_id: string;
  project_id: string;
  collection_id: string;
  /** 1, 2, 3 … in order of first sight within the collection. */
  version: number;
  state: VersionState;
  /** Signature hash (16 hex digits) of the shape that opened the version. */
  signature_hash: string;
  signature: string;
  fields: VersionField[];
  /** `path\u0001type` of the opening shape's entries, for subset matching. */
  entry_keys: string[];
  first_seen_at: string;
  last_seen_at: string;
  settled_at: string | null;
  settled_by: SettledBy | null;
  stale_at: string | null;
  /** Rows stored under this version (classified rows only). */
  row_count: number;
  /** Exact signatures that resolved to this version (the opening one plus optional-key aliases). */
  shape_count: number;
  /** Set when a re-key merged this version into another: the survivor's id. Hidden from lists. */
  merged_into: string | null;
  created_at: string;
  updated_at: string;
}

type Limits = Pick<
  SchemaSettings,
  'schema_recurrence_gap_ms' | 'schema_bulk_rows' | 'schema_stale_after_ms' | 'schema_identity_limit'
>;

/** Fields of a shape, one per path, types joined with `|` in the canonical type order. */
export function fieldsOf(entries: readonly ShapeEntry[]): VersionField[] {
  const byPath = new Map<string, string[]>();
  for (const e of entries) {
    const types = byPath.get(e.path);
    if (types) types.push(e.type);
    else byPath.set(e.path, [e.type]);
  }
  return [...byPath].map(([path, types]) => ({ path, type: types.join('|'), optional: false }));
}

/** A new candidate version opened by `shape`, first seen at `firstMs`. */
export function openVersion(args: {
  id: string;
  teamId: string;
  projectId: string;
  collectionId: string;
  number: number;
  shape: Shape;
  firstMs: number;
  nowMs: number;
}): SchemaVersionRecord {
  const now = iso(args.nowMs);
  const first = iso(args.firstMs);
  return {
    id: args.id,
    team_id: args.teamId,
    project_id: args.projectId,
    collection_id: args.collectionId,
    version: args.number,
    state: 'candidate',
    signature_hash: args.shape.hash,
    signature: args.shape.signature,
    fields: fieldsOf(args.shape.entries),
    entry_keys: args.shape.entries.map((e) => e.path + '\u0001' + e.type),
    first_seen_at: first,
    last_seen_at: first,
    settled_at: null,
    settled_by: null,
    stale_at: null,
    row_count: 0,
    shape_count: 1,
    merged_into: null,
    created_at: now,
    updated_at: now,
  };
}

/**
 * Record a sighting of `rows` rows received between `firstMs` and `lastMs` in one batch, and move
 * the state: a candidate (or stale) version settles when the shape recurs at least
 * `schema_recurrence_gap_ms` after first sight, or arrives `schema_bulk_rows` times in this batch
 * (0 disables); a stale version seen again becomes a candidate. Settling needs room under
 * `schema_identity_limit` (`settledCount` is the collection's current count). Returns a new record.
 */
export function sighted(
  v: SchemaVersionRecord,
  s: { rows: number; lastMs: number; nowMs: number; settledCount: number },
  limits: Limits,
): SchemaVersionRecord {
  const next: SchemaVersionRecord = { ...v, row_count: v.row_count + s.rows, updated_at: iso(s.nowMs) };
  if (s.lastMs > Date.parse(v.last_seen_at)) next.last_seen_at = iso(s.lastMs);
  if (v.state === 'settled') return next;
  const room = s.settledCount < limits.schema_identity_limit;
  const bulk = limits.schema_bulk_rows > 0 && s.rows >= limits.schema_bulk_rows;
  const recurred = s.lastMs - Date.parse(v.first_seen_at) >= limits.schema_recurrence_gap_ms;
  if (room && (bulk || recurred)) {
    next.state = 'settled';
    next.settled_at = iso(s.nowMs);
    next.settled_by = bulk ? 'bulk' : 'recurrence';
    next.stale_at = null;
  } else if (v.state === 'stale') {
    next.state = 'candidate';
    next.stale_at = null;
  }
  return next;
}

/**
 * The state a version is in at `nowMs`: a candidate not seen within `schema_stale_after_ms` is
 * stale even before the sweep persists it (so reads never show an overdue candidate).
 */
export function effectiveState(
  v: SchemaVersionRecord,
  nowMs: number,
  limits: Pick<Limits, 'schema_stale_after_ms'>,
): VersionState {
  if (v.state === 'candidate' && nowMs - Date.parse(v.last_seen_at) >= limits.schema_stale_after_ms) return 'stale';
  return v.state;
}

/**
 * The version as a reader sees it at `nowMs`: a candidate past `schema_stale_after_ms` reads as
 * stale, with the `stale_at` it went stale at, before the next batch stores that.
 */
export function asReadAt(
  v: SchemaVersionRecord,
  nowMs: number,
  limits: Pick<Limits, 'schema_stale_after_ms'>,
): SchemaVersionRecord {
  if (effectiveState(v, nowMs, limits) !== 'stale' || v.state === 'stale') return v;
  return { ...v, state: 'stale', stale_at: iso(Date.parse(v.last_seen_at) + limits.schema_stale_after_ms) };
}

/** The candidate gone stale at `nowMs`, or null when it is not due. */
export function staleIfDue(
  v: SchemaVersionRecord,
  nowMs: number,
  limits: Pick<Limits, 'schema_stale_after_ms'>,
): SchemaVersionRecord | null {
  if (effectiveState(v, nowMs, limits) !== 'stale' || v.state === 'stale') return null;
  const at = Date.parse(v.last_seen_at) + limits.schema_stale_after_ms;
  return { ...v, state: 'stale', stale_at: iso(at), updated_at: iso(nowMs) };
}

/** Outcome of settling by hand. */
export type SettleOutcome =
  | { ok: true; version: SchemaVersionRecord }
  | { ok: false; reason: 'already_settled' | 'identity_limit' };

/** Settle by hand (POST .../schemas/:id {state: 'settled'}); a settled version is left as is. */
export function settleByHand(
  v: SchemaVersionRecord,
  nowMs: number,
  settledCount: number,
  limits: Pick<Limits, 'schema_identity_limit'>,
): SettleOutcome {
  if (v.state === 'settled') return { ok: false, reason: 'already_settled' };
  if (settledCount >= limits.schema_identity_limit) return { ok: false, reason: 'identity_limit' };
  return {
    ok: true,
    version: {
      ...v,
      state: 'settled',
      settled_at: iso(nowMs),
      settled_by: 'hand',
      stale_at: null,
      updated_at: iso(nowMs),
    },
  };
}

/** Rank for merging concurrent or re-keyed copies: settled never goes back. */
export function stateRank(s: VersionState): number {
  return s === 'settled' ? 2 : s === 'candidate' ? 1 : 0;
}

/** Mark paths of `v` that a joining subset shape lacks as optional (and add `null` where it was accepted). */
export function withJoinedShape(v: SchemaVersionRecord, shape: Shape, nowMs: number): SchemaVersionRecord {
  const present = new Map<string, Set<string>>();
  for (const e of shape.entries) {
    let t = present.get(e.path);
    if (!t) present.set(e.path, (t = new Set()));
    t.add(e.type);
  }
  let changed = false;
  const fields = v.fields.map((f) => {
    const types = present.get(f.path);
    if (!types) {
      if (f.optional) return f;
      changed = true;
      return { ...f, optional: true };
    }
    if (types.has('null') && !f.type.split('|').includes('null')) {
      changed = true;
      return { ...f, type: f.type + '|null' };
    }
    return f;
  });
  return { ...v, fields: changed ? fields : v.fields, shape_count: v.shape_count + 1, updated_at: iso(nowMs) };
}
