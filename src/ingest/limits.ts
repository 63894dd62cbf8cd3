/** Ingest limits (documented in docs/ingest.md). The body limit itself is `config.maxIngestBytes`. */

/** Most records one request or WebSocket frame may carry. */
export const MAX_RECORDS_PER_REQUEST = 100_000;

/** Largest single NDJSON line (one record), bytes. Arrays and single objects are bounded by the body limit. */
export const MAX_RECORD_BYTES = 1024 * 1024;

/**
 * Deepest nesting of objects and arrays in one record (the record itself is level 1). Deeper
 * records overflow the stack of recursive consumers (the schema pipeline, JSON.stringify).
 */
export const MAX_NESTING_DEPTH = 1000;

/** Longest `Idempotency-Key` header or WebSocket `stream` name. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** How long a request's result is kept for its Idempotency-Key (the promise is ≥ 24 h). */
export const IDEMPOTENCY_TTL_MS = 25 * 60 * 60 * 1000;

/**
 * Bodies read, parsed and waiting for their spool commit at once, bytes. Past it new requests are
 * refused with `spool_full_ingest_queue` instead of growing memory without bound.
 */
export const MAX_BYTES_IN_FLIGHT = 256 * 1024 * 1024;

/** Retry-After seconds per refusal reason. */
export const RETRY_AFTER_SECONDS = {
  spool_full_disk_gate: 60,
  spool_full_storage_write: 10,
  spool_full_ingest_queue: 2,
  spool_full_wal_unavailable: 5,
} as const;

/** How long after a failed spool write new requests are refused with `spool_full_storage_write`. */
export const STORAGE_FAILURE_HOLD_MS = 5_000;

/** The disk gate re-reads free space at most this often. */
export const DISK_CHECK_INTERVAL_MS = 1_000;
