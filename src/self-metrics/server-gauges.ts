import { availableParallelism } from 'node:os';
import { GLOBAL } from '../accounts/repo.js';
import type { Services } from '../services.js';
import { compactionBacklog, pipelineLag, rollupMergeBacklog, spoolBytes, spoolProcessingRecords, spoolRecords, workerThreads, workerUtilization } from './registry.js';

/** The metrics' compact backlog is summed over every metric: at most once per this many ms. */
const BACKLOG_EVERY_MS = 10_000;

let sample: (() => void) | null = null;

/** Set the state gauges from the bound server (called by `exposition` before each scrape). */
export function sampleServerGauges(): void {
  sample?.();
}

/**
 * Make the state gauges read this server's spool, pipeline and rollups when scraped. One server per
 * process in production; when a process runs several (tests), the last bound is the one sampled.
 * Returns the unbind function (server stop).
 */
export function bindServerGauges(services: Services): () => void {
  let backlogAt = -Infinity;
  let backlog = 0;
  const threads = services.config.workers > 0 ? services.config.workers : Math.max(1, availableParallelism());
  const fn = () => {
    const { spool, clock } = services;
    spoolRecords.set(spool.pendingRecords());
    spoolProcessingRecords.set(spool.processingRecords());
    spoolBytes.set(spool.storedBytes());
    const oldest = spool.oldestPendingAt();
    pipelineLag.set(oldest === null ? 0 : Math.max(0, (clock.now() - oldest) / 1000));
    const runner = services.pipeline;
    workerThreads.set(runner ? threads : 0);
    workerUtilization.set(runner ? Math.min(1, runner.running() / threads) : 0);
    const rollups = services.rollups as { pending?: { keys(): number[] } } | null;
    rollupMergeBacklog.set(rollups?.pending ? rollups.pending.keys().length : 0);
    const now = performance.now();
    if (now - backlogAt >= BACKLOG_EVERY_MS) {
      backlogAt = now;
      backlog = 0;
      for (const team of services.accounts.teams.list(GLOBAL)) {
        for (const project of services.projects.list(team.id)) {
          for (const m of services.metrics.list(project.id)) if (m.deleted_at === null) backlog += Math.max(0, m.compact_total_count - m.compact_completed_count);
        }
      }
    }
    compactionBacklog.set(backlog);
  };
  sample = fn;
  return () => {
    if (sample === fn) sample = null;
  };
}
