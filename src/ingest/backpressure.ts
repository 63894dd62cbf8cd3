import { statfs, statfsSync } from 'node:fs';
import type { Clock } from '../clock.js';
import { ApiError, type ErrorCode } from '../errors.js';
import type { Spool } from '../spool/spool.js';
import { DISK_CHECK_INTERVAL_MS, MAX_BYTES_IN_FLIGHT, RETRY_AFTER_SECONDS, STORAGE_FAILURE_HOLD_MS } from './limits.js';

type SpoolFullCode = keyof typeof RETRY_AFTER_SECONDS & ErrorCode;

/** The refusal when bodies held in memory would pass their cap. */
export function bodiesFull(): ApiError {
  return spoolFull(
    'spool_full_ingest_queue',
    'Ingest is paused: too many bytes are waiting to be written; retry shortly',
  );
}

/** A 503 refusal with its Retry-After header. */
export function spoolFull(code: SpoolFullCode, message?: string): ApiError {
  const seconds = RETRY_AFTER_SECONDS[code];
  return new ApiError(code, message, {
    headers: { 'retry-after': String(seconds) },
    details: { retry_after_seconds: seconds },
  });
}

export interface GateLimits {
  dataDir: string;
  minFreeDiskBytes: number;
  maxPendingRecords: number;
  maxBytesInFlight?: number;
  /**
   * Refuse new data for a collection whose oldest spooled entry has waited longer than this for the
   * pipeline (ms); 0 or absent: no such limit (the pipeline is off, or the operator turned it off).
   */
  maxPendingAgeMs?: number;
}

/**
 * Admission control in front of the spool: refuses (503 + Retry-After) before the disk or memory
 * overflows, never after. Checks, cheapest first: a recent storage write failure, free disk space
 * (re-read in the background at most once a second), bytes held in memory awaiting commit, and
 * records waiting for the pipeline (durable + in flight) against `maxPendingRecords`.
 */
export class IngestGate {
  private freeBytes: number;
  private lastDiskCheck: number;
  private checking = false;
  private storageFailedAt = -Infinity;
  private bytesInFlight = 0;
  private readonly maxBytesInFlight: number;

  constructor(
    private readonly limits: GateLimits,
    private readonly spool: Spool,
    private readonly clock: Clock,
  ) {
    this.maxBytesInFlight = limits.maxBytesInFlight ?? MAX_BYTES_IN_FLIGHT;
    this.freeBytes = readFree(statfsSync(limits.dataDir));
    this.lastDiskCheck = clock.now();
  }

  /**
   * Throw the matching `spool_full_*` error when `records` more records (0 when not yet known) and
   * `bytes` more bytes cannot be admitted now.
   */
  check(records: number, bytes: number): void {
    const now = this.clock.now();
    if (now - this.storageFailedAt < STORAGE_FAILURE_HOLD_MS) {
      throw spoolFull('spool_full_storage_write', 'Ingest is paused: the last spool write failed; retry shortly');
    }
    this.refreshDisk(now);
    if (this.freeBytes < this.limits.minFreeDiskBytes) {
      throw spoolFull(
        'spool_full_disk_gate',
        `Ingest is paused: ${this.freeBytes} bytes free on the data volume, below the ${this.limits.minFreeDiskBytes}-byte threshold`,
      );
    }
    if (bytes > 0 && this.bytesInFlight + bytes > this.maxBytesInFlight) {
      throw spoolFull(
        'spool_full_ingest_queue',
        'Ingest is paused: too many bytes are waiting to be written; retry shortly',
      );
    }
    const queued = this.spool.pendingRecords() + this.spool.inFlightRecords();
    if (queued + records > this.limits.maxPendingRecords) {
      throw spoolFull(
        'spool_full_ingest_queue',
        `Ingest is paused: ${queued} records are waiting for the pipeline (limit ${this.limits.maxPendingRecords}); retry shortly`,
      );
    }
  }

  /**
   * Throw `spool_full_ingest_queue` when the collection's backlog is older than `maxPendingAgeMs`
   * (docs/ingest.md, "Refusals"): a node that receives more than its pipeline processes keeps the
   * excess at the producers (who retry after Retry-After) instead of in a spool whose head grows
   * older, so what it does accept is in files, views and metrics — and in front of monitors — within
   * about that long. The count and memory limits above bound the spool's size; this bounds its lag.
   */
  checkBacklog(collectionId: string): void {
    const max = this.limits.maxPendingAgeMs;
    if (!max) return;
    const since = this.spool.backlogSince(collectionId);
    if (since === null) return;
    const waited = this.clock.now() - since;
    if (waited > max) {
      throw spoolFull(
        'spool_full_ingest_queue',
        `Ingest into this collection is paused: its oldest records have waited ${(waited / 1000).toFixed(1)} s for the pipeline (limit ${max / 1000} s, SLUICE_MAX_PENDING_AGE_MS); retry shortly`,
      );
    }
  }

  /** Count `bytes` as held in memory until the matching `release`. */
  hold(bytes: number): void {
    this.bytesInFlight += bytes;
  }

  /**
   * Count `bytes` of a body being read (from admission on, before it is parsed), unless that would
   * pass the in-memory cap: then count nothing and return false (refuse with `bodiesFull()`).
   */
  tryHold(bytes: number): boolean {
    if (this.bytesInFlight + bytes > this.maxBytesInFlight) return false;
    this.bytesInFlight += bytes;
    return true;
  }

  release(bytes: number): void {
    this.bytesInFlight -= bytes;
  }

  /** A spool write failed: refuse new requests for a moment instead of queueing behind a failing disk. */
  storageFailed(): void {
    this.storageFailedAt = this.clock.now();
  }

  private refreshDisk(now: number): void {
    if (this.checking || now - this.lastDiskCheck < DISK_CHECK_INTERVAL_MS) return;
    this.checking = true;
    this.lastDiskCheck = now;
    statfs(this.limits.dataDir, (err, stats) => {
      this.checking = false;
      // An unreadable volume keeps the last reading; a failing disk shows up as a write failure.
      if (!err) this.freeBytes = readFree(stats);
    });
  }
}

function readFree(stats: { bavail: number | bigint; bsize: number | bigint }): number {
  return Number(stats.bavail) * Number(stats.bsize);
}
