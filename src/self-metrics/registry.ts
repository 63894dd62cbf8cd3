import client from 'prom-client';

/**
 * Sluice's own metrics (docs/self-metrics.md): ONE prom-client registry for the process, served by
 * `GET /metrics` in the Prometheus text format. Modules import the metric objects below and count
 * into them; gauges that read state (spool depth, lag, utilisation) are sampled when scraped
 * (`bindServerGauges`). Names follow Prometheus conventions: `sluice_` prefix, `_total` counters,
 * `_seconds` and `_bytes` units.
 */
export const registry = new client.Registry();

/** Buckets for request-scale latencies, seconds (0.5 ms … 10 s). */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Buckets for batch-scale durations, seconds (5 ms … 2 min). */
const BATCH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

// ── Ingest ────────────────────────────────────────────────────────────────────
/** Ingest requests (and WebSocket frames): `outcome` accepted | refused; `reason` the refusal's PipelineErrorReason. */
export const ingestRequests = new client.Counter({
  name: 'sluice_ingest_requests_total',
  help: 'Ingest requests and WebSocket frames by outcome (accepted, refused) and refusal reason',
  labelNames: ['outcome', 'reason'] as const,
  registers: [registry],
});

/** Records stored by accepted ingest requests (a refused request is all or nothing: its records are not counted). */
export const ingestRecords = new client.Counter({
  name: 'sluice_ingest_records_total',
  help: 'Records accepted by the ingest front (refused requests store none; see sluice_ingest_requests_total)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

// ── Pipeline ──────────────────────────────────────────────────────────────────
/** Pipeline batches by outcome: committed | failed (a failed batch is retried). */
export const pipelineBatches = new client.Counter({
  name: 'sluice_pipeline_batches_total',
  help: 'Pipeline batches by outcome (committed, failed; a failed batch runs again)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

/** Seconds a batch spent per stage: `worker` (decode … files, on a worker thread), `commit` (waiting its turn and committing), `total`. */
export const pipelineBatchSeconds = new client.Histogram({
  name: 'sluice_pipeline_batch_duration_seconds',
  help: 'Pipeline batch durations by stage: worker (on a worker thread), commit (turn and LMDB commit), total',
  labelNames: ['stage'] as const,
  buckets: BATCH_BUCKETS,
  registers: [registry],
});

/** Records the pipeline drained from the spool. */
export const pipelineRecords = new client.Counter({
  name: 'sluice_pipeline_records_total',
  help: 'Records the pipeline committed and removed from the spool',
  registers: [registry],
});

// ── DuckDB ────────────────────────────────────────────────────────────────────
/** Seconds per DuckDB call through the one adapter (`duck()`/`guard()`), by operation. */
export const duckdbQuerySeconds = new client.Histogram({
  name: 'sluice_duckdb_query_duration_seconds',
  help: 'DuckDB call latency by operation (rollup reads and merges, file reads)',
  labelNames: ['operation'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

// ── Monitors, notifications, pulls and checks (wired by their modules) ───────
/**
 * How late a monitor evaluation ran after its scheduled slot, seconds:
 * `monitorEvaluationLag.observe((startedAtMs - scheduledAtMs) / 1000)`.
 */
export const monitorEvaluationLag = new client.Histogram({
  name: 'sluice_monitor_evaluation_lag_seconds',
  help: 'Delay between a monitor evaluation slot and the evaluation starting',
  buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
  registers: [registry],
});

/** Notification deliveries: `notificationDeliveries.inc({ outcome: 'delivered' | 'failed' | 'retrying' | 'dropped' })`. */
export const notificationDeliveries = new client.Counter({
  name: 'sluice_notification_deliveries_total',
  help: 'Notification (webhook) delivery attempts by outcome',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

/** Pull and check runs: `pullRuns.inc({ kind: 'pull' | 'check', outcome: 'success' | 'failure' | 'skipped' })`. */
export const pullRuns = new client.Counter({
  name: 'sluice_pull_runs_total',
  help: 'Pull and check runs by kind (pull, check) and outcome',
  labelNames: ['kind', 'outcome'] as const,
  registers: [registry],
});

// ── State sampled at scrape time (bindServerGauges) ──────────────────────────
export const spoolRecords = new client.Gauge({
  name: 'sluice_spool_records',
  help: 'Records durable in the spool awaiting the pipeline (leased ones included)',
  registers: [registry],
});
export const spoolBytes = new client.Gauge({
  name: 'sluice_spool_bytes',
  help: 'Bytes the spooled bodies take in LMDB (pages of the spool body database)',
  registers: [registry],
});
export const spoolProcessingRecords = new client.Gauge({
  name: 'sluice_spool_processing_records',
  help: 'Spooled records leased by the pipeline right now',
  registers: [registry],
});
export const pipelineLag = new client.Gauge({
  name: 'sluice_pipeline_lag_seconds',
  help: 'Age of the oldest entry still in the spool (0 when the spool is empty)',
  registers: [registry],
});
export const workerUtilization = new client.Gauge({
  name: 'sluice_worker_utilization_ratio',
  help: 'Share of pipeline worker threads running a batch right now (0 to 1)',
  registers: [registry],
});
export const workerThreads = new client.Gauge({
  name: 'sluice_worker_threads',
  help: 'Pipeline worker threads',
  registers: [registry],
});
export const rollupMergeBacklog = new client.Gauge({
  name: 'sluice_rollup_merge_backlog_batches',
  help: 'Committed batches whose metric partials still wait to be merged into DuckDB',
  registers: [registry],
});
export const compactionBacklog = new client.Gauge({
  name: 'sluice_rollup_compaction_backlog_rows',
  help: 'Partial rollup rows not yet compacted into tiers, summed over live metrics',
  registers: [registry],
});

// Event-loop delay, GC pauses, heap and RSS: prom-client's standard Node.js and process metrics
// (nodejs_eventloop_lag_seconds, nodejs_gc_duration_seconds, nodejs_heap_size_used_bytes,
// process_resident_memory_bytes, …), unprefixed so existing dashboards work.
client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
// prom-client's `nodejs_active_*_total` are gauges with a counter's suffix, which `promtool check
// metrics` refuses; the same counts stay available per kind (`nodejs_active_handles{type}` …).
for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
  registry.removeSingleMetric(name);
