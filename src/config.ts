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
  /** Ingest bodies held in memory at once (being read, parsed or awaiting their commit), bytes; past it spool_full_ingest_queue. */
  maxIngestMemoryBytes: number;
  /** An ingest body must arrive within this many ms of its request's start, else the connection is closed. */
  ingestBodyTimeoutMs: number;
  /** AES-256 key sealing header values of pulls and checks (64 hex chars or base64); unset: generated into DATA_DIR/secret.key. */
  secretKey: string | undefined;
  /** Runs of pulls and checks due on the same minute start spread over this many ms after the slot. */
  fetchSpreadMs: number;
  /** Largest response body (decoded) a pull reads; past it the run fails at stage `response`. */
  pullMaxBytes: number;
  /** When > 0, caps every connect/head/body timeout of pulls and checks (ms); 0 keeps the defaults. */
  fetchTimeoutMs: number;
}

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
    maxIngestMemoryBytes: int(env, 'SLUICE_MAX_INGEST_MEMORY_BYTES', 256 * 1024 * 1024),
    ingestBodyTimeoutMs: int(env, 'SLUICE_INGEST_BODY_TIMEOUT_MS', 60_000),
    secretKey: env.SLUICE_SECRET_KEY || undefined,
    fetchSpreadMs: int(env, 'SLUICE_FETCH_SPREAD_MS', 1_000),
    pullMaxBytes: int(env, 'SLUICE_PULL_MAX_BYTES', 10 * 1024 * 1024),
    fetchTimeoutMs: int(env, 'SLUICE_FETCH_TIMEOUT_MS', 0),
  };
}
