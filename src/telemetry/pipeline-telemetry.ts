import type { Database } from 'lmdb';
import type { Clock } from '../clock.js';
import type { ErrorCode } from '../errors.js';
import type { JobHandle, Scheduler } from '../schedule/types.js';
import type { Store } from '../store/db.js';
import type { Spool } from '../spool/spool.js';

/** Spec: PipelineErrorReason. */
export const PIPELINE_ERROR_REASONS = [
  'auth_missing_credentials',
  'auth_invalid_credentials',
  'payload_too_large',
  'request_validation_failed',
  'server_error',
  'spool_full_disk_gate',
  'spool_full_storage_write',
  'spool_full_ingest_queue',
  'spool_full_wal_unavailable',
  'frame_invalid',
  'empty_payload',
  'source_deleted',
  'connection_closed',
  'auth_unavailable',
] as const;
export type PipelineErrorReason = (typeof PIPELINE_ERROR_REASONS)[number];

const REASONS = new Set<string>(PIPELINE_ERROR_REASONS);

/** The PipelineErrorReason an ingest refusal is counted under. */
export function reasonFor(code: ErrorCode): PipelineErrorReason {
  if (REASONS.has(code)) return code as PipelineErrorReason;
  switch (code) {
    case 'team_not_active':
      // The key stopped granting ingest because of its team.
      return 'auth_invalid_credentials';
    case 'service_unavailable':
      return 'spool_full_wal_unavailable';
    case 'unsupported_media_type':
    case 'request_malformed_json':
    case 'idempotency_key_reused':
      return 'request_validation_failed';
    default:
      return 'server_error';
  }
}

/** Counters of one project for one minute (persisted as is). */
export interface MinuteCounters {
  /** Records accepted (durably spooled) and the requests/frames carrying them. */
  accepted_records: number;
  accepted_requests: number;
  /** Records drained from the spool by the pipeline. */
  throughput_records: number;
  /** Rejected requests and dropped frames. */
  errors: number;
  error_counts: Partial<Record<PipelineErrorReason, number>>;
  /** Pending / processing observations: sum, count and max of the samples taken in the minute. */
  pending_sum: number;
  pending_max: number;
  processing_sum: number;
  samples: number;
}

interface LiveMinute {
  key: string;
  projectId: string;
  minute: number;
  counters: MinuteCounters;
  dirty: boolean;
}

/** Refusals that cannot be tied to a project (no or unknown key) are kept under this id. */
export const NODE_SUBJECT = '_node';

/** How often pending/processing are sampled and the current minutes persisted. */
const TICK_MS = 5_000;
const MINUTE_MS = 60_000;

/**
 * Pipeline telemetry: per-minute counters per project, held in memory for the current minute and
 * written to LMDB (`pipeline_telemetry`: [project id, minute start ms] → MinuteCounters) every few
 * seconds and on shutdown — never a write per request.
 */
export class PipelineTelemetry {
  private readonly db: Database<MinuteCounters, [string, number]>;
  private readonly live = new Map<string, LiveMinute>();
  private lastEntry: LiveMinute | null = null;
  private tickJob: JobHandle | null = null;
  private spool: Spool | null = null;
  private unsubscribe: (() => void) | null = null;
  /** When this node started observing (minutes before it have no samples from this run). */
  readonly startedAt: number;

  constructor(
    store: Store,
    private readonly clock: Clock,
  ) {
    this.db = store.db<MinuteCounters, [string, number]>('pipeline_telemetry');
    this.startedAt = clock.now();
  }

  /** Begin sampling `spool` and counting its drained records; persists every few seconds (a `scheduler` job). */
  start(spool: Spool, scheduler: Scheduler): void {
    this.spool = spool;
    this.unsubscribe = spool.onDrained((projectId, records) => this.recordDrained(projectId, records));
    this.tickJob = scheduler.register({
      name: 'telemetry-tick',
      schedule: { everyMs: TICK_MS },
      run: () => this.tick(),
    });
  }

  recordAccepted(projectId: string, records: number): void {
    const c = this.counters(projectId);
    c.accepted_records += records;
    c.accepted_requests++;
  }

  /** A rejected request or dropped frame; `projectId` null when the key was missing or unknown. */
  recordError(projectId: string | null, reason: PipelineErrorReason): void {
    const c = this.counters(projectId ?? NODE_SUBJECT);
    c.errors++;
    c.error_counts[reason] = (c.error_counts[reason] ?? 0) + 1;
  }

  recordDrained(projectId: string, records: number): void {
    this.counters(projectId).throughput_records += records;
  }

  /** The counters of one minute (start ms), current minute included; undefined when none. */
  minute(projectId: string, minuteStart: number): MinuteCounters | undefined {
    return this.live.get(liveKey(projectId, minuteStart))?.counters ?? this.db.get([projectId, minuteStart]);
  }

  /** Every stored minute of a project in [startMs, endMs), oldest first, live minutes included. */
  range(projectId: string, startMs: number, endMs: number): Map<number, MinuteCounters> {
    const out = new Map<number, MinuteCounters>();
    for (const { key, value } of this.db.getRange({ start: [projectId, startMs], end: [projectId, endMs] }))
      out.set(key[1], value);
    for (const entry of this.live.values()) {
      if (entry.projectId === projectId && entry.minute >= startMs && entry.minute < endMs)
        out.set(entry.minute, entry.counters);
    }
    return out;
  }

  /** Sample pending/processing of every project the spool knows, then persist changed minutes. */
  async tick(): Promise<void> {
    if (this.spool) {
      for (const projectId of this.spool.knownProjects()) {
        const c = this.counters(projectId);
        const pending = this.spool.pendingRecords(projectId);
        c.pending_sum += pending;
        c.pending_max = Math.max(c.pending_max, pending);
        c.processing_sum += this.spool.processingRecords(projectId);
        c.samples++;
      }
    }
    await this.flush();
  }

  /** Persist every changed minute; finished minutes leave memory. */
  async flush(): Promise<void> {
    const current = minuteOf(this.clock.now());
    const writes: Promise<boolean>[] = [];
    for (const [key, entry] of this.live) {
      if (entry.dirty) {
        writes.push(this.db.put([entry.projectId, entry.minute], entry.counters));
        entry.dirty = false;
      }
      if (entry.minute < current) this.live.delete(key);
    }
    await Promise.all(writes);
  }

  /** Stop sampling and persist what is in memory. */
  async close(): Promise<void> {
    // Waits for a tick in flight (none once the scheduler has stopped, which the server does first).
    await this.tickJob?.unregister();
    this.tickJob = null;
    this.unsubscribe?.();
    await this.flush();
  }

  private counters(projectId: string): MinuteCounters {
    const minute = minuteOf(this.clock.now());
    // Consecutive requests mostly count for the same project and minute: skip building the key.
    const last = this.lastEntry;
    if (last && last.projectId === projectId && last.minute === minute && this.live.get(last.key) === last) {
      last.dirty = true;
      return last.counters;
    }
    const key = liveKey(projectId, minute);
    let entry = this.live.get(key);
    if (!entry) {
      // A restart within the minute continues its stored counters.
      const counters = this.db.get([projectId, minute]) ?? emptyCounters();
      entry = { key, projectId, minute, counters, dirty: true };
      this.live.set(key, entry);
    }
    entry.dirty = true;
    this.lastEntry = entry;
    return entry.counters;
  }
}

export function emptyCounters(): MinuteCounters {
  return {
    accepted_records: 0,
    accepted_requests: 0,
    throughput_records: 0,
    errors: 0,
    error_counts: {},
    pending_sum: 0,
    pending_max: 0,
    processing_sum: 0,
    samples: 0,
  };
}

export function minuteOf(ms: number): number {
  return Math.floor(ms / MINUTE_MS) * MINUTE_MS;
}

function liveKey(projectId: string, minute: number): string {
  return `${projectId}|${minute}`;
}
