/**
 * Puts generated records straight into a view's files, as if the view had produced them: Parquet
 * files in the view's directory and their manifests (ViewFileManifest, origin `backfill`) in the
 * view store. The server must be stopped: the bench opens the data dir's LMDB itself, and at start
 * the server's orphan sweep would remove any file without a committed manifest.
 */
import { mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { Store } from '../../src/store/db.js';
import type { ViewFileManifest } from '../../src/transform/view-records.js';
import { ViewStore } from '../../src/transform/view-store.js';
import type { TrafficFileTask, TrafficFileWritten } from './traffic-file.js';

export interface GeneratedFile {
  /** Absolute path. */
  path: string;
  rows: number;
  bytes: number;
  minTs: number;
  maxTs: number;
}

export interface GenerationPlan {
  dataDir: string;
  viewId: string;
  /** The view's directory (BenchServer.viewDir). */
  dir: string;
  records: number;
  /** Event times spread evenly over [from, to): file k covers the k-th slice of it. */
  from: number;
  to: number;
  fileRows: number;
  users: number;
  seed: number;
  threads: number;
}

/** Write the files (in `threads` worker threads) and commit their manifests in one transaction. */
export async function generateViewFiles(plan: GenerationPlan): Promise<GeneratedFile[]> {
  mkdirSync(plan.dir, { recursive: true });
  const count = Math.max(1, Math.ceil(plan.records / plan.fileRows));
  const span = (plan.to - plan.from) / count;
  const tasks: TrafficFileTask[] = [];
  for (let k = 0; k < count; k++) {
    const rows = Math.min(plan.fileRows, plan.records - k * plan.fileRows);
    const from = Math.round(plan.from + k * span);
    const to = k === count - 1 ? plan.to : Math.round(plan.from + (k + 1) * span);
    tasks.push({
      path: join(plan.dir, `gen-${String(k).padStart(5, '0')}.parquet`),
      seed: plan.seed * 1_000_003 + k,
      rows,
      from,
      to,
      users: plan.users,
    });
  }
  const written = await inThreads(tasks, plan.threads);
  written.sort((a, b) => a.minTs - b.minTs);
  const store = new Store(plan.dataDir);
  try {
    const views = new ViewStore(store);
    const now = new Date().toISOString();
    await store.transaction(() => {
      for (const f of written) {
        const m: ViewFileManifest = {
          id: basename(f.path),
          view_id: plan.viewId,
          first_seq: 0,
          last_seq: 0,
          rows: f.rows,
          bytes: f.bytes,
          min_ts: f.minTs,
          max_ts: f.maxTs,
          created_at: now,
          origin: 'backfill',
        };
        void views.files.put(plan.viewId, m);
      }
    });
  } finally {
    await store.close();
  }
  return written;
}

/** Round-robin the tasks over `threads` workers running traffic-file.js. */
async function inThreads(tasks: TrafficFileTask[], threads: number): Promise<TrafficFileWritten[]> {
  const entry = new URL('./traffic-file.js', import.meta.url);
  const shares = Array.from({ length: Math.min(threads, tasks.length) }, (_, w) =>
    tasks.filter((_, i) => i % threads === w),
  );
  const parts = await Promise.all(
    shares.map(
      (share) =>
        new Promise<TrafficFileWritten[]>((resolve, reject) => {
          const out: TrafficFileWritten[] = [];
          const worker = new Worker(entry, { workerData: { trafficFiles: share } });
          worker.on('message', (m: TrafficFileWritten) => out.push(m));
          worker.on('error', reject);
          worker.on('exit', (code) =>
            code === 0 && out.length === share.length
              ? resolve(out)
              : reject(
                  new Error(`a file generator thread exited with ${code} after ${out.length} of ${share.length} files`),
                ),
          );
        }),
    ),
  );
  return parts.flat();
}
