import { Worker } from 'node:worker_threads';
import {
  buffersOf,
  joinOutputs,
  mergePass,
  splitBySeries,
  type MergeInput,
  type MergeOutput,
} from './compact-merge.js';

/** Merges a pass's states: on the compaction's own thread, or in this one. */
export type MergeStates = (input: MergeInput) => Promise<MergeOutput>;

/** In this thread (tests, tools): the same function the compaction thread runs. */
export const mergeHere: MergeStates = async (input) => mergePass(input);

/**
 * The compaction's thread (compact-worker.ts), started on the first pass and kept: one pass at a
 * time (the compactor runs one transaction at a time). A thread that dies is started again on the
 * next pass; the pass it held fails, so its transaction rolls back and the pass is retried.
 */
export class CompactThread {
  private worker: Worker | null = null;
  private pending: { ok: (out: MergeOutput) => void; fail: (err: Error) => void } | null = null;
  /** The thread's V8 heap as its last pass ended (bytes), and the largest total + external so far; null before a pass. */
  heap: { usedBytes: number; totalBytes: number; externalBytes: number; peakBytes: number } | null = null;

  readonly merge: MergeStates = (input) => {
    if (this.pending) return Promise.reject(new Error('compaction thread: a pass is already merging'));
    const worker = this.start();
    return new Promise<MergeOutput>((ok, fail) => {
      this.pending = { ok, fail };
      worker.postMessage(input, [...buffersOf([input.partials, ...input.existing])]);
    });
  };

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./compact-worker.js', import.meta.url));
    // Idle between passes: the thread never keeps the process alive.
    worker.unref();
    worker.on(
      'message',
      (m: {
        ok?: MergeOutput;
        error?: string;
        heap?: { usedBytes: number; totalBytes: number; externalBytes: number };
      }) => {
        if (m.heap)
          this.heap = {
            ...m.heap,
            peakBytes: Math.max(this.heap?.peakBytes ?? 0, m.heap.totalBytes + m.heap.externalBytes),
          };
        const p = this.pending;
        this.pending = null;
        if (!p) return;
        if (m.ok) p.ok(m.ok);
        else p.fail(new Error(`compaction thread: ${m.error}`));
      },
    );
    const gone = (err: Error) => {
      if (this.worker === worker) this.worker = null;
      const p = this.pending;
      this.pending = null;
      p?.fail(err);
    };
    worker.on('error', gone);
    worker.on('exit', (code) => gone(new Error(`compaction thread exited (${code})`)));
    this.worker = worker;
    return worker;
  }

  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }
}

/**
 * `threads` compaction threads sharing each pass: its rows cut by series (splitBySeries), each part
 * merged on a thread of its own, the outputs joined. A backlog's merge — most of a pass's CPU — then
 * uses every core the pipeline leaves idle (after an import's drain, all of them).
 */
export class CompactThreads {
  private readonly threads: CompactThread[];

  constructor(count: number) {
    this.threads = Array.from({ length: Math.max(1, Math.floor(count)) }, () => new CompactThread());
  }

  readonly merge: MergeStates = async (input) => {
    const n = this.threads.length;
    if (n === 1) return this.threads[0]!.merge(input);
    const partials = splitBySeries(input.partials, n);
    const existing = input.existing.map((rows) => splitBySeries(rows, n));
    const outputs = await Promise.all(
      this.threads.map((t, k) => t.merge({ partials: partials[k]!, existing: existing.map((parts) => parts[k]!) })),
    );
    return joinOutputs(outputs);
  };

  /** The threads' heaps summed (null before a pass): the server's memory breakdown. */
  get heap(): CompactThread['heap'] {
    const heaps = this.threads.map((t) => t.heap).filter((h) => h !== null);
    if (heaps.length === 0) return null;
    return {
      usedBytes: heaps.reduce((k, h) => k + h.usedBytes, 0),
      totalBytes: heaps.reduce((k, h) => k + h.totalBytes, 0),
      externalBytes: heaps.reduce((k, h) => k + h.externalBytes, 0),
      peakBytes: heaps.reduce((k, h) => k + h.peakBytes, 0),
    };
  }

  async stop(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.stop()));
  }
}
