import type { BatchEntry } from '../records/decode.js';
import type { Spool, SpoolLease } from '../spool/spool.js';

/** Records per lease: large enough for good files, small enough to keep lag low. */
export const LEASE_MAX_RECORDS = 50_000;
/**
 * Body bytes per lease. 50,000 records of 4 KB would be one 200 MB lease: the first worker would
 * take a whole backlog of large records and the others wait (2 workers ran no faster than 1 on
 * the e2e bench's nested input). 50,000 flat records of ~200 bytes stay under it.
 */
export const LEASE_MAX_BYTES = 16 << 20;
/**
 * Body bytes a lease of a collection should have at least while another batch of it is on a
 * worker: a nested record's batch writes one file per schema version (~20 here) whatever its size,
 * and each file has a fixed Parquet cost (~2–3 ms for ~100 columns), so leasing ahead the few
 * requests that arrived meanwhile made small batches that cost more per record and left the big
 * one last (docs/benchmarks.md, "2w ÷ 1w").
 */
export const LEASE_MIN_AHEAD_BYTES = 8 << 20;

/**
 * The task's entries over the lease's one buffer of bodies (spool.ts `SpoolLease.bodies`), whose
 * ArrayBuffer is transferred to the worker as it is: no copy here, none in the worker. The lease's
 * own views of it read as empty afterwards; a batch given back is leased again from the spool.
 */
export function packEntries(lease: SpoolLease): { entries: BatchEntry[]; buffer: ArrayBuffer } {
  const entries = lease.entries.map(
    (e): BatchEntry => ({ seq: e.seq, received_at: e.received_at, format: e.format, body: e.body }),
  );
  return { entries, buffer: lease.bodies.buffer as ArrayBuffer };
}

export interface LeasingOptions {
  spool: Pick<Spool, 'lease' | 'unleasedRecords'>;
  /** Worker threads: at most this many batches are on a worker at once. */
  workers: number;
  /** Records per lease (default LEASE_MAX_RECORDS). */
  maxRecords?: number | undefined;
  /** Body bytes per lease (default LEASE_MAX_BYTES). */
  maxBytes?: number | undefined;
}

/**
 * Which spool batches go to the workers: one lease per idle worker, sized by records and bytes,
 * and how far ahead a collection whose batch is already on a worker may lease (docs/architecture.md,
 * "Ordering"). Keeps the count of batches on a worker, overall and per collection.
 */
export class Leasing {
  /** Batches on a worker right now (a batch that is committing no longer holds its worker). */
  private busy = 0;
  /** Per collection: its batches on a worker now. */
  private readonly onWorker = new Map<string, number>();
  /** Per collection: body bytes per record of its last lease (sizes leases in records from bytes). */
  private readonly bytesPerRecord = new Map<string, number>();

  constructor(private readonly o: LeasingOptions) {}

  /** Batches on a worker right now. */
  running(): number {
    return this.busy;
  }

  /** Whether a worker is free for another lease. */
  hasIdleWorker(): boolean {
    return this.busy < this.o.workers;
  }

  /**
   * The next lease, or null when nothing may be leased now. `limitOf` caps a collection's records
   * (narrowing a failing batch); `gateOf` says how many leases it may hold (see `aheadOf`).
   */
  lease(
    limitOf: (collectionId: string) => number | undefined,
    gateOf: (collectionId: string) => number,
  ): SpoolLease | null {
    return this.o.spool.lease(this.maxRecords(), limitOf, gateOf, this.o.maxBytes || LEASE_MAX_BYTES);
  }

  /**
   * Leases a flowing collection may hold: every worker, except that while one of its batches is on
   * a worker it leases ahead only what is worth a batch of its own (`floorRecords`).
   */
  aheadOf(collectionId: string): number {
    if (
      (this.onWorker.get(collectionId) ?? 0) > 0 &&
      this.o.spool.unleasedRecords(collectionId) < this.floorRecords(collectionId)
    )
      return 0;
    return this.o.workers;
  }

  /**
   * Count `lease` as on a worker; the function returned frees that worker: the first call frees it
   * and answers true, later calls do nothing and answer false.
   */
  started(lease: SpoolLease): () => boolean {
    const cid = lease.collectionId;
    this.busy++;
    this.onWorker.set(cid, (this.onWorker.get(cid) ?? 0) + 1);
    let freed = false;
    return () => {
      if (freed) return false;
      freed = true;
      this.busy--;
      const n = (this.onWorker.get(cid) ?? 1) - 1;
      if (n > 0) this.onWorker.set(cid, n);
      else this.onWorker.delete(cid);
      return true;
    };
  }

  /** Remember the size of the collection's records from a lease's bodies. */
  measured(lease: SpoolLease, bodyBytes: number): void {
    if (lease.records > 0) this.bytesPerRecord.set(lease.collectionId, bodyBytes / lease.records);
  }

  private maxRecords(): number {
    return this.o.maxRecords || LEASE_MAX_RECORDS;
  }

  /**
   * Least records worth a lease ahead: LEASE_MIN_AHEAD_BYTES of the collection's records, at most a
   * quarter of a full lease (small records make few, large files anyway); a full lease while the
   * collection's record size is unknown.
   */
  private floorRecords(collectionId: string): number {
    const bpr = this.bytesPerRecord.get(collectionId);
    const max = this.maxRecords();
    if (bpr === undefined) return max;
    const minBytes = Math.min(LEASE_MIN_AHEAD_BYTES, (this.o.maxBytes || LEASE_MAX_BYTES) / 2);
    return Math.max(1, Math.min(Math.ceil(max / 4), Math.ceil(minBytes / bpr)));
  }
}
