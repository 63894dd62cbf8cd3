/**
 * The worker's batch processing on nested records (bench/transform/nested-records.ts), in one
 * process: leases of BENCH_LEASE_RECORDS records (default 4,300: the 16 MB lease of ~3.7 KB
 * records) through `processBatch` and the book's planning, as a pipeline worker runs them. Prints
 * µs (wall and CPU) per record of the processing (decode → files written), so a CPU profile of this process
 * (`node --cpu-prof`) is the worker's time on these records.
 * Run: npx tsc -p . && node dist/bench/pipeline/nested-batch.bench.js
 * (BENCH_BATCHES timed leases, default 20, after BENCH_WARM_BATCHES, default 5; BENCH_KEY_ORDERS, default 3;
 * BENCH_INPUT `nested` (default) or `flat`.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SCHEMA_SETTINGS } from '../../src/catalog/collections.js';
import { newId } from '../../src/ids.js';
import { createBatchProcessor } from '../../src/pipeline/process-batch.js';
import { createBatchResolution } from '../../src/pipeline/resolver.js';
import { SchemaBook } from '../../src/schema/book.js';
import { makeNestedRecords } from '../transform/nested-records.js';
import { makeNdjsonBodies } from './records.js';

const LEASE = Number(process.env.BENCH_LEASE_RECORDS ?? 4300);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 20);
const WARM = Number(process.env.BENCH_WARM_BATCHES ?? 5);
const KEY_ORDERS = Number(process.env.BENCH_KEY_ORDERS ?? 3);
const INPUT = process.env.BENCH_INPUT ?? 'nested';
const PER_ENTRY = 500;

function leaseBodies(b: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < LEASE; at += PER_ENTRY) {
    const n = Math.min(PER_ENTRY, LEASE - at);
    if (INPUT === 'flat') out.push(Buffer.from(makeNdjsonBodies(1, n, b * LEASE + at, 'flat')[0]!));
    else out.push(Buffer.from(makeNestedRecords(n, 1000 + b * LEASE + at, { keyOrders: KEY_ORDERS }).map((r) => JSON.stringify(r)).join('\n')));
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-nested-'));
try {
  const leases = Array.from({ length: WARM + BATCHES }, (_, b) => leaseBodies(b));
  const bytes = leases.slice(WARM).reduce((n, l) => n + l.reduce((m, x) => m + x.byteLength, 0), 0);
  const processBatch = createBatchProcessor();
  const book = new SchemaBook({ teamId: 't', projectId: 'p', collectionId: 'c' });
  const settings = { ...DEFAULT_SCHEMA_SETTINGS };
  let seq = 1;
  let ms = 0;
  let cpuUs = 0;
  let files = 0;
  for (let b = 0; b < leases.length; b++) {
    const entries = leases[b]!.map((body) => ({ seq: seq++, received_at: Date.now(), format: 'ndjson' as const, body }));
    const resolution = createBatchResolution({ book, settings, nowMs: () => Date.now(), newVersionId: () => newId('schemaVersion') });
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const result = await processBatch({ collectionId: 'c', projectId: 'p', rules: { opaquePaths: [], trackedPaths: [], maxDepth: 6 }, entries, firstSeq: entries[0]!.seq, lastSeq: seq - 1, filesDir: dir }, resolution.resolve);
    book.apply(resolution.plan()!);
    if (b >= WARM) {
      ms += performance.now() - t0;
      const c = process.cpuUsage(c0);
      cpuUs += c.user + c.system;
      files += result.files.length;
    }
  }
  const records = BATCHES * LEASE;
  console.log(`${INPUT}: ${BATCHES} leases of ${LEASE} records (${(bytes / records).toFixed(0)} B/record), ${(files / BATCHES).toFixed(1)} files per lease`);
  console.log(`µs/record ${((ms * 1000) / records).toFixed(1)}  CPU µs/record ${(cpuUs / records).toFixed(1)}  records/s ${Math.round(records / (ms / 1000))}  MB/s ${(bytes / 1e6 / (ms / 1000)).toFixed(1)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
