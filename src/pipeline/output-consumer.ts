import type { OutputColumn } from '../transform/output-schema.js';
import type { ViewTask } from '../transform/view-stage.js';
import type { CommitParticipant } from './commit-seam.js';
import type { BatchResult } from '../commit/batch-commit.js';

/**
 * Something that consumes a view's output of each batch (docs/architecture.md, "Output consumers"):
 * metrics first; drains and exports later. Declared once in output-consumers.ts, it is run by the
 * worker and wired by the server through that list alone, so adding one touches neither
 * process-batch.ts, runner.ts nor server.ts.
 *
 * - `attach` (main thread, per lease) says what it needs of the batch: its task for each view it
 *   consumes, put on `ViewTask.consumers[name]` (plain data: it crosses to the worker). A view with
 *   no task for it is not given to it.
 * - `prepare` (worker, once per batch with any task of it) readies what `consume` needs.
 * - `consume` (worker) turns one view's coerced output of the batch into a part of its output; the
 *   parts of a batch travel in `BatchResult.outputs[name]`, one per view consumed, in view order. It
 *   runs on the worker's hot path: it must not throw (a failure is a value in its part).
 * - `participants` join the commit seam after the views' (commit-seam.ts), reading their parts from
 *   the batch result.
 *
 * A consumer module types itself structurally (it lives in its stage's folder, below the pipeline);
 * output-consumers.ts checks it against this interface.
 */
export interface OutputConsumer<Task = unknown, Part = unknown> {
  readonly name: string;
  attach(ctx: ConsumerContext, tasks: readonly ViewTask[], collectionId: string): ReadonlyMap<string, Task>;
  prepare?(): Promise<void>;
  consume(view: ViewTask, task: Task, ts: Float64Array, columns: readonly OutputColumn[]): Part;
  participants(ctx: ConsumerContext): CommitParticipant[];
}

/**
 * What a consumer's main-thread side is given: the server's services and its open rollups. Typed
 * loosely here (the services bag sits above the pipeline); each consumer names the services it reads
 * in its own context type, which the server's bag satisfies.
 */
export interface ConsumerContext {
  services: object;
  rollups: object;
}

/** A consumer's parts of a batch (none when no view it consumes produced output). */
export function consumerOutputs<Part>(
  result: BatchResult,
  consumer: Pick<OutputConsumer<unknown, Part>, 'name'>,
): readonly Part[] {
  return (result.outputs?.[consumer.name] as Part[] | undefined) ?? [];
}

/** `tasks` with each consumer's task for each view attached (views without any are returned as they are). */
export function attachConsumerTasks(
  consumers: readonly OutputConsumer[],
  ctx: ConsumerContext,
  tasks: ViewTask[],
  collectionId: string,
): ViewTask[] {
  if (tasks.length === 0) return tasks;
  let out = tasks;
  for (const c of consumers) {
    const byView = c.attach(ctx, out, collectionId);
    if (byView.size === 0) continue;
    out = out.map((t) =>
      byView.has(t.viewId) ? { ...t, consumers: { ...t.consumers, [c.name]: byView.get(t.viewId) } } : t,
    );
  }
  return out;
}

/**
 * The worker's side of the consumers over one batch: `prepare` those with a task, then `onOutput`
 * hands each view's output to each consumer with a task for that view; `outputs()` is the batch's
 * `BatchResult.outputs` (undefined when no part was made).
 */
export async function consumersForBatch(
  consumers: readonly OutputConsumer[],
  views: readonly ViewTask[],
): Promise<{
  onOutput(view: ViewTask, ts: Float64Array, columns: readonly OutputColumn[]): void;
  outputs(): Record<string, unknown[]> | undefined;
}> {
  const active = consumers.filter((c) => views.some((v) => v.consumers?.[c.name] !== undefined));
  for (const c of active) await c.prepare?.();
  let outputs: Record<string, unknown[]> | undefined;
  return {
    onOutput(view, ts, columns) {
      const tasks = view.consumers;
      if (tasks === undefined) return;
      for (const c of active) {
        const task = tasks[c.name];
        if (task === undefined) continue;
        ((outputs ??= {})[c.name] ??= []).push(c.consume(view, task, ts, columns));
      }
    },
    outputs: () => outputs,
  };
}
