import { join } from 'node:path';
import type { Clock } from '../clock.js';
import type { CollectionRecord } from '../catalog/records.js';
import { ApiError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/db.js';
import { addOverflow, SchemaBook, type BatchPlan } from './book.js';
import { FileReader } from './file-reader.js';
import { rekey } from './rekey.js';
import type { SchemaReport } from './report.js';
import { SchemaDetector } from './schema-detector.js';
import { rulesKey, rulesOf, type FingerprintRules } from './rules.js';
import { asReadAt, settleByHand, staleIfDue, type SchemaVersionRecord } from './versions.js';
import type { WrittenFile } from '../commit/batch-commit.js';
import type { Spool } from '../spool/spool.js';
import { SchemaStore, type FileManifest, type UnprocessableEntry } from './schema-store.js';
import { removeCollectionFiles, sweepOrphans } from './file-sweep.js';
import { purgeUnclassified } from './retention.js';
import { SetAside } from './set-aside.js';

/**
 * A batch planned against a book the collection no longer holds (re-keyed after a rules change,
 * purged, or reloaded because a plan applied ahead did not commit as made): nothing of it may be
 * committed; the caller releases it and runs it again (docs/architecture.md, "Failures").
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
 * completion transaction, see schema-commit.ts), `settle`, and re-keying.
 *
 * The jobs beside the books live in their own modules, reached through this surface: retention
 * (retention.ts), set-aside entries (set-aside.ts), files on disk no commit names (file-sweep.ts),
 * and the reports the schema detector reads (schema-detector.ts).
 */
export class SchemaService {
  readonly db: SchemaStore;
  private readonly setAside: SetAside;
  private readonly books = new Map<string, { book: Promise<SchemaBook>; rulesKey: string }>();
  /** Per collection: the generation of the book being loaded or held (bumped synchronously when a load or re-key starts). */
  private readonly generations = new Map<string, number>();
  /**
   * Per collection: hand settles staged in an LMDB transaction (`started`), and those also in the
   * book (`finished`, which books carry as `handSettles`). A commit whose plan saw as many as have
   * started since has nothing to read back (see `stageCommit`).
   */
  private readonly handSettles = new Map<string, { started: number; finished: number }>();
  private readonly stats = new Map<string, CollectionSchemaStats>();
  private reader: Promise<FileReader> | null = null;
  /** Reports and shape counts per collection, what the schema detector reads (schema-detector.ts). */
  private readonly detector = new SchemaDetector();

  constructor(
    store: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
    readonly dataDir: string,
  ) {
    this.db = new SchemaStore(store);
    this.setAside = new SetAside(this.db.unprocessable, clock);
    for (const { scope, value } of this.db.files.all()) {
      this.statsOf(scope).docBytes += value.doc_bytes;
      if (value.last_seq > this.highestFileSeq) this.highestFileSeq = value.last_seq;
    }
    for (const { scope, value } of this.db.versions.all())
      if (value.merged_into === null) this.statsOf(scope).schemaCount++;
  }

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
      book.handSettles = this.handSettlesOf(c.id).finished;
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
    this.detector.forget(collectionId);
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
  private async rekey(
    c: CollectionRecord,
    owner: ConstructorParameters<typeof SchemaBook>[0],
    key: string,
  ): Promise<SchemaBook> {
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
  stageCommit(
    c: CollectionRecord,
    plan: BatchPlan,
    files: readonly WrittenFile[],
    seq: { first: number; last: number },
    book: SchemaBook,
  ): FileManifest[] {
    // Checked inside the transaction: a re-key cannot slip between this check and the writes.
    if (book.generation !== this.generation(c.id)) throw new StaleBatchError(c.id);
    const now = new Date(this.clock.now()).toISOString();
    // schema_identity_limit, counted on what is committed: a hand settle (or another writer) may
    // have settled versions since the batch was planned.
    let settled: number | null = null;
    // No hand settle reached LMDB that the plan's book did not hold: then LMDB's versions are the
    // book's as the plan saw them (plans of earlier batches commit first, or end the generation).
    const noHandSettleSince = plan.handSettles !== undefined && plan.handSettles === this.handSettlesOf(c.id).started;
    plan.versions.forEach((v, i) => {
      // Settled never goes back, even if a hand settle landed while the batch was in flight. A
      // version settled when the plan was made is settled in LMDB now (book.ts `settledBefore`):
      // not read back (a wide version's record is most of what a commit would decode).
      if (v.state === 'settled' && plan.settledBefore?.has(v.id)) {
        void this.db.versions.put(c.id, v);
        return;
      }
      // Nor is any other when no hand settle came after the plan: stored is settled exactly when
      // the plan's book had it settled (`settledBefore`), and this one was not settled then.
      const known = noHandSettleSince && plan.settledBefore !== undefined;
      let stored = known ? undefined : this.db.versions.get(c.id, v.id);
      const storedSettled = known ? false : stored?.state === 'settled';
      let next =
        stored && storedSettled && v.state !== 'settled'
          ? { ...v, state: stored.state, settled_at: stored.settled_at, settled_by: stored.settled_by, stale_at: null }
          : v;
      if (next.state === 'settled' && !storedSettled) {
        settled ??= this.settledCount(c.id);
        if (settled >= c.schema_identity_limit) {
          if (known) stored = this.db.versions.get(c.id, v.id);
          // No room any more: it stays what it was (a new version stays a candidate).
          next = {
            ...next,
            state: stored?.state ?? 'candidate',
            settled_at: null,
            settled_by: null,
            stale_at: stored?.stale_at ?? null,
          };
          plan.versions[i] = next;
        } else settled++;
      }
      void this.db.versions.put(c.id, next);
    });
    // Shapes as planned: their `unclassified_rows` already count this batch's own files (resolver.ts).
    for (const s of plan.shapes) void this.db.shapes.put(c.id, s);
    if (plan.overflow.rows > 0) {
      const meta = this.db.meta.get(c.id);
      if (meta)
        void this.db.meta.put(c.id, {
          ...meta,
          unclassified_overflow: addOverflow(meta.unclassified_overflow ?? { rows: 0, shapes_min: 0 }, plan.overflow),
        });
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
   * applied when it was made (so the next batch could plan against it), and the book already holds
   * it — with the plans of later batches on top. Applying it again would put this batch's version
   * and shape records back over theirs (a version's row_count would lose their rows, and the next
   * plan would commit that). A commit that changed the plan reloads the book instead
   * (schema-commit.ts).
   */
  applyCommitted(
    c: CollectionRecord,
    plan: BatchPlan,
    manifests: readonly FileManifest[],
    book: SchemaBook,
    appliedAhead = false,
  ): void {
    const st = this.statsOf(c.id);
    for (const m of manifests) st.docBytes += m.doc_bytes;
    // A book replaced since the commit was built from LMDB, which already holds this batch.
    if (book.generation !== this.generation(c.id)) return;
    if (!appliedAhead) book.apply(plan);
    st.schemaCount = book.live().length;
  }

  /** Stage setting a spool entry aside as unprocessable (set-aside.ts), inside the spool's completion transaction. */
  stageUnprocessable(entry: Omit<UnprocessableEntry, 'id' | 'set_aside_at'>): void {
    this.setAside.stage(entry);
  }

  /** Put a set-aside entry back in the spool (set-aside.ts); returns its new sequence number. */
  retryUnprocessable(e: UnprocessableEntry, spool: Spool): Promise<number> {
    return this.setAside.retry(e, spool);
  }

  /** Entries of a collection set aside as unprocessable, in sequence order. */
  unprocessable(collectionId: string): UnprocessableEntry[] {
    return this.setAside.list(collectionId);
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
    if (!found || found.merged_into !== null)
      throw new ApiError('not_found', `Schema version ${id} not found in collection ${c.id}`);
    const counts = this.handSettlesOf(c.id);
    let staged = false;
    try {
      const version = await this.db.store.transaction(() => {
        const committed = this.db.versions.get(c.id, id) ?? found;
        const v = staleIfDue(committed, now, c) ?? committed;
        const settled = this.settledCount(c.id);
        const out = settleByHand(v, now, settled, c);
        if (!out.ok) {
          if (out.reason === 'already_settled')
            throw new ApiError('request_no_update', `Schema version ${id} is already settled`);
          throw new ApiError(
            'conflict',
            `The collection already has ${settled} settled versions (schema_identity_limit ${c.schema_identity_limit}); raise the limit to settle more`,
          );
        }
        // Counted before the put reaches LMDB: a batch committing after it reads versions back.
        if (!staged) counts.started++;
        staged = true;
        void this.db.versions.put(c.id, out.version);
        return out.version;
      });
      book.putVersion(version);
      return version;
    } finally {
      if (staged) {
        counts.finished++;
        // The book holds it now (or the transaction failed and LMDB is unchanged).
        if (counts.finished === counts.started) book.handSettles = counts.finished;
      }
    }
  }

  private handSettlesOf(collectionId: string): { started: number; finished: number } {
    let h = this.handSettles.get(collectionId);
    if (!h) this.handSettles.set(collectionId, (h = { started: 0, finished: 0 }));
    return h;
  }

  /**
   * GET schema_report (current rules) or POST schema_preview (`rules` given): nothing changes.
   * Cached per (book generation, revision, rules) by the detector (schema-detector.ts).
   */
  async report(c: CollectionRecord, rules?: FingerprintRules): Promise<SchemaReport> {
    return this.detector.report(c, await this.book(c), rules);
  }

  /** Distinct shapes the collection's stored shapes collapse to under `rules` (changes nothing; cached like reports). */
  async shapesUnder(c: CollectionRecord, rules: FingerprintRules): Promise<number> {
    return this.detector.shapesUnder(c.id, await this.book(c), rules);
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

  /** Remove files no committed manifest names (file-sweep.ts): run at start, before the pipeline. */
  sweepOrphans(): number {
    return sweepOrphans(
      join(this.dataDir, 'files'),
      (collectionId) => new Set(this.db.files.list(collectionId).map((m) => m.id)),
    );
  }

  /** Remove everything of a destroyed collection: files, versions, shapes, manifests. */
  async destroyCollection(c: Pick<CollectionRecord, 'project_id' | 'id'>): Promise<void> {
    await this.db.store.transaction(() => this.db.removeCollection(c.id));
    removeCollectionFiles(this.filesDir(c), this.log, c.id);
    this.books.delete(c.id);
    this.stats.delete(c.id);
    this.detector.forget(c.id);
  }

  /**
   * Remove files of rows without a settled version past schema_unclassified_retention_days and
   * take their rows back out of the counts (retention.ts). Returns how many files went.
   */
  async purgeUnclassified(c: CollectionRecord): Promise<number> {
    const due = await purgeUnclassified(this.db, c, this.clock.now(), this.filesDir(c), {
      fence: () => this.generations.set(c.id, this.generation(c.id) + 1),
      reload: () => this.books.delete(c.id),
    });
    for (const m of due) this.statsOf(c.id).docBytes -= m.doc_bytes;
    return due.length;
  }

  close(): void {
    void this.reader?.then((r) => r.close()).catch(() => undefined);
    this.reader = null;
  }
}
