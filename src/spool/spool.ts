import type { Database } from 'lmdb';
import { ApiError } from '../errors.js';
import type { BatchFormat } from '../records/split.js';
import { openPlain, type Store } from '../store/db.js';
import { openSpoolIndex, type IndexValue } from './spool-index.js';

/** One accepted request (or WebSocket frame) as stored: its records stay in the bytes they arrived in. */
export interface SpoolEntry {
  collection_id: string;
  project_id: string;
  /** Receive time, epoch ms (the event time of records without their own `timestamp`). */
  received_at: number;
  /** Number of records in `body`. */
  records: number;
  format: BatchFormat;
  /** The validated, decompressed body exactly as sent; decode with `decodeRecords(format, body)`. */
  body: Uint8Array;
}

/** What `append` needs; the spool assigns the sequence number. */
export type SpoolInput = SpoolEntry;

/** A leased entry: the stored entry plus its sequence number. */
export interface LeasedEntry extends SpoolEntry {
  seq: number;
}

/**
 * A batch handed to the pipeline: the oldest unleased entries of one collection, in sequence order.
 * Leases live in memory only, so a crash between `lease` and `complete` replays the batch.
 */
export interface SpoolLease {
  readonly id: number;
  readonly collectionId: string;
  readonly projectId: string;
  readonly entries: readonly LeasedEntry[];
  /** Records over all entries. */
  readonly records: number;
  readonly firstSeq: number;
  readonly lastSeq: number;
  /**
   * Every entry's body, in order, in one buffer of exactly their bytes: each entry's `body` is a
   * view into it. The pipeline transfers its ArrayBuffer to a worker as it is (no copy): after
   * that the bodies read as empty, and `Spool.bodyOf` reads one from the spool again.
   */
  readonly bodies: Uint8Array;
}

interface CollectionQueue {
  projectId: string;
  /** Durable records and entries not yet completed (leased ones included). */
  records: number;
  entries: number;
  /** Active leases in sequence order: each starts after the one before (see `lease`). */
  leases: SpoolLease[];
  /**
   * `received_at` of the oldest durable entry (see `backlogSince`); undefined: not known, read from
   * the index when asked (after a start, and whenever a completed lease moved the head).
   */
  oldestAt?: number | undefined;
}

interface ProjectCounters {
  pending: number;
  processing: number;
}

/** Called once an append is durable (`err` null, with its sequence number) or has failed. */
export type AppendDone = (err: unknown, seq: number) => void;

interface PendingAppend {
  input: SpoolInput;
  seq: number;
  done: AppendDone;
}

/** Called after a lease's entries are deleted: throughput telemetry counts drained records. */
export type DrainListener = (projectId: string, records: number) => void;

/**
 * The durable ingest spool: named LMDB databases in the shared environment.
 *
 * - `spool_body`: sequence number → the body's bytes, stored as they are (group commit: every append
 *   made in the same event-loop turn joins one LMDB write transaction — lmdb-js batches them — and
 *   each `append` resolves only once that transaction is committed *and* flushed to disk).
 * - `spool_meta`: [collection id, seq] → [records, project id, received at, format, body bytes]
 *   (spool-index.ts), for per-collection order and the counters.
 *
 * Bodies are raw bytes, not msgpack: encoding a 200 KB body copies it into msgpackr's growing
 * buffers, whose garbage made V8 run a full GC every few dozen requests under batched load.
 *
 * Sequence numbers increase monotonically and survive restarts (the next is one past the last key).
 */
export class Spool {
  private readonly entries: Database<Uint8Array, number>;
  private readonly index: Database<IndexValue, [string, number]>;
  /** `seq` → the highest sequence number ever deleted from the spool (see `restore`). */
  private readonly marks: Database<number, string>;
  private nextSeq = 1;
  private nextLeaseId = 1;
  private readonly queues = new Map<string, CollectionQueue>();
  /**
   * Collections dropped since start: a late append (issued before the drop, committed after it)
   * must not resurrect their queue, and a new append into one is refused.
   */
  private readonly dropped = new Set<string>();
  private readonly projects = new Map<string, ProjectCounters>();
  private inFlight = 0;
  private totalPending = 0;
  private totalProcessing = 0;
  private readonly drainListeners: DrainListener[] = [];
  private readonly appendListeners: (() => void)[] = [];
  /** The last commit promise lmdb returned for a put, and the appends waiting for that transaction. */
  private lastWritten: Promise<unknown> | null = null;
  private lastAppends: PendingAppend[] | null = null;
  /** The appends of every write transaction not yet settled (issued, not yet durable): `oldestReceivedAt` sees them. */
  private readonly unsettled = new Set<PendingAppend[]>();

  constructor(private readonly store: Store) {
    this.entries = store.root.openDB<Uint8Array, number>({ name: 'spool_body', encoding: 'binary' });
    this.index = openSpoolIndex(store);
    this.marks = openPlain<number, string>(store, 'spool_marks');
    migrateLegacySpool(store, this.entries, this.index);
    this.restore();
  }

  /**
   * Rebuild the sequence and the counters from what is on disk (start-up). Sequence numbers are
   * never reused: the next one is past both the last stored entry and the highest one ever
   * deleted (a drained spool has no entries left to tell; files are named by sequence number).
   */
  private restore(): void {
    this.nextSeq = (this.marks.get(HIGHEST_DELETED) ?? 0) + 1;
    for (const key of this.entries.getKeys({ reverse: true, limit: 1 })) this.nextSeq = Math.max(this.nextSeq, key + 1);
    for (const { key, value } of this.index.getRange({})) {
      const q = this.queue(key[0], value[1]);
      q.records += value[0];
      q.entries++;
      this.project(value[1]).pending += value[0];
      this.totalPending += value[0];
    }
  }

  /**
   * Store one entry durably. `stageWithin` runs synchronously right after the puts, so anything it
   * writes (the idempotency record) commits in the same transaction. Resolves with the sequence
   * number once the commit is flushed; rejects (nothing stored) when the write fails. Not for use
   * inside a `store.transaction` callback (its puts return no per-transaction commit promise).
   */
  append(input: SpoolInput, stageWithin?: () => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.appendThen(input, stageWithin, (err, seq) => (err === null ? resolve(seq) : reject(err)));
    });
  }

  /**
   * `append` with a callback instead of a promise (the single-record hot path adds no promise per
   * request): `done(null, seq)` once the commit is flushed, `done(err)` when it failed. A refusal
   * or a failing put is reported through `done` before this returns; otherwise `done` is called
   * later, in append order, together with the other appends of the same transaction.
   */
  appendThen(input: SpoolInput, stageWithin: (() => void) | undefined, done: AppendDone): void {
    if (this.dropped.has(input.collection_id))
      return done(new ApiError('source_deleted', `Collection ${input.collection_id} is deleted`), 0);
    const seq = this.nextSeq++;
    let written: Promise<unknown>;
    try {
      written = this.entries.put(seq, input.body);
      this.index.put(
        [input.collection_id, seq],
        [input.records, input.project_id, input.received_at, input.format, input.body.byteLength],
      );
      stageWithin?.();
    } catch (err) {
      return done(err, 0);
    }
    this.inFlight += input.records;
    this.transactionOf(written).push({ input, seq, done });
  }

  /**
   * The appends waiting for the write transaction `written` belongs to. lmdb-js hands every
   * unconditional put of one transaction the same commit promise, and the transaction's flush
   * promise is the environment's `flushed` right after the put: one combined promise per
   * transaction settles all of its appends (no promise per append).
   */
  private transactionOf(written: Promise<unknown>): PendingAppend[] {
    if (written === this.lastWritten && this.lastAppends) return this.lastAppends;
    const appends: PendingAppend[] = [];
    this.lastWritten = written;
    this.lastAppends = appends;
    this.unsettled.add(appends);
    Promise.all([written, new Promise((resolve, reject) => this.store.root.flushed.then(resolve, reject))]).then(
      () => this.settle(appends, null),
      (err: unknown) => this.settle(appends, err ?? new Error('spool write failed')),
    );
    return appends;
  }

  /** A transaction is durable (`err` null) or failed: count its appends and answer them in order. */
  private settle(appends: PendingAppend[], err: unknown): void {
    this.unsettled.delete(appends);
    if (this.lastAppends === appends) {
      this.lastAppends = null;
      this.lastWritten = null;
    }
    let stored = 0;
    for (const a of appends) {
      const { input, seq } = a;
      this.inFlight -= input.records;
      if (err !== null) continue;
      if (this.dropped.has(input.collection_id)) {
        // Dropped while this put was in flight: the drop may have run before it landed, so remove
        // it here (idempotent) and count nothing.
        void this.store.transaction(() => {
          this.entries.remove(seq);
          this.index.remove([input.collection_id, seq]);
          this.markDeleted(seq);
        });
        continue;
      }
      const q = this.queue(input.collection_id, input.project_id);
      // The first entry of an empty queue is its oldest; later ones do not move the head.
      if (q.entries === 0) q.oldestAt = input.received_at;
      q.records += input.records;
      q.entries++;
      this.project(input.project_id).pending += input.records;
      this.totalPending += input.records;
      stored++;
    }
    // Counters first, then the answers: whoever is answered sees every append of the commit.
    if (stored > 0) for (const fn of this.appendListeners) fn();
    // One callback that throws must not leave the later appends of the commit unanswered.
    let thrown: { error: unknown } | null = null;
    for (const a of appends) {
      try {
        a.done(err, err === null ? a.seq : 0);
      } catch (error) {
        thrown ??= { error };
      }
    }
    if (thrown) throw thrown.error;
  }

  /**
   * Lease the oldest unleased entries of one collection (collections take turns), up to
   * `maxRecords` records and `maxBytes` bytes of bodies but always at least one entry. Null when
   * nothing is waiting. A collection
   * may hold up to `aheadOf(id)` leases at once (default 1): each starts after the last one active,
   * so leases of one collection cover consecutive ranges in sequence order, and the consumer
   * commits them in that order (docs/architecture.md, "Ordering"). A consumer that gives a lease
   * back must give back every later one of the collection before leasing it again. `limitOf`
   * narrows one collection's batches (the pipeline isolates a batch that keeps failing).
   */
  lease(
    maxRecords: number,
    limitOf?: (collectionId: string) => number | undefined,
    aheadOf?: (collectionId: string) => number,
    maxBytes = Infinity,
  ): SpoolLease | null {
    // Each collection at most once per call: a re-added (sent to the back) entry is visited again by
    // a live Map iteration, so walk a bounded number of steps.
    let budget = this.queues.size;
    for (const [collectionId, q] of this.queues) {
      if (budget-- <= 0) break;
      if (q.entries === 0 || q.leases.length >= (aheadOf?.(collectionId) ?? 1)) continue;
      const leased = q.leases.reduce((n, l) => n + l.entries.length, 0);
      if (leased >= q.entries) continue;
      const lease = this.leaseFrom(
        collectionId,
        q,
        Math.min(maxRecords, limitOf?.(collectionId) ?? maxRecords),
        maxBytes,
      );
      // Take turns: the collection just served goes to the back.
      this.queues.delete(collectionId);
      if (!lease) {
        // The counters promised entries the index does not have: rebuild them from the index.
        if (q.leases.length > 0) continue;
        this.recount(collectionId, q);
        if (q.entries > 0) this.queues.set(collectionId, q);
        continue;
      }
      this.queues.set(collectionId, q);
      return lease;
    }
    return null;
  }

  /** Inside a write transaction that deletes entries up to `seq`: remember it (never reused). */
  private markDeleted(seq: number): void {
    if (seq > (this.marks.get(HIGHEST_DELETED) ?? 0)) void this.marks.put(HIGHEST_DELETED, seq);
  }

  /**
   * Never hand out `seq` or anything below it again (start-up: files written under sequence
   * numbers a data directory of an earlier release forgot).
   */
  reserveThrough(seq: number): void {
    if (seq >= this.nextSeq) this.nextSeq = seq + 1;
  }

  /** Set a collection's counters (and its project's and the total) to what its index holds. */
  private recount(collectionId: string, q: CollectionQueue): void {
    let records = 0;
    let entries = 0;
    for (const { key, value } of this.index.getRange({
      start: [collectionId, 0],
      end: [collectionId, Number.MAX_SAFE_INTEGER],
    })) {
      if (this.entries.doesExist(key[1])) {
        records += value[0];
        entries++;
      }
    }
    const delta = records - q.records;
    q.records = records;
    q.entries = entries;
    q.oldestAt = undefined;
    this.project(q.projectId).pending += delta;
    this.totalPending += delta;
  }

  /**
   * The lease's entries, picked from the index (sizes included), then their bodies copied once,
   * straight from LMDB's read buffer, into one buffer of exactly their bytes (`SpoolLease.bodies`).
   * A body read into a buffer of its own and then copied again into the worker's buffer cost two
   * fresh allocations and two copies per byte on the main thread (~2–4 µs per nested record).
   * `trustIndex` false: every size is measured on its body (an index that disagreed with one).
   */
  private leaseFrom(
    collectionId: string,
    q: CollectionQueue,
    maxRecords: number,
    maxBytes: number,
    trustIndex = true,
  ): SpoolLease | null {
    const picked: Array<{ key: [string, number]; value: IndexValue; size: number }> = [];
    let records = 0;
    let bytes = 0;
    const after = q.leases.length > 0 ? q.leases[q.leases.length - 1]!.lastSeq + 1 : 0;
    for (const { key, value } of this.index.getRange({
      start: [collectionId, after],
      end: [collectionId, Number.MAX_SAFE_INTEGER],
    })) {
      const size =
        trustIndex && value[4] !== undefined
          ? this.entries.doesExist(key[1])
            ? value[4]
            : undefined
          : this.entries.getBinaryFast(key[1])?.length;
      if (size === undefined) continue;
      picked.push({ key, value, size });
      records += value[0];
      bytes += size;
      if (records >= maxRecords || bytes >= maxBytes) break;
    }
    if (picked.length === 0) return null;
    const bodies = new Uint8Array(bytes);
    const entries: LeasedEntry[] = [];
    let at = 0;
    for (const { key, value, size } of picked) {
      // Read in the same snapshot as the index (one synchronous turn): the body is there, as long as the index says.
      const b = this.entries.getBinaryFast(key[1]);
      if (!b || b.length !== size)
        return trustIndex ? this.leaseFrom(collectionId, q, maxRecords, maxBytes, false) : null;
      bodies.set(b.subarray(0, size), at);
      entries.push({
        collection_id: key[0],
        project_id: value[1],
        received_at: value[2],
        records: value[0],
        format: value[3],
        body: bodies.subarray(at, at + size),
        seq: key[1],
      });
      at += size;
    }
    const lease: SpoolLease = {
      id: this.nextLeaseId++,
      collectionId,
      projectId: q.projectId,
      entries,
      records,
      firstSeq: entries[0]!.seq,
      lastSeq: entries[entries.length - 1]!.seq,
      bodies,
    };
    q.leases.push(lease);
    this.project(q.projectId).processing += records;
    this.totalProcessing += records;
    return lease;
  }

  /**
   * Delete exactly the lease's entries, durably, and end the lease. `stageWithin` runs inside the
   * same write transaction (a consumer may commit its outputs atomically with the deletion).
   */
  async complete(lease: SpoolLease, stageWithin?: () => void): Promise<void> {
    const q = this.queues.get(lease.collectionId);
    if (!q || !q.leases.includes(lease)) throw new Error(`lease ${lease.id} is not active`);
    await this.store.transaction(() => {
      // Checked inside the transaction (they are serialised): once a drop has begun, no batch of
      // the collection commits outputs any more.
      if (this.dropped.has(lease.collectionId))
        throw new ApiError('source_deleted', `Collection ${lease.collectionId} is being deleted`);
      stageWithin?.();
      for (const e of lease.entries) {
        this.entries.remove(e.seq);
        this.index.remove([lease.collectionId, e.seq]);
      }
      this.markDeleted(lease.lastSeq);
    });
    await this.store.root.flushed;
    // The collection was dropped meanwhile: the drop already ended the lease and took its records out.
    if (this.queues.get(lease.collectionId) !== q || !q.leases.includes(lease)) return;
    this.endLease(q, lease);
    q.records -= lease.records;
    q.entries -= lease.entries.length;
    q.oldestAt = undefined;
    const p = this.project(lease.projectId);
    p.pending -= lease.records;
    this.totalPending -= lease.records;
    for (const fn of this.drainListeners) fn(lease.projectId, lease.records);
  }

  /** Give the lease back untouched: its entries are leased again, first, by a later `lease`. */
  release(lease: SpoolLease): void {
    const q = this.queues.get(lease.collectionId);
    if (q && q.leases.includes(lease)) this.endLease(q, lease);
  }

  /** Active leases of a collection (the pipeline's in-flight batches of it). */
  leasesOf(collectionId: string): number {
    return this.queues.get(collectionId)?.leases.length ?? 0;
  }

  private endLease(q: CollectionQueue, lease: SpoolLease): void {
    q.leases = q.leases.filter((l) => l !== lease);
    this.project(lease.projectId).processing -= lease.records;
    this.totalProcessing -= lease.records;
  }

  /** Remove every entry of a collection (the collection is being destroyed). */
  async dropCollection(collectionId: string): Promise<void> {
    this.dropped.add(collectionId);
    const q = this.queues.get(collectionId);
    await this.store.transaction(() => {
      let highest = 0;
      for (const key of this.index.getKeys({
        start: [collectionId, 0],
        end: [collectionId, Number.MAX_SAFE_INTEGER],
      })) {
        this.entries.remove(key[1]);
        this.index.remove(key);
        highest = Math.max(highest, key[1]);
      }
      this.markDeleted(highest);
    });
    if (!q) return;
    for (const l of q.leases) this.endLease(q, l);
    this.project(q.projectId).pending -= q.records;
    this.totalPending -= q.records;
    this.queues.delete(collectionId);
  }

  /** Durable records awaiting the pipeline (processing included); of one project when given. */
  pendingRecords(projectId?: string): number {
    return projectId === undefined ? this.totalPending : (this.projects.get(projectId)?.pending ?? 0);
  }

  /** Pending records currently leased by the pipeline. */
  processingRecords(projectId?: string): number {
    return projectId === undefined ? this.totalProcessing : (this.projects.get(projectId)?.processing ?? 0);
  }

  /** Records appended but not yet committed. */
  inFlightRecords(): number {
    return this.inFlight;
  }

  /** Projects that have (or had, since start) spooled records. */
  knownProjects(): string[] {
    return [...this.projects.keys()];
  }

  /** Durable records of one collection waiting and not leased (what a next lease could take). */
  unleasedRecords(collectionId: string): number {
    const q = this.queues.get(collectionId);
    if (!q) return 0;
    let leased = 0;
    for (const l of q.leases) leased += l.records;
    return q.records - leased;
  }

  /** Durable entries of one collection waiting (leased included). */
  pendingEntries(collectionId: string): number {
    return this.queues.get(collectionId)?.entries ?? 0;
  }

  /**
   * Receive time (epoch ms) of the oldest entry of a collection still in the spool, leased included,
   * or appended and not yet durable (its put issued, its transaction not settled: a request received
   * just before a minute ended whose commit lands just after must still hold that minute open for
   * `complete_through_at`); null when none.
   */
  oldestReceivedAt(collectionId: string): number | null {
    let oldest = this.oldestIndexed(collectionId);
    for (const appends of this.unsettled)
      for (const { input } of appends)
        if (input.collection_id === collectionId && (oldest === null || input.received_at < oldest))
          oldest = input.received_at;
    return oldest;
  }

  /** `received_at` of the collection's first entry in the index (committed), or null. */
  private oldestIndexed(collectionId: string): number | null {
    for (const { value } of this.index.getRange({
      start: [collectionId, 0],
      end: [collectionId, Number.MAX_SAFE_INTEGER],
      limit: 1,
    }))
      return value[2];
    return null;
  }

  /**
   * Receive time (epoch ms) of the oldest durable entry of a collection waiting for the pipeline
   * (leased included), from memory: the index is read once per change of the queue's head (a
   * completed lease), not per call, so admission can ask on every request. null when none. Unlike
   * `oldestReceivedAt` it does not see an entry committed but not yet settled (a few ms): fine for
   * admission, not for completeness.
   */
  backlogSince(collectionId: string): number | null {
    const q = this.queues.get(collectionId);
    if (!q || q.entries === 0) return null;
    if (q.oldestAt === undefined) q.oldestAt = this.oldestIndexed(collectionId) ?? undefined;
    return q.oldestAt ?? null;
  }

  /** Receive time (epoch ms) of the oldest entry still in the spool, any collection; null when empty (self-metrics: pipeline lag). */
  oldestPendingAt(): number | null {
    let oldest: number | null = null;
    for (const [id, q] of this.queues) {
      if (q.entries === 0) continue;
      const at = this.oldestReceivedAt(id);
      if (at !== null && (oldest === null || at < oldest)) oldest = at;
    }
    return oldest;
  }

  /** Bytes the spooled bodies take in LMDB: the pages of `spool_body` (mdb_stat, no scan; self-metrics). */
  storedBytes(): number {
    const s = this.entries.getStats() as {
      pageSize?: number;
      treeBranchPageCount?: number;
      treeLeafPageCount?: number;
      overflowPages?: number;
    };
    return ((s.treeBranchPageCount ?? 0) + (s.treeLeafPageCount ?? 0) + (s.overflowPages ?? 0)) * (s.pageSize ?? 4096);
  }

  /** The highest sequence number assigned so far (0 when none). */
  lastSeq(): number {
    return this.nextSeq - 1;
  }

  /** Call `fn` after each durable append (a consumer wakes up). Returns an unsubscribe function. */
  onAppend(fn: () => void): () => void {
    this.appendListeners.push(fn);
    return () => remove(this.appendListeners, fn);
  }

  /** Call `fn(projectId, records)` after each completed lease. Returns an unsubscribe function. */
  onDrained(fn: DrainListener): () => void {
    this.drainListeners.push(fn);
    return () => remove(this.drainListeners, fn);
  }

  /** Every stored entry in sequence order (inspection, tests, the crash test). */
  *scan(): Iterable<LeasedEntry> {
    const metas = [...this.index.getRange({})].sort((a, b) => a.key[1] - b.key[1]);
    for (const { key, value } of metas) {
      const entry = this.entryOf(key, value);
      if (entry) yield entry;
    }
  }

  /** A stored entry's body (a copy), or undefined when it is gone. */
  bodyOf(seq: number): Uint8Array | undefined {
    return this.entries.get(seq);
  }

  /** The stored entry an index row describes (undefined when its body is gone). */
  private entryOf(key: [string, number], meta: IndexValue): LeasedEntry | undefined {
    const body = this.entries.get(key[1]);
    if (!body) return undefined;
    return {
      collection_id: key[0],
      project_id: meta[1],
      received_at: meta[2],
      records: meta[0],
      format: meta[3],
      body,
      seq: key[1],
    };
  }

  private queue(collectionId: string, projectId: string): CollectionQueue {
    let q = this.queues.get(collectionId);
    if (!q) {
      q = { projectId, records: 0, entries: 0, leases: [] };
      this.queues.set(collectionId, q);
    }
    return q;
  }

  private project(projectId: string): ProjectCounters {
    let p = this.projects.get(projectId);
    if (!p) {
      p = { pending: 0, processing: 0 };
      this.projects.set(projectId, p);
    }
    return p;
  }
}

const HIGHEST_DELETED = 'highest_deleted';

/**
 * Move entries of the first spool layout (`spool`: seq → msgpack SpoolEntry; `spool_by_collection`)
 * into the current one, in one transaction, so an upgrade keeps every acknowledged record.
 */
function migrateLegacySpool(
  store: Store,
  bodies: Database<Uint8Array, number>,
  index: Database<IndexValue, [string, number]>,
): void {
  const legacy = openPlain<SpoolEntry, number>(store, 'spool');
  const legacyIndex = openPlain<unknown, [string, number]>(store, 'spool_by_collection');
  if (legacy.getKeysCount({ limit: 1 }) === 0 && legacyIndex.getKeysCount({ limit: 1 }) === 0) return;
  store.root.transactionSync(() => {
    for (const { key, value: e } of legacy.getRange({})) {
      bodies.put(key, e.body);
      index.put([e.collection_id, key], [e.records, e.project_id, e.received_at, e.format, e.body.byteLength]);
      legacy.remove(key);
    }
    for (const key of legacyIndex.getKeys({})) legacyIndex.remove(key);
  });
}

function remove<T>(list: T[], item: T): void {
  const i = list.indexOf(item);
  if (i !== -1) list.splice(i, 1);
}
