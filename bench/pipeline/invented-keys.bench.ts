/**
 * Records that invent keys (`{"id": 7, "k7": 1}`: a new shape per record, as when ids or dates are
 * used as keys) against records of one shape, through the worker's batch processing and the book's
 * planning, side by side in one run. Such a collection must stay usable while the detector (or the
 * user) makes the inventing path opaque: every new shape is checked against the versions it could
 * join, and with hundreds of versions that check must not be a scan of all of them.
 * Run: npx tsc -p . && node dist/bench/pipeline/invented-keys.bench.js (BENCH_BATCHES, default 10).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SCHEMA_SETTINGS } from '../../src/catalog/collections.js';
import { newId } from '../../src/ids.js';
import { createBatchProcessor } from '../../src/pipeline/process-batch.js';
import { createBatchResolution } from '../../src/pipeline/resolver.js';
import { SchemaBook } from '../../src/schema/book.js';

const BATCHES = Number(process.env.BENCH_BATCHES ?? 10);
const PER_BATCH = 10_000;
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-invented-'));
let n = 0;

function body(invent: boolean, records: number): Buffer {
  const lines: string[] = [];
  for (let i = 0; i < records; i++, n++)
    lines.push(JSON.stringify(invent ? { id: n, [`k${n}`]: 1, v: 'x' } : { id: n, k: 1, v: 'x' }));
  return Buffer.from(lines.join('\n'));
}

async function run(invent: boolean): Promise<number> {
  const processBatch = createBatchProcessor();
  const book = new SchemaBook({ teamId: 't', projectId: 'p', collectionId: invent ? 'invented' : 'one' });
  const settings = { ...DEFAULT_SCHEMA_SETTINGS, schema_detector: 'manual' as const };
  let seq = 1;
  let ms = 0;
  for (let b = 0; b < BATCHES; b++) {
    const entries = Array.from({ length: 10 }, () => ({
      seq: seq++,
      received_at: Date.now(),
      format: 'ndjson' as const,
      body: body(invent, PER_BATCH / 10),
    }));
    const resolution = createBatchResolution({
      book,
      settings,
      nowMs: () => Date.now(),
      newVersionId: () => newId('schemaVersion'),
    });
    const t0 = performance.now();
    await processBatch(
      {
        collectionId: 'c',
        projectId: 'p',
        rules: { opaquePaths: [], trackedPaths: [], maxDepth: 6 },
        entries,
        firstSeq: entries[0]!.seq,
        lastSeq: seq - 1,
        filesDir: dir,
      },
      resolution.resolve,
    );
    book.apply(resolution.plan()!);
    ms += performance.now() - t0;
  }
  return (ms * 1000) / (BATCHES * PER_BATCH);
}

try {
  const rows: Record<string, string>[] = [];
  for (let round = 0; round < 2; round++) {
    const one = await run(false);
    const invented = await run(true);
    rows.push({
      round: String(round + 1),
      'one shape µs/record': one.toFixed(2),
      'invented keys µs/record': invented.toFixed(2),
      ratio: (invented / one).toFixed(1),
    });
  }
  console.log(
    `batches of ${PER_BATCH} records, ${BATCHES} per scenario (the book keeps growing: up to ${DEFAULT_SCHEMA_SETTINGS.schema_candidate_pool} candidate versions)`,
  );
  console.table(rows);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
