import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Clock } from '../clock.js';
import type { CollectionRecord } from '../catalog/records.js';
import { ApiError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/db.js';
import { SchemaBook, type BatchPlan } from '../schema/book.js';
import { FileReader } from '../schema/file-reader.js';
import { rekey } from '../schema/rekey.js';
import { buildReport, type SchemaReport } from '../schema/report.js';
import { rulesKey, rulesOf, type FingerprintRules } from '../schema/rules.js';
import { effectiveState, settleByHand, staleIfDue, type SchemaVersionRecord } from '../schema/versions.js';
import type { WrittenFile } from './process-batch.js';
import { SchemaStore, type FileManifest } from './schema-store.js';

/** Per-collection totals derived from manifests and versions. */
export interface CollectionSchemaStats {
  /** Documents as sent in the collection's files, bytes. */
  docBytes: number;
  /** Live schema versions (every state). */
  schemaCount: number;
}

/**
 * The main thread's owner of collection schemas: one `SchemaBook` per collection loaded from LMDB
 * on first use, re-keyed when the collection's identity rules changed, the file manifests, and the
 * reads behind the schema routes. Writes happen only in `stageCommit` (inside the spool's
 * completion transaction), `settle`, and re-keying.
 */
export class SchemaService {
  readonly db: SchemaStore;
  private readonly books = new Map<string, { book: Promise<SchemaBook>; rulesKey: string }>();
  private readonly stats = new Map<string, CollectionSchemaStats>();
  private reader: Promise<FileReader> | null = null;

  constructor(
    store: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
    readonly dataDir: string,
  ) {
    this.db = new SchemaStore(store);
    for (const { scope, value } of this.db.files.all()) this.statsOf(scope).docBytes += value.doc_bytes;
    for (const { scope, value } of this.db.versions.all()) if (value.merged_into === null) this.statsOf(scope).schemaCount++;
  }

  private statsOf(collectionId: string): CollectionSchemaStats {
    let s = this.stats.get(collectionId);
    if (!s) this.stats.set(collectionId, (s = { docBytes: 0, schemaCount: 0 }));
    return s;
  }

  /** storage_gb and schema_count of a collection (serializers call this). */
  collectionStats(collectionId: string): CollectionSchemaStats {
    return { ...(this.stats.get(collectionId) ?? { docBytes: 0, schemaCount: 0 }) };
  }

  /** Absolute directory of a collection's files. */
  filesDir(c: Pick<CollectionRecord, 'project_id' | 'id'>): string {
    return join(this.dataDir, 'files', c.project_id, c.id);
  }

  /**
   * The collection's book, loaded on first use. When the identity rules changed since the stored
   * shapes were taken, the history is re-keyed first (persisted), so every read and every batch
   * sees the current rules.
   */
  book(c: CollectionRecord): Promise<SchemaBook> {
    const key = rulesKey(rulesOf(c));
    const cached = this.books.get(c.id);
    if (cached && cached.rulesKey === key) return cached.book;
    // One load (or re-key) per collection at a time: concurrent callers share it.
    const loading = (async () => {
      const previous = cached ? await cached.book.catch(() => null) : null;
      const owner = { teamId: c.team_id, projectId: c.project_id, collectionId: c.id };
      const book = previous ?? new SchemaBook(owner, this.db.versions.list(c.id), this.db.shapes.list(c.id));
      const stored = this.db.meta.get(c.id)?.rules_key;
      if (stored !== undefined && stored !== key) await this.rekey(c, book, key);
      else if (stored === undefined) await this.db.meta.put(c.id, { rules_key: key });
      this.statsOf(c.id).schemaCount = book.live().length;
      return book;
    })();
    this.books.set(c.id, { book: loading, rulesKey: key });
    loading.catch(() => this.books.delete(c.id));
    return loading;
  }

  /** The book instance currently held for a collection (to detect a re-key during a batch). */
  heldBook(collectionId: string): Promise<SchemaBook> | undefined {
    return this.books.get(collectionId)?.book;
  }

  private async rekey(c: CollectionRecord, book: SchemaBook, key: string): Promise<void> {
    const out = rekey(rulesOf(c), [...book.versions.values()], [...book.shapes.values()], this.clock.now());
    await this.db.store.transaction(() => {
      for (const id of out.removedShapes) void this.db.shapes.remove(c.id, id);
      for (const s of out.shapes) void this.db.shapes.put(c.id, s);
      for (const v of out.versions) void this.db.versions.put(c.id, v);
      void this.db.meta.put(c.id, { rules_key: key });
    });
    book.reset(out.versions, out.shapes);
    this.log.info({ collection_id: c.id, merged_versions: out.merged }, 're-keyed collection schema');
  }

  /**
   * Stage a batch's outputs in the caller's transaction (the spool's completion): versions,
   * shapes and file manifests. Call `applyCommitted` once the transaction is durable.
   */
  stageCommit(c: CollectionRecord, plan: BatchPlan, files: readonly WrittenFile[], seq: { first: number; last: number }): FileManifest[] {
    const now = new Date(this.clock.now()).toISOString();
    for (const v of plan.versions) {
      // Settled never goes back, even if a hand settle landed while the batch was in flight.
      const stored = this.db.versions.get(c.id, v.id);
      const next = stored && stored.state === 'settled' && v.state !== 'settled' ? { ...v, state: stored.state, settled_at: stored.settled_at, settled_by: stored.settled_by, stale_at: null } : v;
      void this.db.versions.put(c.id, next);
    }
    for (const s of plan.shapes) void this.db.shapes.put(c.id, s);
    const manifests = files.map((f) => ({
      id: f.path,
      collection_id: c.id,
      project_id: c.project_id,
      kind: f.kind,
      version_id: f.versionId,
      shape_hash: f.shapeHash,
      first_seq: seq.first,
      last_seq: seq.last,
      rows: f.rows,
      bytes: f.bytes,
      doc_bytes: f.docBytes,
      min_ts: f.minTs,
      max_ts: f.maxTs,
      created_at: now,
    }));
    for (const m of manifests) void this.db.files.put(c.id, m);
    return manifests;
  }

  /** After the commit is durable: the in-memory book and totals follow. */
  async applyCommitted(c: CollectionRecord, plan: BatchPlan, manifests: readonly FileManifest[]): Promise<void> {
    const book = await this.books.get(c.id)?.book;
    book?.apply(plan);
    const st = this.statsOf(c.id);
    for (const m of manifests) st.docBytes += m.doc_bytes;
    if (book) st.schemaCount = book.live().length;
  }

  /** Versions of a collection as the API lists them (effective state at `now`). */
  async listVersions(c: CollectionRecord): Promise<SchemaVersionRecord[]> {
    const book = await this.book(c);
    const now = this.clock.now();
    return book.live().map((v) => ({ ...v, state: effectiveState(v, now, c) }));
  }

  async getVersion(c: CollectionRecord, id: string): Promise<SchemaVersionRecord | undefined> {
    const book = await this.book(c);
    const v = book.current(id);
    return v ? { ...v, state: effectiveState(v, this.clock.now(), c) } : undefined;
  }

  /** Settle by hand. request_no_update when already settled; conflict past the identity limit. */
  async settle(c: CollectionRecord, id: string): Promise<SchemaVersionRecord> {
    const book = await this.book(c);
    const now = this.clock.now();
    const found = book.versions.get(id);
    if (!found || found.merged_into !== null) throw new ApiError('not_found', `Schema version ${id} not found in collection ${c.id}`);
    const v = staleIfDue(found, now, c) ?? found;
    const settled = book.live().filter((x) => x.state === 'settled').length;
    const out = settleByHand(v, now, settled, c);
    if (!out.ok) {
      if (out.reason === 'already_settled') throw new ApiError('request_no_update', `Schema version ${id} is already settled`);
      throw new ApiError('conflict', `The collection already has ${settled} settled versions (schema_identity_limit ${c.schema_identity_limit}); raise the limit to settle more`);
    }
    await this.db.store.transaction(() => void this.db.versions.put(c.id, out.version));
    book.putVersion(out.version);
    return out.version;
  }

  /** GET schema_report (current rules) or POST schema_preview (`rules` given): nothing changes. */
  async report(c: CollectionRecord, rules?: FingerprintRules): Promise<SchemaReport> {
    const book = await this.book(c);
    const current = rulesOf(c);
    return buildReport({ collectionId: c.id, current, rules: rules ?? current, shapes: [...book.shapes.values()] });
  }

  /** Collections that have schema state here. */
  knownCollections(): string[] {
    return [...this.db.meta.getKeys({})] as string[];
  }

  /** Manifests of a collection. */
  manifests(collectionId: string): FileManifest[] {
    return this.db.files.list(collectionId);
  }

  /** The shared DuckDB reader (opened on first use). */
  fileReader(): Promise<FileReader> {
    this.reader ??= FileReader.open();
    return this.reader;
  }

  /**
   * Remove files under the collection directories that no committed manifest names: the partial
   * output of a batch interrupted by a crash (its spool entries replay), and `.tmp` leftovers.
   */
  sweepOrphans(): number {
    const root = join(this.dataDir, 'files');
    if (!existsSync(root)) return 0;
    let removed = 0;
    for (const project of readdirSync(root)) {
      for (const collection of safeList(join(root, project))) {
        const dir = join(root, project, collection);
        const known = new Set(this.db.files.list(collection).map((m) => m.id));
        for (const file of walk(dir)) {
          const rel = relative(dir, file);
          if (!known.has(rel)) {
            rmSync(file, { force: true });
            removed++;
          }
        }
      }
    }
    return removed;
  }

  /** Remove everything of a destroyed collection: files, versions, shapes, manifests. */
  async destroyCollection(c: Pick<CollectionRecord, 'project_id' | 'id'>): Promise<void> {
    await this.db.store.transaction(() => this.db.removeCollection(c.id));
    rmSync(this.filesDir(c), { recursive: true, force: true });
    this.books.delete(c.id);
    this.stats.delete(c.id);
  }

  /** Remove files of rows without a settled version older than the retention (spec: schema_unclassified_retention_days). */
  async purgeUnclassified(c: CollectionRecord): Promise<number> {
    const days = c.schema_unclassified_retention_days;
    if (days === null) return 0;
    const book = await this.book(c);
    const cutoff = this.clock.now() - days * 86_400_000;
    const due = this.manifests(c.id).filter((m) => {
      if (m.max_ts >= cutoff || m.kind === 'mixed') return false;
      if (m.kind === 'version') return book.current(m.version_id!)?.state !== 'settled';
      if (m.kind === 'unclassified') {
        const linked = book.shapes.get(m.shape_hash!)?.version_id;
        return !linked || book.current(linked)?.state !== 'settled';
      }
      return true;
    });
    if (due.length === 0) return 0;
    await this.db.store.transaction(() => {
      for (const m of due) void this.db.files.remove(c.id, m.id);
    });
    for (const m of due) {
      rmSync(join(this.filesDir(c), m.id), { force: true });
      this.statsOf(c.id).docBytes -= m.doc_bytes;
    }
    return due.length;
  }

  close(): void {
    void this.reader?.then((r) => r.close()).catch(() => undefined);
    this.reader = null;
  }
}

function safeList(dir: string): string[] {
  try {
    return statSync(dir).isDirectory() ? readdirSync(dir) : [];
  } catch {
    return [];
  }
}

function* walk(dir: string): Iterable<string> {
  for (const name of safeList(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* walk(p);
    else yield p;
  }
}
