/**
 * Spool → Parquet: records/s through the real pipeline (LMDB spool leases, piscina workers,
 * fingerprint + versions + Arrow columns + zstd Parquet, manifests committed with the spool
 * deletion) for ~200-byte records over 10 shapes. Target ≥ 250,000 records/s on 2 cores.
 * Side by side: 1 worker vs one per CPU. Run: npx tsc -p . && node dist/bench/pipeline/pipeline.bench.js
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { systemClock } from '../../src/clock.js';
import { DEFAULT_SCHEMA_SETTINGS } from '../../src/catalog/collections.js';
import type { CollectionRecord } from '../../src/catalog/records.js';
import { Spool } from '../../src/ingest/spool.js';
import { WorkerPool } from '../../src/pipeline/pool.js';
import { PipelineRunner } from '../../src/pipeline/runner.js';
import { SchemaService } from '../../src/pipeline/schema-service.js';
import { Store } from '../../src/store/db.js';
import { makeNdjsonBodies } from './records.js';

const RECORDS_PER_ENTRY = 1000;
const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 600);
const COLLECTIONS = 4;

async function scenario(workers: number, bodies: Uint8Array[]): Promise<{ records: number; seconds: number; bytes: number; files: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-pipeline-'));
  const store = new Store(dir);
  try {
    const spool = new Spool(store);
    const now = new Date().toISOString();
    const collections = new Map<string, CollectionRecord>();
    for (let c = 0; c < COLLECTIONS; c++) {
      const id = `col_bench${String(c).padStart(16, '0')}`;
      collections.set(id, { ...DEFAULT_SCHEMA_SETTINGS, schema_opaque_paths: [], schema_tracked_paths: [], id, team_id: 'team_b', project_id: 'prj_b', source_id: 'src_b', slug: `c${c}`, name: `c${c}`, created_at: now, updated_at: now, deleted_at: null });
    }
    const ids = [...collections.keys()];
    let bytes = 0;
    const appends: Promise<number>[] = [];
    for (let i = 0; i < ENTRIES; i++) {
      const body = bodies[i % bodies.length]!;
      bytes += body.byteLength;
      appends.push(spool.append({ collection_id: ids[i % ids.length]!, project_id: 'prj_b', received_at: Date.now(), records: RECORDS_PER_ENTRY, format: 'ndjson', body }));
      if (appends.length >= 50) await Promise.all(appends.splice(0));
    }
    await Promise.all(appends);
    const log = pino({ level: 'warn' });
    const schema = new SchemaService(store, systemClock, log, dir);
    const pool = new WorkerPool(workers);
    // Warm the threads up (module load, wasm compile) before timing.
    await new Promise((r) => setTimeout(r, 300));
    const runner = new PipelineRunner({ spool, collections: { byId: (id) => collections.get(id) }, schema, pool, clock: systemClock, log });
    const t0 = performance.now();
    runner.start();
    const drained = await runner.idle(300_000);
    const seconds = (performance.now() - t0) / 1000;
    if (!drained) throw new Error('the pipeline did not drain');
    const files = ids.reduce((n, id) => n + schema.manifests(id).length, 0);
    const rows = ids.reduce((n, id) => n + schema.manifests(id).reduce((m, f) => m + f.rows, 0), 0);
    if (rows !== ENTRIES * RECORDS_PER_ENTRY) throw new Error(`expected ${ENTRIES * RECORDS_PER_ENTRY} rows in files, found ${rows}`);
    await runner.stop();
    schema.close();
    return { records: rows, seconds, bytes, files };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const bodies = makeNdjsonBodies(20, RECORDS_PER_ENTRY);
const auto = availableParallelism();
const rows: Record<string, string | number>[] = [];
for (const workers of [1, auto]) {
  const r = await scenario(workers, bodies);
  rows.push({
    scenario: `${workers} worker${workers > 1 ? 's' : ''}`,
    records: r.records,
    seconds: r.seconds.toFixed(2),
    'records/s': Math.round(r.records / r.seconds).toLocaleString('en-US'),
    'MB/s in': (r.bytes / 1e6 / r.seconds).toFixed(1),
    files: r.files,
  });
}
console.log(`spool → Parquet: ${ENTRIES} spool entries × ${RECORDS_PER_ENTRY} records (~${Math.round(bodies[0]!.byteLength / RECORDS_PER_ENTRY)} B each, 10 shapes) over ${COLLECTIONS} collections, ${auto} CPUs`);
console.table(rows);
