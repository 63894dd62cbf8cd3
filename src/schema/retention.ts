import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { CollectionRecord } from '../catalog/records.js';
import type { ShapeRecord } from './book.js';
import type { FileManifest, SchemaStore } from './schema-store.js';
import type { SchemaVersionRecord } from './versions.js';

/**
 * Retention of unclassified rows (spec: schema_unclassified_retention_days): files whose rows have
 * no settled version are removed once older than the retention, and their rows taken back out of
 * the committed counts.
 */

/** What a purge needs of the owner of the collection's book. */
export interface RetentionBooks {
  /** From now on, a batch planned against the held book cannot commit (its commit finds it stale). */
  fence(): void;
  /** Forget the held book: the next use loads it from LMDB, purge included. */
  reload(): void;
}

/**
 * Remove files of rows without a settled version older than the retention, and take their rows
 * back out of the counts (version `row_count`, shape rows, the report's unclassified rows). A
 * `_mixed` file goes when none of its versions is settled. Returns the manifests removed (their
 * files, in `dir`, are gone too).
 *
 * Which files go is decided inside the write transaction, on what is committed: a version
 * settled (by hand or by a batch) just before is seen, a file another purge removed is skipped.
 * Batches planned before the purge cannot commit (they run again on the book reloaded after it).
 */
export async function purgeUnclassified(
  db: SchemaStore,
  c: CollectionRecord,
  nowMs: number,
  dir: string,
  books: RetentionBooks,
): Promise<FileManifest[]> {
  const days = c.schema_unclassified_retention_days;
  if (days === null) return [];
  const cutoff = nowMs - days * 86_400_000;
  // Age by arrival (the commit of the batch, just after it), not by the records' own
  // timestamps: a backfill of old events is kept the full retention like any other rows.
  const old = db.files.list(c.id).filter((m) => Date.parse(m.created_at) < cutoff);
  if (old.length === 0) return [];
  books.fence();
  let due: FileManifest[];
  try {
    due = await db.store.transaction(() => {
      const committed = new CommittedSchema(db, c.id);
      const out = old.filter((m) => db.files.get(c.id, m.id) !== undefined && committed.withoutSettledVersion(m));
      for (const m of out) void db.files.remove(c.id, m.id);
      uncount(db, c.id, out, committed);
      return out;
    });
  } finally {
    books.reload();
  }
  for (const m of due) rmSync(join(dir, m.id), { force: true });
  return due;
}

/** Inside the purge transaction: subtract the removed files' rows from what is committed. */
function uncount(
  db: SchemaStore,
  collectionId: string,
  removed: readonly FileManifest[],
  committed: CommittedSchema,
): void {
  const versions = new Map<string, SchemaVersionRecord>();
  const shapes = new Map<string, ShapeRecord>();
  const takeRows = (versionId: string, n: number) => {
    const v = committed.version(versionId, versions);
    if (v) versions.set(v.id, { ...v, row_count: Math.max(0, v.row_count - n) });
  };
  let overflow = 0;
  for (const m of removed) {
    if (!m.counts) continue;
    for (const [id, n] of Object.entries(m.counts.versions)) takeRows(id, n);
    for (const [hash, n] of Object.entries(m.counts.shapes)) {
      const found = committed.shape(hash);
      if (!found) continue;
      const s = shapes.get(found.id) ?? found;
      let next: ShapeRecord = { ...s, rows: Math.max(0, s.rows - n) };
      if (m.kind === 'unclassified') {
        // Rows stored unclassified count in the shape until it is linked, then in its version.
        if (s.version_id === null) next = { ...next, unclassified_rows: Math.max(0, (s.unclassified_rows ?? 0) - n) };
        else takeRows(s.version_id, n);
      }
      shapes.set(s.id, next);
    }
    overflow += m.counts.overflow;
  }
  for (const v of versions.values()) void db.versions.put(collectionId, v);
  for (const s of shapes.values()) void db.shapes.put(collectionId, s);
  const meta = db.meta.get(collectionId);
  if (overflow > 0 && meta?.unclassified_overflow) {
    void db.meta.put(collectionId, {
      ...meta,
      unclassified_overflow: {
        ...meta.unclassified_overflow,
        rows: Math.max(0, meta.unclassified_overflow.rows - overflow),
      },
    });
  }
}

/** A collection's versions and shapes as committed, read inside a transaction (retention decides on these). */
class CommittedSchema {
  private shapesByHash: Map<string, ShapeRecord> | null = null;

  constructor(
    private readonly db: SchemaStore,
    private readonly collectionId: string,
  ) {}

  /** The version rows of `id` count in now (a re-key may have merged it), preferring `pending` updates. */
  version(id: string, pending?: ReadonlyMap<string, SchemaVersionRecord>): SchemaVersionRecord | undefined {
    let v = pending?.get(id) ?? this.db.versions.get(this.collectionId, id);
    for (let hops = 0; v?.merged_into && hops < 64; hops++)
      v = pending?.get(v.merged_into) ?? this.db.versions.get(this.collectionId, v.merged_into);
    return v;
  }

  /** The shape record a signature hash names now (its own id, or one it had before a re-key). */
  shape(hash: string): ShapeRecord | undefined {
    if (!this.shapesByHash) {
      this.shapesByHash = new Map();
      for (const s of this.db.shapes.list(this.collectionId)) {
        this.shapesByHash.set(s.id, s);
        for (const f of s.former_ids ?? []) if (!this.shapesByHash.has(f)) this.shapesByHash.set(f, s);
      }
    }
    return this.shapesByHash.get(hash);
  }

  private settled(versionId: string): boolean {
    return this.version(versionId)?.state === 'settled';
  }

  /** Whether none of a file's rows has a settled version (retention may remove it). */
  withoutSettledVersion(m: FileManifest): boolean {
    if (m.kind === 'version') return !this.settled(m.version_id!);
    // A file of an earlier release does not say which versions it mixes: kept.
    if (m.kind === 'mixed')
      return m.counts !== undefined && !Object.keys(m.counts.versions).some((id) => this.settled(id));
    if (m.kind === 'unclassified') {
      const linked = this.shape(m.shape_hash!)?.version_id;
      return !linked || !this.settled(linked);
    }
    return true;
  }
}
