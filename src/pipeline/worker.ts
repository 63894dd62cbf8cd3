import { getHeapStatistics } from 'node:v8';
import { threadId, type MessagePort } from 'node:worker_threads';
import { failureOf, type BatchFailure, type TaskCost } from './failures.js';
import { threadCpuMs } from './thread-cpu.js';
import { TransformProcess } from '../transform/sandbox-process.js';
import {
  createBatchProcessor,
  type BatchResult,
  type BatchTask,
  type ResolveReply,
  type ResolveRequest,
} from './process-batch.js';

/**
 * Piscina worker entry: runs one batch, asking the main thread to resolve shapes over `port` (the
 * main thread owns schema versions; one round trip per batch, two when there are new shapes).
 */
// User scripts run in a child process of this thread (sandbox-process.ts): isolated-vm cannot
// contain every out-of-memory (V8 aborts the whole process), so a script that exhausts memory
// ends only the child, which is started again; the server and the pool go on.
let scripts: TransformProcess | null = null;
const processBatch = createBatchProcessor({
  runScript: (batch, view, handedOver) => (scripts ??= new TransformProcess()).run({ ...batch, ...view }, handedOver),
});

export interface WorkerInput {
  task: BatchTask;
  port: MessagePort;
}

/** Never throws for the batch's own errors: they come back as a classified value (failures.ts). */
export default async function runBatch({ task, port }: WorkerInput): Promise<BatchResult | BatchFailure> {
  const cpu0 = threadCpuMs();
  let planWaitMs = 0;
  const cost = (): TaskCost => ({ thread: threadId, cpuMs: threadCpuMs() - cpu0, planWaitMs, heap: heapNow() });
  const resolve = (req: ResolveRequest) =>
    new Promise<ResolveReply>((ok, fail) => {
      const asked = performance.now();
      const onMessage = (reply: ResolveReply | { type: 'error'; message: string }) => {
        planWaitMs += performance.now() - asked;
        port.off('close', onClose);
        if (reply.type === 'error') fail(new Error(`resolving shapes failed: ${reply.message}`));
        else ok(reply);
      };
      const onClose = () => fail(new Error('the main thread closed the resolve channel'));
      port.once('message', onMessage);
      port.once('close', onClose);
      port.postMessage(req);
    });
  try {
    return { ...(await processBatch(task, resolve)), cost: cost() };
  } catch (err) {
    return { ...failureOf(err), cost: cost() };
  } finally {
    port.close();
  }
}

/** This thread's V8 heap now (a few µs: read once a task, for the server's memory breakdown). */
function heapNow(): NonNullable<TaskCost['heap']> {
  const h = getHeapStatistics();
  return { usedBytes: h.used_heap_size, totalBytes: h.total_heap_size, externalBytes: h.external_memory };
}
