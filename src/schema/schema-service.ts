import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Clock } from '../clock.js';
import type { CollectionRecord } from '../catalog/records.js';
import { ApiError, notFound } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/db.js';
import { addOverflow, SchemaBook, type BatchPlan, type ShapeRecord } from './book.js';
import { FileReader } from './file-reader.js';
import { countShapesUnder, rekey } from './rekey.js';
import { buildReport, type SchemaReport } from './report.js';
import { rulesKey, rulesOf, type FingerprintRules } from './rules.js';
import { asReadAt, settleByHand, staleIfDue, type SchemaVersionRecord } from './versions.js';
import type { WrittenFile } from '../pipeline/process-batch.js';
import type { Spool } from '../ingest/spool.js';
import { SchemaStore, type FileManifest, type UnprocessableEntry } from './schema-store.js';

/** Suffix of a destroyed collection's files directory while it is being removed (start-up removes leftovers). */
const DELETING_SUFFIX = '.deleting-';

/** Reports (distinct rule sets: the current ones and previews) cached per collection. */
const REPORTS_CACHED = 4;

/**
 * A batch planned against a book the collection no longer holds (its rules changed and it was
 * re-keyed meanwhile): nothing of it may be committed; the caller releases it and runs it again.
 */
export class StaleBatchError extends Error {
  constructor(collectionId: string) {
    super(`collection ${collectionId} was re-keyed during the batch`);
    this.name = 'StaleBatchError';
  }
}

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
  /** Per collection: the generation of the book being loaded or held (bumped synchronously when a load or re-key starts). */
  private readonly generations = new Map<string, number>();
  private readonly stats = new Map<string, CollectionSchemaStats>();
  private reader: Promise<FileReader> | null = null;
  /**
   * Reports and shape counts per collection, valid for one (book generation, revision): a report
   * is computed once per change of the book, not per request or per detector run.
   */
  private readonly reportCache = new Map<string, { stamp: string; reports: Map<string, SchemaReport>; counts: Map<string, number> }>();

  constructor(
    store: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
    readonly dataDir: string,
  ) {
    this.db = new SchemaStore(store);
    for (const { scope, value } of this.db.files.all()) {
      this.statsOf(scope).docBytes += value.doc_bytes;
      if (value.last_seq > this.highestFileSeq) this.highestFileSeq = value.last_seq;
    }
    for (const { scope, value } of this.db.versions.all()) if (value.merged_into === null) this.statsOf(scope).schemaCount++;
  }

  /** Set-aside entries being put back in the spool right now (`collection:seq`). */
  private readonly retrying = new Set<string>();

  /** The highest spool sequence number any committed file was written from (at start-up). */
  readonly highestFileSeq: number = 0;

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
    // From here on, a batch planned against an earlier book cannot commit (stageCommit checks).
    const generation = this.generation(c.id) + 1;
    this.generations.set(c.id, generation);
    // One load (or re-key) per collection at a time: concurrent callers share it. Each builds a new
    // book from LMDB, never re-keys a held one in place (a batch in flight may still read it).
    const loading = (async () => {
      if (cached) await cached.book.catch(() => null);
      const owner = { teamId: c.team_id, projectId: c.project_id, collectionId: c.id };
      const meta = this.db.meta.get(c.id);
      const stored = meta?.rules_key;
      let book: SchemaBook;
      if (stored !== undefined && stored !== key) book = await this.rekey(c, owner, key);
      else {
        book = new SchemaBook(owner, this.db.versions.list(c.id), this.db.shapes.list(c.id));
        if (stored === undefined) await this.db.meta.put(c.id, { rules_key: key });
      }
      book.overflow = this.db.meta.get(c.id)?.unclassified_overflow ?? book.overflow;
      book.generation = generation;
      this.statsOf(c.id).schemaCount = book.live().length;
      return book;
    })();
    this.books.set(c.id, { book: loading, rulesKey: key });
    loading.catch(() => {
      if (this.books.get(c.id)?.book === loading) this.books.delete(c.id);
    });
    return loading;
  }

  /**
   * A collection's settings changed: when its identity rules did, re-key now (not on next use), so
   * schema_count and reads are current at once. Never throws: a failed re-key is logged, and the
   * next use of the book tries again.
   */
  async rulesChanged(c: CollectionRecord): Promise<void> {
    const held = this.books.get(c.id);
    if (!held && this.db.meta.get(c.id) === undefined) return;
    if (held && held.rulesKey === rulesKey(rulesOf(c))) return;
    try {
      await this.book(c);
    } catch (err) {
      this.log.error({ err, collection_id: c.id }, 're-keying after a rules change failed; retried on next use');
    }
  }

  /**
   * Forget the collection's book: the next use loads it from LMDB, and every batch planned against
   * the one held now is stale at its commit. For a plan applied ahead that did not commit as made.
   */
  invalidate(collectionId: string): void {
    this.generations.set(collectionId, this.generation(collectionId) + 1);
    this.books.delete(collectionId);
    this.reportCache.delete(collectionId);
  }

  /** The generation of the collection's current book (0 before its first load). */
  generation(collectionId: string): number {
    return this.generations.get(collectionId) ?? 0;
  }

  /**
   * Re-fingerprint the stored history under the collection's current rules. It reads versions and
   * shapes inside its own write transaction, so every batch committed before it is included and
   * none commits in between (later ones fail the generation check in `stageCommit`).
   */
  private async rekey(c: CollectionRecord, owner: ConstructorParameters<typeof SchemaBook>[0], key: string): Promise<SchemaBook> {
    const rules = rulesOf(c);
    const now = this.clock.now();
    const out = await this.db.store.transaction(() => {
      const o = rekey(rules, this.db.versions.list(c.id), this.db.shapes.list(c.id), now);
      for (const id of o.removedShapes) void this.db.shapes.remove(c.id, id);
      for (const s of o.shapes) void this.db.shapes.put(c.id, s);
      for (const v of o.versions) void this.db.versions.put(c.id, v);
      void this.db.meta.put(c.id, { ...this.db.meta.get(c.id), rules_key: key });
      return o;
    });
    this.log.info({ collection_id: c.id, merged_versions: out.merged }, 're-keyed collection schema');
    return new SchemaBook(owner, out.versions, out.shapes);
  }

  /**
   * Stage a batch's outputs in the caller's transaction (the spool's completion): versions,
   * shapes and file manifests. Call `applyCommitted` once the transaction is durable.
   */
  stageCommit(c: CollectionRecord, plan: BatchPlan, files: readonly WrittenFile[], seq: { first: number; last: number }, book: SchemaBook): FileManifest[] {
    // Checked inside the transaction: a re-key cannot slip between this check and the writes.
    if (book.generation !== this.generation(c.id)) throw new StaleBatchError(c.id);
    const now = new Date(this.clock.now()).toISOString();
    // schema_identity_limit, counted on what is committed: a hand settle (or another writer) may
    // have settled versions since the batch was planned.
    let settled: number | null = null;
    plan.versions.forEach((v, i) => {
      // Settled never goes back, even if a hand settle landed while the batch was in flight.
      const stored = this.db.versions.get(c.id, v.id);
      let next = stored && stored.state === 'settled' && v.state !== 'settled' ? { ...v, state: stored.state, settled_at: stored.settled_at, settled_by: stored.settled_by, stale_at: null } : v;
      if (next.state === 'settled' && stored?.state !== 'settled') {
        settled ??= this.settledCount(c.id);
        if (settled >= c.schema_identity_limit) {
          // No room any more: it stays what it was (a new version stays a candidate).
          next = { ...next, state: stored?.state ?? 'candidate', settled_at: null, settled_by: null, stale_at: stored?.stale_at ?? null };
          plan.versions[i] = next;
        } else settled++;
      }
      void this.db.versions.put(c.id, next);
    });
    // Rows an unclassified shape got in its own file: linked to the version it may get later.
    const fileRows = new Map<string, number>();
    for (const f of files) if (f.kind === 'unclassified' && f.shapeHash !== null) fileRows.set(f.shapeHash, (fileRows.get(f.shapeHash) ?? 0) + f.rows);
    plan.shapes.forEach((s, i) => {
      const rows = s.version_id === null ? fileRows.get(s.id) : undefined;
      const next = rows ? { ...s, unclassified_rows: (s.unclassified_rows ?? 0) + rows } : s;
      plan.shapes[i] = next;
      void this.db.shapes.put(c.id, next);
    });
    if (plan.overflow.rows > 0) {
      const meta = this.db.meta.get(c.id);
      if (meta) void this.db.meta.put(c.id, { ...meta, unclassified_overflow: addOverflow(meta.unclassified_overflow ?? { rows: 0, shapes_min: 0 }, plan.overflow) });
    }
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
      counts: f.counts,
    }));
    for (const m of manifests) void this.db.files.put(c.id, m);
    return manifests;
  }

  /**
   * After the commit is durable: the in-memory book and totals follow. `appliedAhead`: the plan was
   * applied when it was made (so the next batch could plan against it); applying it again puts the
   * records as committed, but must not add its overflow twice.
   */
  applyCommitted(c: CollectionRecord, plan: BatchPlan, manifests: readonly FileManifest[], book: SchemaBook, appliedAhead = false): void {
    const st = this.statsOf(c.id);
    for (const m of manifests) st.docBytes += m.doc_bytes;
    // A book replaced since the commit was built from LMDB, which already holds this batch.
    if (book.generation !== this.generation(c.id)) return;
    book.apply(appliedAhead ? { ...plan, overflow: undefined } : plan);
    st.schemaCount = book.live().length;
  }

  /**
   * Stage setting a spool entry aside as unprocessable (inside the spool's completion
   * transaction, so the entry leaves the spool exactly when its copy is stored).
   */
  stageUnprocessable(entry: Omit<UnprocessableEntry, 'id' | 'set_aside_at'>): void {
    void this.db.unprocessable.put(entry.collection_id, { ...entry, id: String(entry.seq), set_aside_at: new Date(this.clock.now()).toISOString() });
  }

  /**
   * Put a set-aside entry back in the spool (a new sequence number; its body, receive time and
   * format as they were), removing it from the set-aside list in the same transaction.
   */
  async retryUnprocessable(e: UnprocessableEntry, spool: Spool): Promise<number> {
    // Claimed synchronously: a second retry arriving before the first one's commit finds it taken.
    const claim = `${e.collection_id}:${e.id}`;
    if (this.retrying.has(claim) || !this.db.unprocessable.get(e.collection_id, e.id)) throw notFound(`Set-aside entry ${e.seq} of collection ${e.collection_id}`);
    this.retrying.add(claim);
    try {
      return await spool.append({ collection_id: e.collection_id, project_id: e.project_id, received_at: e.received_at, records: e.records, format: e.format, body: e.body }, () => {
        void this.db.unprocessable.remove(e.collection_id, e.id);
      });
    } finally {
      this.retrying.delete(claim);
    }
  }

  /** Entries of a collection set aside as unprocessable, in sequence order. */
  unprocessable(collectionId: string): UnprocessableEntry[] {
    return this.db.unprocessable.list(collectionId).sort((a, b) => a.seq - b.seq);
  }

  /** Versions of a collection as the API lists them (effective state at `now`). */
  async listVersions(c: CollectionRecord): Promise<SchemaVersionRecord[]> {
    const book = await this.book(c);
    const now = this.clock.now();
    return book.live().map((v) => asReadAt(v, now, c));
  }

  async getVersion(c: CollectionRecord, id: string): Promise<SchemaVersionRecord | undefined> {
    const book = await this.book(c);
    const v = book.current(id);
    return v ? asReadAt(v, this.clock.now(), c) : undefined;
  }

  /** Settled live versions committed for a collection (read inside a transaction for a consistent count). */
  private settledCount(collectionId: string): number {
    let n = 0;
    for (const v of this.db.versions.list(collectionId)) if (v.merged_into === null && v.state === 'settled') n++;
    return n;
  }

  /**
   * Settle by hand. request_no_update when already settled; conflict past the identity limit. The
   * state and the limit are checked inside the write transaction, against what is committed, so a
   * batch settling another version meanwhile cannot take the collection past the limit.
   */
  async settle(c: CollectionRecord, id: string): Promise<SchemaVersionRecord> {
    const book = await this.book(c);
    const now = this.clock.now();
    const found = book.versions.get(id);
    if (!found || found.merged_into !== null) throw new ApiError('not_found', `Schema version ${id} not found in collection ${c.id}`);
    const version = await this.db.store.transaction(() => {
      const committed = this.db.versions.get(c.id, id) ?? found;
      const v = staleIfDue(committed, now, c) ?? committed;
      const settled = this.settledCount(c.id);
      const out = settleByHand(v, now, settled, c);
      if (!out.ok) {
        if (out.reason === 'already_settled') throw new ApiError('request_no_update', `Schema version ${id} is already settled`);
        throw new ApiError('conflict', `The collection already has ${settled} settled versions (schema_identity_limit ${c.schema_identity_limit}); raise the limit to settle more`);
      }
      void this.db.versions.put(c.id, out.version);
      return out.version;
    });
    book.putVersion(version);
    return version;
  }

  /**
   * GET schema_report (current rules) or POST schema_preview (`rules` given): nothing changes.
   * Cached per (book generation, revision, rules): the cost (bounded by the recorded shapes, see
   * book.ts UNCLASSIFIED_SHAPE_CAP) is paid once per change of the collection's shapes.
   */
  async report(c: CollectionRecord, rules?: FingerprintRules): Promise<SchemaReport> {
    const book = await this.book(c);
    const current = rulesOf(c);
    const cache = this.cacheFor(c.id, book);
    const key = rulesKey(rules ?? current);
    let report = cache.reports.get(key);
    if (!report) {
      report = buildReport({ collectionId: c.id, current, rules: rules ?? current, shapes: [...book.shapes.values()], overflow: book.overflow });
      if (cache.reports.size >= REPORTS_CACHED) cache.reports.delete(cache.reports.keys().next().value!);
      cache.reports.set(key, report);
    }
    return report;
  }

  /** Distinct shapes the collection's stored shapes collapse to under `rules` (changes nothing; cached like reports). */
  async shapesUnder(c: CollectionRecord, rules: FingerprintRules): Promise<number> {
    const book = await this.book(c);
    const cache = this.cacheFor(c.id, book);
    const key = rulesKey(rules);
    let n = cache.counts.get(key);
    if (n === undefined) {
      n = countShapesUnder(rules, book.shapes.values());
      if (cache.counts.size >= REPORTS_CACHED * 4) cache.counts.delete(cache.counts.keys().next().value!);
      cache.counts.set(key, n);
    }
    return n;
  }

  /** The collection's report cache, emptied when the book changed since it was filled. */
  private cacheFor(collectionId: string, book: SchemaBook): { reports: Map<string, SchemaReport>; counts: Map<string, number> } {
    const stamp = `${book.generation}:${book.revision}`;
    let cache = this.reportCache.get(collectionId);
    if (!cache || cache.stamp !== stamp) this.reportCache.set(collectionId, (cache = { stamp, reports: new Map(), counts: new Map() }));
    return cache;
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
   * output of a batch interrupted by a crash (its spool entries replay), `.tmp` leftovers, and the
   * directories of destroyed collections a crash left half removed.
   */
  sweepOrphans(): number {
    const root = join(this.dataDir, 'files');
    if (!existsSync(root)) return 0;
    let removed = 0;
    for (const project of readdirSync(root)) {
      for (const collection of safeList(join(root, project))) {
        const dir = join(root, project, collection);
        if (collection.includes(DELETING_SUFFIX)) {
          // A destroyed collection's directory a crash left behind.
          rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
          removed++;
          continue;
        }
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
    // Moved aside first: a worker finishing a fenced-off batch may still write into the directory.
    const dir = this.filesDir(c);
    const aside = `${dir}${DELETING_SUFFIX}${Date.now()}`;
    try {
      renameSync(dir, aside);
    } catch {
      // No files yet (or already moved): nothing to move.
    }
    rmSync(aside, { recursive: true, force: true, maxRetries: 5 });
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
    } catch (err) {
      // A fenced-off batch still writing: its commit aborts and removes its files; the start-up
      // sweep removes whatever is left.
      this.log.warn({ err, collection_id: c.id }, 'files of a destroyed collection were still being written; left for the sweep');
    }
    this.books.delete(c.id);
    this.stats.delete(c.id);
    this.reportCache.delete(c.id);
  }

  /**
   * Remove files of rows without a settled version older than the retention (spec:
   * schema_unclassified_retention_days), and take their rows back out of the counts (version
   * `row_count`, shape rows, the report's unclassified rows). A `_mixed` file goes when none of
   * its versions is settled.
   *
   * Which files go is decided inside the write transaction, on what is committed: a version
   * settled (by hand or by a batch) just before is seen, a file another purge removed is skipped.
   * Batches planned before the purge cannot commit (they run again on the book reloaded after it).
   */
  async purgeUnclassified(c: CollectionRecord): Promise<number> {
    const days = c.schema_unclassified_retention_days;
    if (days === null) return 0;
    const cutoff = this.clock.now() - days * 86_400_000;
    // Age by arrival (the commit of the batch, just after it), not by the records' own
    // timestamps: a backfill of old events is kept the full retention like any other rows.
    const old = this.manifests(c.id).filter((m) => Date.parse(m.created_at) < cutoff);
    if (old.length === 0) return 0;
    // From here on, a batch planned against the held book cannot commit (stageCommit checks).
    this.generations.set(c.id, this.generation(c.id) + 1);
    let due: FileManifest[];
    try {
      due = await this.db.store.transaction(() => {
        const committed = new CommittedSchema(this.db, c.id);
        const out = old.filter((m) => this.db.files.get(c.id, m.id) !== undefined && committed.withoutSettledVersion(m));
        for (const m of out) void this.db.files.remove(c.id, m.id);
        this.uncount(c.id, out, committed);
        return out;
      });
    } finally {
      // The next use loads the book from LMDB, purge included.
      this.books.delete(c.id);
    }
    for (const m of due) {
      rmSync(join(this.filesDir(c), m.id), { force: true });
      this.statsOf(c.id).docBytes -= m.doc_bytes;
    }
    return due.length;
  }

  /** Inside the purge transaction: subtract the removed files' rows from what is committed. */
  private uncount(collectionId: string, removed: readonly FileManifest[], committed: CommittedSchema): void {
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
    for (const v of versions.values()) void this.db.versions.put(collectionId, v);
    for (const s of shapes.values()) void this.db.shapes.put(collectionId, s);
    const meta = this.db.meta.get(collectionId);
    if (overflow > 0 && meta?.unclassified_overflow) {
      void this.db.meta.put(collectionId, { ...meta, unclassified_overflow: { ...meta.unclassified_overflow, rows: Math.max(0, meta.unclassified_overflow.rows - overflow) } });
    }
  }

  close(): void {
    void this.reader?.then((r) => r.close()).catch(() => undefined);
    this.reader = null;
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
    for (let hops = 0; v?.merged_into && hops < 64; hops++) v = pending?.get(v.merged_into) ?? this.db.versions.get(this.collectionId, v.merged_into);
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
    if (m.kind === 'mixed') return m.counts !== undefined && !Object.keys(m.counts.versions).some((id) => this.settled(id));
    if (m.kind === 'unclassified') {
      const linked = this.shape(m.shape_hash!)?.version_id;
      return !linked || !this.settled(linked);
    }
    return true;
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
