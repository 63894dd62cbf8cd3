import {
  compactionBacklog,
  pipelineLag,
  rollupMergeBacklog,
  spoolBytes,
  spoolProcessingRecords,
  spoolRecords,
  workerThreads,
  workerUtilization,
} from './registry.js';

/** What the state gauges read, as plain functions (the server builds them from its services). */
export interface GaugeSources {
  spoolRecords(): number;
  spoolProcessingRecords(): number;
  spoolBytes(): number;
  /** Epoch ms of the oldest spooled entry, or null when the spool is empty. */
  oldestSpooledAt(): number | null;
  now(): number;
  /** Worker threads, and batches on them now; null when the pipeline is off. */
  workers(): { threads: number; busy: number } | null;
  rollupMergeBacklog(): number;
  /** Partial rows not yet compacted, summed over live metrics (may walk every metric: sampled sparingly). */
  compactionBacklog(): number;
}

/** The compaction backlog walks every metric: at most once per this many ms. */
const BACKLOG_EVERY_MS = 10_000;

let sample: (() => void) | null = null;

/** Set the state gauges from the bound server; the metrics endpoint calls it before each scrape. */
export function sampleServerGauges(): void {
  sample?.();
}

/**
 * Make the state gauges read this server's spool, pipeline and rollups when scraped. One server per
 * process in production; when a process runs several (tests), the last bound is the one sampled.
 * Returns the unbind function (server stop).
 */
export function bindServerGauges(sources: GaugeSources): () => void {
  let backlogAt = -Infinity;
  let backlog = 0;
  const fn = () => {
    spoolRecords.set(sources.spoolRecords());
    spoolProcessingRecords.set(sources.spoolProcessingRecords());
    spoolBytes.set(sources.spoolBytes());
    const oldest = sources.oldestSpooledAt();
    pipelineLag.set(oldest === null ? 0 : Math.max(0, (sources.now() - oldest) / 1000));
    const w = sources.workers();
    workerThreads.set(w ? w.threads : 0);
    workerUtilization.set(w && w.threads > 0 ? Math.min(1, w.busy / w.threads) : 0);
    rollupMergeBacklog.set(sources.rollupMergeBacklog());
    const now = performance.now();
    if (now - backlogAt >= BACKLOG_EVERY_MS) {
      backlogAt = now;
      backlog = sources.compactionBacklog();
    }
    compactionBacklog.set(backlog);
  };
  sample = fn;
  return () => {
    if (sample === fn) sample = null;
  };
}
