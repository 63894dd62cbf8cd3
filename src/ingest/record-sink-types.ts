/**
 * The record sink's contract: the one way records enter a collection, for the key-checked ingest
 * front and for in-process producers (pulls, checks) alike — same validation, limits, backpressure,
 * idempotency, telemetry and activity, with no ingest key.
 */

export interface SinkTarget {
  projectId: string;
  sourceId: string;
  /** Created when data first arrives for it, as over HTTP. */
  collectionSlug: string;
}

export interface SinkOptions {
  /** Same meaning as the `Idempotency-Key` header: a repeat returns the first outcome, spooled once. */
  idempotencyKey?: string;
  /** Who wrote (e.g. `pull:pul_…`, `check:chk_…`), for logs and telemetry. */
  producer: string;
}

export type SinkOutcome =
  | { ok: true; accepted: number; replayed: boolean }
  /** A refusal as a value: the HTTP status and error code the front would have answered. */
  | { ok: false; status: number; code: string; message: string; retryAfterSeconds?: number; details?: unknown };

export interface RecordSink {
  write(target: SinkTarget, records: ReadonlyArray<Record<string, unknown>>, opts: SinkOptions): Promise<SinkOutcome>;
}
