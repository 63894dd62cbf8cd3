import { MessageChannel } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { ApiError } from '../errors.js';
import { BatchError, type BatchFailure } from './failures.js';
import type { BatchResult, BatchTask, ResolveRequest, Resolver } from './process-batch.js';

/**
 * Young generation of a pipeline worker thread (V8's default for a thread: 48 MB, 16 MB semi-spaces).
 * A nested batch allocates its parsed records, JSON texts and column strings by the hundred MB and
 * most of it dies within a few records; with 16 MB semi-spaces the scavenger ran every few hundred
 * records and promoted what a batch still held. Measured on the nested-batch bench (leases of
 * 4,300 ~3.7 KB records, 2 shared cores, CPU µs per record over two rounds): 16 MB 188 / 183,
 * 32 MB 170 / 165, 64 MB 153 / 162. The semi-spaces only grow to this when a batch needs them.
 */
const WORKER_YOUNG_GENERATION_MB = 192;

type LoadBalancer = NonNullable<NonNullable<ConstructorParameters<typeof Piscina>[0]>['loadBalancer']>;

/**
 * A batch goes to the idle worker idle longest. Piscina's default gives every task to the first
 * idle worker, so under a light load one thread did every batch and the others stayed cold: when
 * a burst then spread batches over them, each first paid its JIT and parquet-wasm's tier-up
 * (~1 s of CPU per thread on this machine, first batches ~1.6× the CPU per record of a warm
 * thread; docs/benchmarks.md). Taking turns keeps every thread's code and per-collection caches
 * (templates, field layouts) warm.
 */
function longestIdle(): LoadBalancer {
  const picked = new Map<number, number>();
  let turn = 0;
  return (_task, workers) => {
    let best: (typeof workers)[number] | null = null;
    for (const w of workers) {
      if (w.currentUsage !== 0 || w.terminating || w.destroyed) continue;
      if (best === null || (picked.get(w.id) ?? 0) < (picked.get(best.id) ?? 0)) best = w;
    }
    if (best === null) return null;
    picked.set(best.id, ++turn);
    // Threads replaced after a crash leave their ids behind: keep only the live ones.
    if (picked.size > 2 * workers.length)
      for (const id of [...picked.keys()]) if (!workers.some((w) => w.id === id)) picked.delete(id);
    return best;
  };
}

/**
 * The one boundary to piscina: a pool of pipeline worker threads. `run` sends a batch with a
 * private channel the worker resolves shapes over; a worker failure (thrown error, crashed thread)
 * becomes a catalogue error carrying the cause.
 */
export class WorkerPool {
  private readonly piscina: Piscina;
  readonly size: number;

  /** `workers` 0 = one per CPU. */
  constructor(workers: number) {
    this.size = workers > 0 ? workers : Math.max(1, availableParallelism());
    this.piscina = new Piscina({
      filename: new URL('./worker-entry.cjs', import.meta.url).href,
      minThreads: this.size,
      maxThreads: this.size,
      // One batch per thread at a time: batches are CPU-bound.
      concurrentTasksPerWorker: 1,
      loadBalancer: longestIdle(),
      idleTimeout: 60_000,
      // 3 × the semi-space size (two semi-spaces and the young large-object space): 64 MB semi-spaces.
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
    });
  }

  /** Run `task`; buffers in `transfer` move to the worker (zero-copy) and become unusable here. */
  async run(task: BatchTask, resolve: Resolver, transfer: ArrayBuffer[] = []): Promise<BatchResult> {
    const { port1, port2 } = new MessageChannel();
    port1.on('message', (req: ResolveRequest) => {
      resolve(req).then(
        (reply) => port1.postMessage(reply),
        (err: unknown) => port1.postMessage({ type: 'error', message: (err as Error)?.message ?? String(err) }),
      );
    });
    let out: BatchResult | BatchFailure;
    try {
      out = (await this.piscina.run({ task, port: port2 }, { transferList: [port2, ...transfer] as never })) as
        | BatchResult
        | BatchFailure;
    } catch (err) {
      // The thread itself died (or piscina failed): not classified by the worker.
      if (err instanceof ApiError) throw err;
      throw new ApiError('server_error', `pipeline worker failed: ${(err as Error)?.message ?? String(err)}`, {
        cause: err,
      });
    } finally {
      port1.close();
    }
    if ('failed' in out) throw new BatchError(out.kind, out.message, out.cost);
    return out;
  }

  async destroy(): Promise<void> {
    try {
      await this.piscina.destroy();
    } catch {
      // Already destroyed.
    }
  }
}
