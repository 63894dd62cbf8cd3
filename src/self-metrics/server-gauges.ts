import {
  compactionBacklog,
  pipelineLag,
  registry,
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
  /** Batches waiting for their DuckDB merge (an LMDB key scan: refreshed in the background). */
  rollupMergeBacklog(): number;
  /** Partial rows not yet compacted, summed over live metrics (walks every metric: refreshed in the background). */
  compactionBacklog(): number;
}

/**
 * Gauges that need a scan (an LMDB key walk, every metric, `/proc/self/fd`) or a walk of the
 * event-loop delay histogram are refreshed this often off the request path, and a scrape reads
 * them from memory: a scrape then costs the same whatever the server holds (docs/self-metrics.md).
 */
export const BACKGROUND_REFRESH_MS = 5_000;

/**
 * prom-client's default metrics whose `collect` is slow for a scrape: the event-loop delay
 * histogram's mean, stddev and percentiles (each a walk of the histogram; it also resets it) and
 * `readdir('/proc/self/fd')`. Their `collect` is taken off the metric and run by the refresher.
 */
const DEFERRED_DEFAULTS = ['nodejs_eventloop_lag_seconds', 'process_open_fds'];

interface Collectable {
  collect?: () => unknown;
}
const deferred: Array<{ metric: Collectable; collect: () => unknown }> = [];
for (const name of DEFERRED_DEFAULTS) {
  const metric = registry.getSingleMetric(name) as Collectable | undefined;
  if (metric?.collect) {
    deferred.push({ metric, collect: metric.collect });
    delete metric.collect;
  }
}

/** Run the deferred default collectors once (the refresher, and at bind so the first scrape has values). */
function collectDeferred(): void {
  for (const d of deferred) void d.collect.call(d.metric);
}

let sample: (() => void) | null = null;

/** Set the state gauges from the bound server; the metrics endpoint calls it before each scrape. */
export function sampleServerGauges(): void {
  sample?.();
}

/**
 * Make the state gauges read this server's spool, pipeline and rollups when scraped (the cheap,
 * in-memory or O(1) readings), and refresh the ones that need a scan every
 * BACKGROUND_REFRESH_MS on an unref'd timer. One server per process in production; when a process
 * runs several (tests), the last bound is the one sampled. Returns the unbind function (server stop).
 */
export function bindServerGauges(sources: GaugeSources): () => void {
  const refresh = () => {
    rollupMergeBacklog.set(sources.rollupMergeBacklog());
    compactionBacklog.set(sources.compactionBacklog());
    collectDeferred();
  };
  const fn = () => {
    spoolRecords.set(sources.spoolRecords());
    spoolProcessingRecords.set(sources.spoolProcessingRecords());
    spoolBytes.set(sources.spoolBytes());
    const oldest = sources.oldestSpooledAt();
    pipelineLag.set(oldest === null ? 0 : Math.max(0, (sources.now() - oldest) / 1000));
    const w = sources.workers();
    workerThreads.set(w ? w.threads : 0);
    workerUtilization.set(w && w.threads > 0 ? Math.min(1, w.busy / w.threads) : 0);
  };
  refresh();
  const timer = setInterval(() => {
    if (sample === fn) refresh();
  }, BACKGROUND_REFRESH_MS);
  timer.unref();
  sample = fn;
  return () => {
    clearInterval(timer);
    if (sample === fn) sample = null;
  };
}
