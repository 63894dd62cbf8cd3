/**
 * The file piscina loads in each pipeline thread. piscina `require()`s its worker file; requiring
 * an ES module goes through Node's synchronous require(esm) path, which aborts the whole process
 * (V8 fatal error "IsGraphAsync") when the pool is destroyed while a thread is still instantiating
 * the module — e.g. a server stopped right after it started. This CommonJS entry is required
 * instead and imports the ES module worker asynchronously, where termination is handled.
 */
import type { WorkerInput } from './worker.js';
import type { BatchResult } from './process-batch.js';
import type { BatchFailure } from './failures.js';

type Handler = (input: WorkerInput) => Promise<BatchResult | BatchFailure>;

let handler: Promise<Handler> | undefined;

module.exports = function runBatchEntry(input: WorkerInput): Promise<BatchResult | BatchFailure> {
  handler ??= import('./worker.js').then((m) => m.default);
  return handler.then((run) => run(input));
};
