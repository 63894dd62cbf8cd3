import { resolve } from 'node:path';

/** Runtime configuration, read once from the `SLUICE_*` environment (docs/architecture.md, "Fixed contracts"). */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  publicUrl: string;
  adminEmail: string;
  adminPassword: string | undefined;
  bootstrapKey: string | undefined;
  allowPrivateTargets: boolean;
  logLevel: string;
  /** Largest control-plane request body, bytes. */
  maxBodyBytes: number;
  /** Largest ingest request body (after decompression), bytes. */
  maxIngestBytes: number;
  /** Pipeline worker threads. */
  workers: number;
  /** Records per pipeline batch (spool lease); 0 = the default (runner.ts LEASE_MAX_RECORDS). */
  leaseMaxRecords: number;
  /**
   * Tests only: hold each batch's DuckDB rollup merge this long after its LMDB commit, widening the
   * window a crash test kills in (docs/metrics.md, "Rollups"). 0 in production.
   */
  rollupMergeDelayMs: number;
  /** Tests only: partial rows a rollup compaction pass folds at most (0: the default). */
  rollupCompactRows: number;
  /** Run the schema pipeline (spool → collection files). `SLUICE_PIPELINE=0` leaves the spool untouched (ingest tests). */
  pipeline: boolean;
  /** Ingest refuses with spool_full_disk_gate below this many free bytes on the data volume. */
  minFreeDiskBytes: number;
  /** Ingest refuses with spool_full_ingest_queue past this many spooled records awaiting the pipeline. */
  maxPendingRecords: number;
  /**
   * Ingest into a collection refuses with spool_full_ingest_queue while its oldest spooled entry has
   * waited longer than this for the pipeline, ms (0: no limit; the default without a pipeline).
   */
  maxPendingAgeMs: number;
  /** Ingest bodies held in memory at once (being read, parsed or awaiting their commit), bytes; past it spool_full_ingest_queue. */
  maxIngestMemoryBytes: number;
  /** An ingest body must arrive within this many ms of its request's start, else the connection is closed. */
  ingestBodyTimeoutMs: number;
  /** How often open pages check whether their metrics have new data (SLUICE_PAGE_WATCH_MS; docs/pages.md, "Live refresh"). */
  pageWatchMs: number;
  /** `GET /metrics` answers without credentials (docs/self-metrics.md). */
  metricsPublic: boolean;
  /** A new metric's `series_limit` when its body sets none (docs/metrics.md, "Series limits"); 0 = the default. */
  maxSeriesPerMetric: number;
  /** Series all metrics of a project may register together; 0 = the default. */
  maxSeriesPerProject: number;
  /** AES-256 key sealing header values of pulls and checks (64 hex chars or base64); unset: generated into DATA_DIR/secret.key. */
  secretKey: string | undefined;
  /** Runs of pulls and checks due on the same minute start spread over this many ms after the slot. */
  fetchSpreadMs: number;
  /** Largest response body (decoded) a pull reads; past it the run fails at stage `response`. */
  pullMaxBytes: number;
  /** When > 0, caps every connect/head/body timeout of pulls and checks (ms); 0 keeps the defaults. */
  fetchTimeoutMs: number;
  /** Bytes the rollups' DuckDB may hold in its buffer manager; 0 = the default (docs/self-hosting.md, "Memory"). */
  duckdbMemoryBytes: number;
  /** The rollups' DuckDB threads; 0 = the default. */
  duckdbThreads: number;
}

/** One environment variable: its name, its default as users read it, and what it does. */
export interface EnvVar {
  name: string;
  default: string;
  meaning: string;
}

/**
 * Every `SLUICE_*` variable `loadConfig` reads, described once. The tables in README.md and
 * docs/self-hosting.md are generated from this list (`npm run docs:env`); test/config-doc.test.ts
 * fails when a table or this list drifts from what `loadConfig` reads. Add one row per variable.
 */
export const ENVIRONMENT: readonly EnvVar[] = [
  { name: 'SLUICE_HOST', default: '`127.0.0.1`', meaning: 'address to listen on' },
  { name: 'SLUICE_PORT', default: '`8080`', meaning: 'port (0 picks a free one)' },
  { name: 'SLUICE_DATA_DIR', default: '`./data`', meaning: 'LMDB environment, Parquet files, DuckDB rollups' },
  { name: 'SLUICE_PUBLIC_URL', default: '`http://<host>:<port>`', meaning: 'base of ingest URLs handed out' },
  { name: 'SLUICE_ADMIN_EMAIL', default: '`admin@localhost`', meaning: "bootstrap owner's email" },
  { name: 'SLUICE_ADMIN_PASSWORD', default: 'generated', meaning: "bootstrap owner's password" },
  { name: 'SLUICE_BOOTSTRAP_KEY', default: 'generated', meaning: "the bootstrap API key's secret, exactly" },
  { name: 'SLUICE_LOG_LEVEL', default: '`info`', meaning: 'pino level (`silent` to mute)' },
  {
    name: 'SLUICE_MAX_BODY_BYTES',
    default: '`1048576`',
    meaning: 'largest control-plane body (team updates allow logos up to 5 MB)',
  },
  {
    name: 'SLUICE_MAX_INGEST_BYTES',
    default: '`10485760`',
    meaning: 'largest ingest body or WebSocket frame, before and after decompression',
  },
  {
    name: 'SLUICE_MAX_INGEST_MEMORY_BYTES',
    default: '`268435456`',
    meaning: 'ingest bodies held in memory at once (past it: 503 `spool_full_ingest_queue`)',
  },
  { name: 'SLUICE_INGEST_BODY_TIMEOUT_MS', default: '`60000`', meaning: 'time to receive a whole ingest body' },
  {
    name: 'SLUICE_MIN_FREE_DISK_BYTES',
    default: '`536870912`',
    meaning: 'free disk under the data directory below which ingest answers 503 `spool_full_disk_gate`',
  },
  {
    name: 'SLUICE_MAX_SERIES_PER_METRIC',
    default: '`10000`',
    meaning:
      'a new metric\'s `series_limit` when its body sets none (at most 100000; docs/metrics.md, "Series limits")',
  },
  {
    name: 'SLUICE_MAX_SERIES_PER_PROJECT',
    default: '`200000`',
    meaning: 'series all metrics of a project may register together; past it new series fold into `__other__`',
  },
  {
    name: 'SLUICE_MAX_PENDING_RECORDS',
    default: '`5000000`',
    meaning: 'records waiting in the spool past which ingest answers 503 `spool_full_ingest_queue`',
  },
  {
    name: 'SLUICE_MAX_PENDING_AGE_MS',
    default: '`3000` (`0` with `SLUICE_PIPELINE=0`)',
    meaning:
      "how long a collection's oldest spooled records may wait for the pipeline before ingest into it answers 503 `spool_full_ingest_queue` (`0`: no limit)",
  },
  { name: 'SLUICE_WORKERS', default: '`0` (one per CPU)', meaning: 'pipeline worker threads' },
  {
    name: 'SLUICE_LEASE_MAX_RECORDS',
    default: '`0` (50,000)',
    meaning: 'records per pipeline batch; small values make many small batches (tests of batches in parallel)',
  },
  {
    name: 'SLUICE_PIPELINE',
    default: '`1`',
    meaning: '`0` runs ingest only: the spool fills, nothing is processed (benchmarks, debugging)',
  },
  {
    name: 'SLUICE_SECRET_KEY',
    default: 'generated into `DATA_DIR/secret.key` (mode 0600)',
    meaning:
      'AES-256-GCM key (64 hex characters or base64 of 32 bytes) sealing the header values of pulls and checks; keep it with backups',
  },
  {
    name: 'SLUICE_FETCH_SPREAD_MS',
    default: '`1000`',
    meaning: 'runs of pulls and checks due on the same minute start spread over this many ms after the slot',
  },
  {
    name: 'SLUICE_PULL_MAX_BYTES',
    default: '`10485760`',
    meaning:
      'largest response body (decoded) a pull reads, per endpoint and per discovered target; past it the run fails at stage `response`',
  },
  {
    name: 'SLUICE_FETCH_TIMEOUT_MS',
    default: '`0` (defaults)',
    meaning: 'caps every timeout of pulls and checks (connect, response head, body); docs/pulls-and-checks.md',
  },
  {
    name: 'SLUICE_ALLOW_PRIVATE_TARGETS',
    default: '`0`',
    meaning: '`1` lets pulls and checks reach private addresses and plain HTTP (private networks, tests)',
  },
  {
    name: 'SLUICE_PAGE_WATCH_MS',
    default: '`15000`',
    meaning: 'how often open pages check their metrics for new data (docs/pages.md, "Live refresh")',
  },
  {
    name: 'SLUICE_METRICS_PUBLIC',
    default: '`0`',
    meaning: '`1` serves `GET /metrics` without credentials (else a key with `servers:read`)',
  },
  {
    name: 'SLUICE_DUCKDB_MEMORY_BYTES',
    default: '`0` (512 MiB)',
    meaning:
      'memory the rollups\' DuckDB keeps (its `memory_limit`): past it, it evicts cached blocks and spills to `DATA_DIR/rollups.duckdb.tmp` (docs/self-hosting.md, "Memory")',
  },
  { name: 'SLUICE_DUCKDB_THREADS', default: '`0` (2)', meaning: "the rollups' DuckDB threads" },
  {
    name: 'SLUICE_ROLLUP_MERGE_DELAY_MS',
    default: '`0`',
    meaning: 'tests only: hold each rollup merge this long after its commit (crash tests)',
  },
  {
    name: 'SLUICE_ROLLUP_COMPACT_ROWS',
    default: '`0`',
    meaning: 'tests only: partial rows one rollup compaction pass folds at most (0: the default)',
  },
];

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return Math.floor(n);
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.SLUICE_HOST || '127.0.0.1';
  const port = int(env, 'SLUICE_PORT', 8080);
  const publicHost = host.includes(':') ? `[${host}]` : host;
  return {
    host,
    port,
    dataDir: resolve(env.SLUICE_DATA_DIR || './data'),
    publicUrl: (env.SLUICE_PUBLIC_URL || `http://${publicHost}:${port}`).replace(/\/+$/, ''),
    adminEmail: env.SLUICE_ADMIN_EMAIL || 'admin@localhost',
    adminPassword: env.SLUICE_ADMIN_PASSWORD || undefined,
    bootstrapKey: env.SLUICE_BOOTSTRAP_KEY || undefined,
    allowPrivateTargets: env.SLUICE_ALLOW_PRIVATE_TARGETS === '1',
    logLevel: env.SLUICE_LOG_LEVEL || 'info',
    maxBodyBytes: int(env, 'SLUICE_MAX_BODY_BYTES', 1024 * 1024),
    maxIngestBytes: int(env, 'SLUICE_MAX_INGEST_BYTES', 10 * 1024 * 1024),
    workers: int(env, 'SLUICE_WORKERS', 0),
    leaseMaxRecords: int(env, 'SLUICE_LEASE_MAX_RECORDS', 0),
    rollupMergeDelayMs: int(env, 'SLUICE_ROLLUP_MERGE_DELAY_MS', 0),
    rollupCompactRows: int(env, 'SLUICE_ROLLUP_COMPACT_ROWS', 0),
    pipeline: env.SLUICE_PIPELINE !== '0',
    minFreeDiskBytes: int(env, 'SLUICE_MIN_FREE_DISK_BYTES', 512 * 1024 * 1024),
    maxPendingRecords: int(env, 'SLUICE_MAX_PENDING_RECORDS', 5_000_000),
    // Without a pipeline nothing drains the spool: no age limit unless one is asked for (ingest tests).
    maxPendingAgeMs: int(env, 'SLUICE_MAX_PENDING_AGE_MS', env.SLUICE_PIPELINE === '0' ? 0 : 3_000),
    maxIngestMemoryBytes: int(env, 'SLUICE_MAX_INGEST_MEMORY_BYTES', 256 * 1024 * 1024),
    ingestBodyTimeoutMs: int(env, 'SLUICE_INGEST_BODY_TIMEOUT_MS', 60_000),
    pageWatchMs: int(env, 'SLUICE_PAGE_WATCH_MS', 15_000),
    metricsPublic: env.SLUICE_METRICS_PUBLIC === '1',
    maxSeriesPerMetric: int(env, 'SLUICE_MAX_SERIES_PER_METRIC', 0),
    maxSeriesPerProject: int(env, 'SLUICE_MAX_SERIES_PER_PROJECT', 0),
    secretKey: env.SLUICE_SECRET_KEY || undefined,
    fetchSpreadMs: int(env, 'SLUICE_FETCH_SPREAD_MS', 1_000),
    pullMaxBytes: int(env, 'SLUICE_PULL_MAX_BYTES', 10 * 1024 * 1024),
    fetchTimeoutMs: int(env, 'SLUICE_FETCH_TIMEOUT_MS', 0),
    duckdbMemoryBytes: int(env, 'SLUICE_DUCKDB_MEMORY_BYTES', 0),
    duckdbThreads: int(env, 'SLUICE_DUCKDB_THREADS', 0),
  };
}
