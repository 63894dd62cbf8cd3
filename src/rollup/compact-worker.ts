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
    parentPort!.postMessage({ ok: out }, buffersOf(out).concat(out.map((r) => r.figures.buffer as ArrayBuffer)));
  } catch (err) {
    parentPort!.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
});
