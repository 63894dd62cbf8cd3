import type { TemplatedApp } from 'uws-pack';
import type { Clock } from '../clock.js';
import type { IngestDeps } from './ingest-deps.js';
import type { Store } from '../store/db.js';
import { IngestGate } from './backpressure.js';
import { mountHttpIngest } from './http-front.js';
import { IngestCore } from './ingest-core.js';
import { Spool } from '../spool/spool.js';
import { PipelineTelemetry } from '../telemetry/pipeline-telemetry.js';
import { mountWsIngest } from './ws-front.js';

/** The pipeline-facing services the ingest side owns (built with the others in server.ts). */
export function createIngestServices(store: Store, clock: Clock): { spool: Spool; telemetry: PipelineTelemetry } {
  return { spool: new Spool(store), telemetry: new PipelineTelemetry(store, clock) };
}

/** The mounted ingest front. */
export interface IngestFront {
  core: IngestCore;
  /** Stop taking frames, wait for in-flight requests and their spool commits (≤ `timeoutMs`), close sockets. */
  drain(timeoutMs?: number): Promise<void>;
}

/** Expired idempotency results are swept this often (each sweep removes all of them, in chunks). */
const SWEEP_INTERVAL_MS = 5 * 60 * 1000;
/** The first sweep, soon after start. */
const FIRST_SWEEP_MS = 10_000;

/**
 * Mount POST/OPTIONS/WebSocket `/ingest` on the uWS app (exact routes, so they win over the
 * control-plane catch-all), start pipeline telemetry and the idempotency sweep, and register the
 * spool's part of collection destruction.
 */
export function mountIngest(app: TemplatedApp, s: IngestDeps, opts: { stopping(): boolean }): IngestFront {
  const gate = new IngestGate(
    {
      dataDir: s.config.dataDir,
      minFreeDiskBytes: s.config.minFreeDiskBytes,
      maxPendingRecords: s.config.maxPendingRecords,
      maxBytesInFlight: s.config.maxIngestMemoryBytes,
      maxPendingAgeMs: s.config.maxPendingAgeMs,
    },
    s.spool,
    s.clock,
  );
  const core = new IngestCore(s, gate);
  let inFlight = 0;
  let idle: (() => void) | null = null;
  const begin = () => {
    inFlight++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      inFlight--;
      if (inFlight === 0 && idle) idle();
    };
  };
  const ctx = {
    core,
    log: s.log,
    maxBytes: s.config.maxIngestBytes,
    bodyTimeoutMs: s.config.ingestBodyTimeoutMs,
    stopping: opts.stopping,
    begin,
  };
  mountHttpIngest(app, ctx);
  const ws = mountWsIngest(app, s, ctx);

  s.telemetry.start(s.spool, s.scheduler);
  const sweepJob = s.scheduler.register({
    name: 'idempotency-sweep',
    schedule: { everyMs: FIRST_SWEEP_MS },
    run: async () => {
      // After the first sweep, the regular period.
      sweepJob.reschedule({ everyMs: SWEEP_INTERVAL_MS });
      try {
        await core.idempotency.sweep();
      } catch (err) {
        s.log.warn({ err }, 'idempotency sweep failed');
      }
    },
  });

  return {
    core,
    async drain(timeoutMs = 10_000) {
      // No sweep starts while draining; one in flight is awaited below, before the store can close.
      const sweepStopped = sweepJob.unregister();
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((r) => (idle = r)),
          new Promise((r) => setTimeout(r, timeoutMs).unref()),
        ]);
      }
      ws.closeAll();
      await s.telemetry.flush();
      await sweepStopped;
    },
  };
}
