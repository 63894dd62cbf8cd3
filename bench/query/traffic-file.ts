/**
 * One generated view file: `rows` traffic records with event times in [from, to), written as a
 * view output file (src/transform/view-file.ts) at `path`. Run in worker threads by view-files.ts
 * (encoding is CPU-bound: one thread per core halves the set-up); this module is also the worker's
 * entry point.
 */
import { writeFileSync } from 'node:fs';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { viewFileBytes } from '../../src/transform/view-file.js';
import { TrafficSource, trafficColumns } from './traffic.js';

export interface TrafficFileTask {
  path: string;
  seed: number;
  rows: number;
  from: number;
  to: number;
  /** Size of the user-id pool. */
  users: number;
}

export interface TrafficFileWritten {
  path: string;
  rows: number;
  bytes: number;
  minTs: number;
  maxTs: number;
}

/**
 * Rows carry spool sequence 0 (`__seq`): older than any sequence the spool hands out (it starts
 * at 1), as records stored before anything live arrives would be.
 */
export function writeTrafficFile(t: TrafficFileTask): TrafficFileWritten {
  const source = new TrafficSource(t.seed, t.users);
  const ts = source.times(t.rows, t.from, t.to);
  const bytes = viewFileBytes(ts, new Float64Array(t.rows), trafficColumns(source, t.rows));
  writeFileSync(t.path, bytes);
  return { path: t.path, rows: t.rows, bytes: bytes.length, minTs: ts[0]!, maxTs: ts[t.rows - 1]! };
}

if (
  !isMainThread &&
  parentPort !== null &&
  (workerData as { trafficFiles?: unknown } | null)?.trafficFiles !== undefined
) {
  const port = parentPort;
  for (const task of (workerData as { trafficFiles: TrafficFileTask[] }).trafficFiles)
    port.postMessage(writeTrafficFile(task));
}
