/**
 * View transforms: records/s through `TransformSandbox` (isolated-vm, one isolate call per batch)
 * side by side with the same work run directly in this thread. Target: ≥ 300,000 records/s per
 * worker for a 5-field script on flat records, sandbox ≤ 1.5× direct.
 *
 * Inputs: (a) flat: ~200-byte records over 10 shapes (bench/pipeline/records.ts), batches of
 * 50,000 (one lease); (b) nested: status records of 2–6 KB, 24 shapes (nested-records.ts),
 * batches of 5,000 (~18 MB of JSON; a batch must fit the isolate's memory limit).
 *
 * Per input, four ways, each an op over all the records:
 * - sandbox: `TransformSandbox.run` with the view's declared fields and their types, outputs decoded to columns in
 *   this thread (what a worker gets);
 * - sandbox in a child process: `TransformProcess.run` (records over IPC as UTF-8 bytes, as a worker
 *   sends them; the answer decoded here);
 * - the same, templated records: records matched by a learned template (as a worker matches them)
 *   are sent as their slot values and built in the isolate, not parsed (src/transform/record-slots.ts;
 *   the capture is untimed here: it is the worker's);
 * - direct, same harness: the harness source evaluated in a node:vm context of this isolate and
 *   its answer decoded the same way — identical code, so the ratio is the cost of the isolate
 *   boundary and of the isolate's smaller heap;
 * - direct, plain: JSON.parse of the batch as one JSON array + the function + JSON.stringify of
 *   the outputs, ctx strings prepared beforehand (untimed), no checks, no decoding — the floor.
 *
 * Run: npx tsc -p . && node dist/bench/transform/sandbox.bench.js
 * (BENCH_FLAT records, default 50,000; BENCH_NESTED records, default 20,000; BENCH_MEMORY_MB
 * the sandbox's memory limit, default 128 — its young generation is sized from it.)
 */
import { createContext, runInContext } from 'node:vm';
import { Bench } from 'tinybench';
import { decodeRunResult } from '../../src/transform/harness/decode-answer.js';
import { HARNESS_SOURCE } from '../../src/transform/harness/program-source.js';
import type { OutputField } from '../../src/transform/output-schema.js';
import { TransformSandbox } from '../../src/transform/sandbox.js';
import { TransformProcess } from '../../src/transform/sandbox-process.js';
import { makeRecords } from '../pipeline/records.js';
import { makeNestedRecords } from './nested-records.js';
import { RecordTemplates } from '../../src/pipeline/record-templates.js';
import { SlotCapture, type TemplateRecords } from '../../src/transform/record-slots.js';
import { FLAT_VIEW, NESTED_VIEW } from './view-scripts.js';

const FLAT = Number(process.env.BENCH_FLAT ?? 50_000);
const NESTED = Number(process.env.BENCH_NESTED ?? 20_000);
const MEMORY_MB = Number(process.env.BENCH_MEMORY_MB ?? 128);
for (const [k, v] of Object.entries({ BENCH_FLAT: FLAT, BENCH_NESTED: NESTED, BENCH_MEMORY_MB: MEMORY_MB })) {
  if (!Number.isSafeInteger(v) || v <= 0) throw new Error(`${k} must be a positive integer`);
}

const FLAT_SCRIPT = FLAT_VIEW.script;
const NESTED_SCRIPT = NESTED_VIEW.script;

interface Batch {
  recordsText: string;
  recordsBytes: Buffer;
  arrayText: string;
  receivedAt: Float64Array;
  timestamp: Float64Array;
  receivedIso: string[];
  timestampIso: string[];
  /** The batch's templated records, as a worker captures them (undefined: none matched). */
  templates: TemplateRecords | undefined;
}

/** Templates learned over the batch's records, then the records matched and captured. */
function templatedRecords(bytes: Buffer): TemplateRecords | undefined {
  const ranges: Array<[number, number]> = [];
  for (let s = 0; s <= bytes.length; ) {
    let e = bytes.indexOf(0x1e, s);
    if (e < 0) e = bytes.length;
    ranges.push([s, e]);
    s = e + 1;
  }
  const templates = new RecordTemplates();
  const keys = new Map<string, number>();
  for (const [s, e] of ranges) {
    if (templates.match(bytes, s, e) !== null) continue;
    // A shape key per key list (the learner needs only a key and a hash).
    const k = JSON.stringify(Object.keys(JSON.parse(bytes.toString('utf8', s, e)) as object));
    if (!keys.has(k)) keys.set(k, keys.size);
    templates.learn(bytes, s, e, keys.get(k)!, k);
  }
  const capture = new SlotCapture(ranges.length);
  ranges.forEach(([s, e], row) => {
    const t = templates.match(bytes, s, e);
    if (t !== null) capture.take(row, t, templates.values, bytes, s, e);
  });
  return capture.range(0, ranges.length);
}

function batches(
  records: Record<string, unknown>[],
  size: number,
  timeOf: (r: Record<string, unknown>, i: number) => number,
): Batch[] {
  const out: Batch[] = [];
  for (let s = 0; s < records.length; s += size) {
    const part = records.slice(s, s + size);
    const texts = part.map((r) => JSON.stringify(r));
    const timestamp = Float64Array.from(part, (r, i) => timeOf(r, s + i));
    const receivedAt = timestamp.map((t) => t + 1500);
    const recordsBytes = Buffer.from(texts.join('\u001e'));
    out.push({
      recordsText: texts.join('\u001e'),
      recordsBytes,
      templates: templatedRecords(recordsBytes),
      arrayText: `[${texts.join(',')}]`,
      receivedAt,
      timestamp,
      receivedIso: Array.from(receivedAt, (t) => new Date(t).toISOString()),
      timestampIso: Array.from(timestamp, (t) => new Date(t).toISOString()),
    });
  }
  return out;
}

type Transform = (record: unknown, ctx: unknown) => unknown;
let sink = 0;

function scenario(name: string, script: string, schema: readonly OutputField[], data: Batch[], records: number) {
  // The view's declared fields and types, as a worker names them (typed columns come back as arrays).
  const fields = schema.map((f) => f.name);
  const types = schema.map((f) => f.type);
  const sandbox = new TransformSandbox({ memoryLimitMb: MEMORY_MB, cpuTimeMsPerCall: 10_000 });
  const child = new TransformProcess({ memoryLimitMb: MEMORY_MB, cpuTimeMsPerCall: 10_000 });
  // The harness in a node:vm context of this isolate: same code, no isolate boundary.
  const vmContext = createContext({});
  const install = runInContext(HARNESS_SOURCE, vmContext) as (
    t: Transform,
    progress: SharedArrayBuffer,
    max: number,
  ) => (...args: unknown[]) => unknown;
  runInContext(script, vmContext);
  const vmRun = install(runInContext('transform', vmContext) as Transform, new SharedArrayBuffer(4), 64 * 1024 * 1024);
  const fn = runInContext(`(${script.replace('function transform', 'function')})`, createContext({})) as Transform;
  const viewId = 'view_01JBENCH';
  const fieldsJson = JSON.stringify(fields);
  const typesJson = JSON.stringify(types);

  return {
    name,
    records,
    tasks: {
      sandbox: () => {
        for (const b of data) {
          const o = sandbox.run({
            scriptHash: name,
            script,
            fields,
            types,
            recordsText: b.recordsText,
            viewId,
            schemaVersion: 'sv_1',
            receivedAt: b.receivedAt,
            timestamp: b.timestamp,
          });
          if (o.status !== 'ok') throw new Error(o.message);
          sink += o.rows;
        }
      },
      'sandbox in a child process': async () => {
        for (const b of data) {
          const o = await child.run({
            scriptHash: name,
            script,
            fields,
            types,
            recordsText: b.recordsBytes,
            viewId,
            schemaVersion: 'sv_1',
            receivedAt: b.receivedAt,
            timestamp: b.timestamp,
          });
          if (o.status !== 'ok') throw new Error(o.message);
          sink += o.rows;
        }
      },
      'sandbox in a child process, templated records': async () => {
        for (const b of data) {
          const o = await child.run({
            scriptHash: name,
            script,
            fields,
            types,
            recordsText: b.recordsBytes,
            viewId,
            schemaVersion: 'sv_1',
            receivedAt: b.receivedAt,
            timestamp: b.timestamp,
            ...(b.templates ? { templates: b.templates } : {}),
          });
          if (o.status !== 'ok') throw new Error(o.message);
          sink += o.rows;
        }
      },
      'direct, same harness': () => {
        for (const b of data) {
          // Copied out of the context's realm (its typed arrays are not this realm's), as the isolate's answer is.
          const o = decodeRunResult(
            structuredClone(
              vmRun(b.recordsText, viewId, '"sv_1"', null, b.receivedAt, b.timestamp, fieldsJson, typesJson),
            ),
            b.timestamp.length,
            fields.length,
          );
          if (o.status !== 'ok') throw new Error(o.message);
          sink += o.rows;
        }
      },
      'direct, plain': () => {
        for (const b of data) {
          const rs = JSON.parse(b.arrayText) as unknown[];
          const out: unknown[] = [];
          for (let i = 0; i < rs.length; i++) {
            const o = fn(rs[i], {
              view_id: viewId,
              schema_version: 'sv_1',
              received_at: b.receivedIso[i],
              timestamp: b.timestampIso[i],
            });
            if (o !== null) out.push(o);
          }
          sink += JSON.stringify(out).length;
        }
      },
    } as Record<string, () => void | Promise<void>>,
    dispose: async () => {
      sandbox.dispose();
      await child.close();
    },
  };
}

const flatRecords = makeRecords(FLAT);
const nestedRecords = makeNestedRecords(NESTED, 7);
const scenarios = [
  scenario(
    'flat',
    FLAT_SCRIPT,
    FLAT_VIEW.outputSchema,
    batches(flatRecords, 50_000, (r) => r.ts as number),
    FLAT,
  ),
  scenario(
    'nested',
    NESTED_SCRIPT,
    NESTED_VIEW.outputSchema,
    batches(nestedRecords, 5_000, (r) => Number(r.timestamp_ms)),
    NESTED,
  ),
];
const nestedBytes = nestedRecords.reduce((s, r) => s + JSON.stringify(r).length, 0);
console.log(
  `nested records: ${Math.round(nestedBytes / NESTED)} bytes on average; sandbox memory limit ${MEMORY_MB} MB`,
);

const rows: Record<string, string>[] = [];
for (const sc of scenarios) {
  const bench = new Bench({ name: sc.name, time: 3000, warmupTime: 1000, iterations: 5 });
  for (const [task, fn] of Object.entries(sc.tasks)) bench.add(`${sc.name}: ${task}`, fn);
  await bench.run();
  const perSec = (t: (typeof bench.tasks)[number]) =>
    ((t.result as unknown as { throughput?: { mean: number } }).throughput?.mean ?? 0) * sc.records;
  const sandboxRate = perSec(bench.tasks[0]!);
  for (const t of bench.tasks) {
    const rate = perSec(t);
    rows.push({
      task: t.name,
      'records/s': Math.round(rate).toLocaleString('en-US'),
      'sandbox time ÷ this': (rate / sandboxRate).toFixed(2),
    });
  }
  await sc.dispose();
}
console.table(rows);
if (sink === 42) console.log('');
