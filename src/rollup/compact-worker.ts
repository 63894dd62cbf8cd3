import { getHeapStatistics } from 'node:v8';
import { parentPort } from 'node:worker_threads';
import { buffersOf, mergePass, type MergeInput } from './compact-merge.js';

/**
 * The compaction's thread (compact-thread.ts): merges a pass's states off the main thread, so a
 * backlog's decode, merge and encode leave the event loop free for ingest, commits and answers.
 * One message in (a pass's rows), one out (the rows to write, or the error's message).
 */
parentPort!.on('message', (input: MergeInput) => {
  try {
    const out = mergePass(input);
    // The thread's heap as the pass ends (the server's memory breakdown, docs/self-hosting.md "Memory").
    const h = getHeapStatistics();
    const heap = { usedBytes: h.used_heap_size, totalBytes: h.total_heap_size, externalBytes: h.external_memory };
    parentPort!.postMessage({ ok: out, heap }, buffersOf(out).concat(out.map((r) => r.figures.buffer as ArrayBuffer)));
  } catch (err) {
    parentPort!.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
});
