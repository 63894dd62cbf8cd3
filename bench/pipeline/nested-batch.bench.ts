/**
 * The worker's batch processing on nested records (bench/transform/nested-records.ts), in one
 * process: leases of BENCH_LEASE_RECORDS records (default 4,300: the 16 MB lease of ~3.7 KB
 * records) through `processBatch` and the book's planning, as a pipeline worker runs them. Prints
 * µs (wall and CPU) per record of the processing (decode → files written), so a CPU profile of this process
 * (`node --cpu-prof`) is the worker's time on these records.
 * Run: npx tsc -p . && node dist/bench/pipeline/nested-batch.bench.js
 * (BENCH_BATCHES timed leases, default 20, after BENCH_WARM_BATCHES, default 5; BENCH_KEY_ORDERS, default 3;
 * BENCH_INPUT `nested` (default) or `flat`; BENCH_BASELINE=<a copy of dist/>: every lease also runs on
 * that build, alternating which goes first, and the ratio is printed — an A/B where the machine's
 * noise falls on both builds alike.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
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
/** Another build's output directory (a copy of dist/ from main): each lease also runs on it, in the same process. */
const BASELINE = process.env.BENCH_BASELINE || null;

function leaseBodies(b: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < LEASE; at += PER_ENTRY) {
    const n = Math.min(PER_ENTRY, LEASE - at);
    if (INPUT === 'flat') out.push(Buffer.from(makeNdjsonBodies(1, n, b * LEASE + at, 'flat')[0]!));
    else
      out.push(
        Buffer.from(
          makeNestedRecords(n, 1000 + b * LEASE + at, { keyOrders: KEY_ORDERS })
            .map((r) => JSON.stringify(r))
            .join('\n'),
        ),
      );
  }
  return out;
}

/** One build's modules (this one, or BENCH_BASELINE's copy of dist/). */
interface Build {
  name: string;
  createBatchProcessor: typeof createBatchProcessor;
  createBatchResolution: typeof createBatchResolution;
  SchemaBook: typeof SchemaBook;
}

async function loadBuild(root: string): Promise<Build> {
  const at = (p: string) => pathToFileURL(join(resolve(root), p)).href;
  return {
    name: root,
    createBatchProcessor: (
      (await import(at('src/pipeline/process-batch.js'))) as { createBatchProcessor: typeof createBatchProcessor }
    ).createBatchProcessor,
    createBatchResolution: (
      (await import(at('src/pipeline/resolver.js'))) as { createBatchResolution: typeof createBatchResolution }
    ).createBatchResolution,
    SchemaBook: ((await import(at('src/schema/book.js'))) as { SchemaBook: typeof SchemaBook }).SchemaBook,
  };
}

const builds: Build[] = [{ name: 'this build', createBatchProcessor, createBatchResolution, SchemaBook }];
if (BASELINE) builds.unshift(await loadBuild(BASELINE));
const dirs = builds.map(() => mkdtempSync(join(tmpdir(), 'sluice-bench-nested-')));
try {
  const leases = Array.from({ length: WARM + BATCHES }, (_, b) => leaseBodies(b));
  const bytes = leases.slice(WARM).reduce((n, l) => n + l.reduce((m, x) => m + x.byteLength, 0), 0);
  const runs = builds.map((build, i) => ({
    build,
    dir: dirs[i]!,
    processBatch: build.createBatchProcessor(),
    book: new build.SchemaBook({ teamId: 't', projectId: 'p', collectionId: 'c' }),
    seq: 1,
    ms: 0,
    cpuUs: 0,
    files: 0,
    fileBytes: 0,
  }));
  const settings = { ...DEFAULT_SCHEMA_SETTINGS };
  for (let b = 0; b < leases.length; b++) {
    // With a baseline, each lease runs on both builds, in alternating order (the machine's noise falls on both).
    for (const run of b % 2 === 0 ? runs : [...runs].reverse()) {
      const entries = leases[b]!.map((body) => ({
        seq: run.seq++,
        received_at: Date.now(),
        format: 'ndjson' as const,
        body,
      }));
      const resolution = run.build.createBatchResolution({
        book: run.book,
        settings,
        nowMs: () => Date.now(),
        newVersionId: () => newId('schemaVersion'),
      });
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const result = await run.processBatch(
        {
          collectionId: 'c',
          projectId: 'p',
          rules: { opaquePaths: [], trackedPaths: [], maxDepth: 6 },
          entries,
          firstSeq: entries[0]!.seq,
          lastSeq: run.seq - 1,
          filesDir: run.dir,
        },
        resolution.resolve,
      );
      run.book.apply(resolution.plan()!);
      if (b >= WARM) {
        run.ms += performance.now() - t0;
        const c = process.cpuUsage(c0);
        run.cpuUs += c.user + c.system;
        run.files += result.files.length;
        run.fileBytes += result.files.reduce((n, f) => n + f.bytes, 0);
      }
    }
  }
  const records = BATCHES * LEASE;
  console.log(
    `${INPUT}: ${BATCHES} leases of ${LEASE} records (${(bytes / records).toFixed(0)} B/record), ${(runs[0]!.files / BATCHES).toFixed(1)} files per lease`,
  );
  for (const r of runs) {
    console.log(
      `${builds.length > 1 ? `${r.build.name}: ` : ''}µs/record ${((r.ms * 1000) / records).toFixed(1)}  CPU µs/record ${(r.cpuUs / records).toFixed(1)}  records/s ${Math.round(records / (r.ms / 1000))}  MB/s ${(bytes / 1e6 / (r.ms / 1000)).toFixed(1)}  file bytes/record ${(r.fileBytes / records).toFixed(0)}`,
    );
  }
  if (runs.length > 1)
    console.log(
      `this ÷ baseline: CPU µs/record ${(runs[1]!.cpuUs / runs[0]!.cpuUs).toFixed(3)}, file bytes ${(runs[1]!.fileBytes / runs[0]!.fileBytes).toFixed(3)}`,
    );
} finally {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
