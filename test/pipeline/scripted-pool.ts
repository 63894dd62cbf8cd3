import { Fingerprinter } from '../../src/schema/fingerprint.js';
import type { Sighting } from '../../src/schema/book.js';
import type { Shape } from '../../src/schema/shape.js';
import { BatchError } from '../../src/pipeline/failures.js';
import {
  fileName,
  type BatchResult,
  type BatchTask,
  type ResolveReply,
  type Resolver,
  type WrittenFile,
} from '../../src/pipeline/process-batch.js';

/** What one attempt of a batch does, besides planning like a worker would. */
export interface Script {
  /** Awaited before the batch reports what it saw (its plan follows). */
  beforePlan?: () => Promise<unknown> | void;
  /** Awaited after its plan, before it returns. */
  beforeReturn?: () => Promise<unknown> | void;
  /** Throw before planning or after it (a worker error). */
  fail?: 'before-plan' | 'after-plan';
}

export interface ScriptedRun {
  firstSeq: number;
  lastSeq: number;
  /** 1 for the first run of a batch starting at `firstSeq`, 2 for its re-run, … */
  attempt: number;
  /** Resolves once the batch has its plan. */
  planned: Promise<void>;
}

export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * A stand-in for the worker pool (pool.ts) for runner tests: each task really fingerprints its
 * NDJSON bodies and holds the resolve conversation with the main thread (sightings → shapes →
 * plan), and reports the planned files as written (the commit records their manifests) without
 * writing them; it waits or fails when its script says so.
 */
export class ScriptedPool {
  readonly runs: ScriptedRun[] = [];
  /** Tasks on this pool right now, and the most at once. */
  running = 0;
  maxRunning = 0;
  private readonly attempts = new Map<number, number>();
  private readonly fp = new Fingerprinter({ opaquePaths: [], trackedPaths: [], maxDepth: 6 });
  private readonly waiters: Array<() => void> = [];

  constructor(
    readonly size: number,
    private readonly script: (run: ScriptedRun) => Script = () => ({}),
  ) {}

  /** Resolves once `n` runs have started. */
  async started(n: number): Promise<ScriptedRun[]> {
    while (this.runs.length < n) await new Promise<void>((r) => this.waiters.push(r));
    return this.runs;
  }

  async run(task: BatchTask, resolve: Resolver): Promise<BatchResult> {
    const attempt = (this.attempts.get(task.firstSeq) ?? 0) + 1;
    this.attempts.set(task.firstSeq, attempt);
    const planned = deferred();
    const run: ScriptedRun = { firstSeq: task.firstSeq, lastSeq: task.lastSeq, attempt, planned: planned.promise };
    const script = this.script(run);
    this.runs.push(run);
    for (const w of this.waiters.splice(0)) w();
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      await script.beforePlan?.();
      if (script.fail === 'before-plan')
        throw new BatchError('batch', `scripted failure of batch ${task.firstSeq} before its plan`);
      const { sightings, rows } = this.sightings(task);
      let reply: ResolveReply = await resolve({
        type: 'sightings',
        sightings: sightings.map(({ shape: _s, sample: _x, ...s }) => s),
        refused: [],
      });
      if (reply.type === 'need') {
        const byKey = new Map(sightings.map((s) => [s.key, s]));
        reply = await resolve({
          type: 'shapes',
          shapes: reply.keys.map((k) => ({
            key: k,
            shape: byKey.get(k)!.shape!,
            sample: byKey.get(k)!.sample ?? null,
          })),
        });
      }
      if (reply.type !== 'plan') throw new Error('expected a plan');
      planned.resolve();
      await script.beforeReturn?.();
      if (script.fail === 'after-plan')
        throw new BatchError('batch', `scripted failure of batch ${task.firstSeq} after its plan`);
      const files = reply.files.map(
        (f): WrittenFile => ({
          kind: f.kind,
          dir: f.dir,
          versionId: f.versionId,
          shapeHash: f.shapeHash,
          path: fileName(f.dir, task.firstSeq),
          rows: f.rows,
          bytes: 0,
          docBytes: 0,
          minTs: 0,
          maxTs: 0,
          counts: { versions: {}, shapes: {}, overflow: 0 },
        }),
      );
      return { rows, files, views: [] };
    } finally {
      this.running--;
    }
  }

  async destroy(): Promise<void> {}

  private sightings(task: BatchTask): { sightings: Sighting[]; rows: number } {
    const byKey = new Map<number, Sighting>();
    let rows = 0;
    for (const e of task.entries) {
      for (const line of new TextDecoder().decode(e.body).split('\n')) {
        if (line.trim() === '') continue;
        const record = JSON.parse(line) as Record<string, unknown>;
        const key = this.fp.fingerprint(record);
        const seen = byKey.get(key);
        if (seen) {
          seen.rows++;
          seen.lastMs = e.received_at;
        } else {
          const shape = this.fp.describe(record) as Shape;
          byKey.set(key, {
            key,
            hash: shape.hash,
            rows: 1,
            firstMs: e.received_at,
            lastMs: e.received_at,
            shape,
            sample: line,
          });
        }
        rows++;
      }
    }
    return { sightings: [...byKey.values()], rows };
  }
}
