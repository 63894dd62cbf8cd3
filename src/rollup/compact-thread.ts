import { Worker } from 'node:worker_threads';
import { buffersOf, mergePass, type MergeInput, type MergeOutput } from './compact-merge.js';

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
