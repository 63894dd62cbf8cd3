import type { TaskCost } from './failures.js';

/**
 * What the runner has done since start (benchmarks read them to tell where a second worker's gain
 * goes; docs/benchmarks.md). Times are milliseconds; the main thread's are its synchronous work.
 */
export interface PipelineCounters {
  leases: number;
  leasedRecords: number;
  committed: number;
  committedRecords: number;
  /** Batches given back to run again at once: planned against a replaced book, or behind a batch that did not commit. */
  reruns: number;
  rerunRecords: number;
  /** Batches that failed (retried with back-off, or isolated). */
  failed: number;
  /** Worker CPU of every task, and the part spent on tasks whose work was thrown away (reruns, failures). */
  workerCpuMs: number;
  wastedWorkerCpuMs: number;
  /** Time tasks held their worker waiting for the main thread's answers (shapes, the plan at its turn). */
  planWaitMs: number;
  /** Main thread: leasing (reading the bodies from LMDB into the buffer the worker gets), planning, staging commits in the spool transaction. */
  packMs: number;
  planMs: number;
  commitStageMs: number;
  /**
   * Per worker thread (by thread id): tasks, their records, and their CPU; and its V8 heap (bytes)
   * as its last task ended and the largest seen so far (absent until a task reports it).
   */
  threads: Record<number, ThreadCounters>;
}

/** One worker thread's counters. */
export interface ThreadCounters {
  tasks: number;
  records: number;
  cpuMs: number;
  heapUsedBytes?: number;
  heapTotalBytes?: number;
  heapExternalBytes?: number;
  /** The largest `heapTotalBytes` + `heapExternalBytes` any of its tasks ended with. */
  heapPeakBytes?: number;
}

/** The runner's counters, counted in place; `snapshot` hands out a copy. */
export class RunnerCounters {
  readonly count: PipelineCounters = {
    leases: 0,
    leasedRecords: 0,
    committed: 0,
    committedRecords: 0,
    reruns: 0,
    rerunRecords: 0,
    failed: 0,
    workerCpuMs: 0,
    wastedWorkerCpuMs: 0,
    planWaitMs: 0,
    packMs: 0,
    planMs: 0,
    commitStageMs: 0,
    threads: {},
  };
  /** Batches committed since start. */
  batches = 0;

  snapshot(): PipelineCounters {
    return structuredClone(this.count);
  }

  leased(records: number): void {
    this.count.leases++;
    this.count.leasedRecords += records;
  }

  committed(records: number): void {
    this.batches++;
    this.count.committed++;
    this.count.committedRecords += records;
  }

  rerun(records: number): void {
    this.count.reruns++;
    this.count.rerunRecords += records;
  }

  /** A batch failed (retried with back-off, or isolated). */
  failed(): void {
    this.count.failed++;
  }

  /** Main-thread time spent planning a batch. */
  planned(ms: number): void {
    this.count.planMs += ms;
  }

  /** Worker CPU spent on a task whose work was thrown away. */
  wasted(cost: TaskCost | undefined): void {
    this.count.wastedWorkerCpuMs += cost?.cpuMs ?? 0;
  }

  /** Count a task's cost on its worker (absent when the pool does not report it). */
  tally(cost: TaskCost | undefined, records: number): void {
    if (!cost) return;
    this.count.workerCpuMs += cost.cpuMs;
    this.count.planWaitMs += cost.planWaitMs;
    const t = (this.count.threads[cost.thread] ??= { tasks: 0, records: 0, cpuMs: 0 });
    t.tasks++;
    t.records += records;
    t.cpuMs += cost.cpuMs;
    if (cost.heap) {
      t.heapUsedBytes = cost.heap.usedBytes;
      t.heapTotalBytes = cost.heap.totalBytes;
      t.heapExternalBytes = cost.heap.externalBytes;
      t.heapPeakBytes = Math.max(t.heapPeakBytes ?? 0, cost.heap.totalBytes + cost.heap.externalBytes);
    }
  }

  /** Run `fn` on the main thread, adding the time it took to counter `key`. */
  timed<T>(key: 'packMs' | 'commitStageMs', fn: () => T): T {
    const at = performance.now();
    try {
      return fn();
    } finally {
      this.count[key] += performance.now() - at;
    }
  }
}
