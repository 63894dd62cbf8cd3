import { fork, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { decodeRunResult } from './harness/decode-answer.js';
import { versionColumn, type TransformFailure } from './harness.js';
import type { BatchInput, TransformInput, TransformOutcome, TransformSandboxOptions, ViewScript } from './sandbox.js';
import type { ChildMessage, ChildRequest, SentTemplates } from './sandbox-child.js';
import type { TemplateRecords } from './record-slots.js';

/**
 * A `TransformSandbox` in a child process: the same outcomes, asynchronous, and a script that
 * crashes V8 ends the child, not Sluice.
 *
 * Why a process: isolated-vm's memory limit covers growth it can see coming, but some allocations
 * abort the whole process with a V8 fatal error before the limit is checked (measured with
 * isolated-vm 5.0.4 / Node 20, 128 MB limit: `a = []; a.length = 1e8; a.fill(1)`,
 * `new Array(1e8).fill(0)`, a Map grown without bound, `'x'.repeat(2 ** 28).split('')`; see
 * isolated-vm issues #107, #527 and its README: "v8 is not resilient to out of memory
 * conditions"). In a pipeline worker thread that would be the server's process.
 *
 * Requests are queued, one at a time per child. The child is forked on first use and again after
 * it ends; a child that does not answer within the call's time limit + `graceMs` is killed. A
 * batch's records cross the process boundary once for all its views (`runViews`), best as UTF-8
 * bytes (see `BatchInput`: 18 MB of nested records took ~40 ms as bytes against 100–600 ms as the
 * two-byte string they decode to). The request goes over IPC with V8 serialization, the bytes down
 * the child's stdin as they are (through the serialiser they were copied and allocated anew on both
 * sides, and that memory outside the JS heap started collections in the worker); each answer comes
 * back as the harness gave it (one string, or strings and typed arrays), decoded here.
 */

export interface TransformProcessOptions extends TransformSandboxOptions {
  /** Time past `cpuTimeMsPerCall` before a silent child is killed; default 5000. */
  graceMs?: number;
}

/** The child's entry (compiled next to this file). */
export const SANDBOX_CHILD_PATH = fileURLToPath(new URL('./sandbox-child.js', import.meta.url));

const STDERR_TAIL = 4096;

export class TransformProcess {
  private readonly opts: TransformProcessOptions;
  private child: ChildProcess | null = null;
  private stderrTail = '';
  private queue: Promise<unknown> = Promise.resolve();
  private forks = 0;
  private closed = false;
  /** Record shapes (record-slots.ts) sent to the current child, which keeps them. */
  private shapesSent = new Set<number>();

  constructor(opts: TransformProcessOptions = {}) {
    this.opts = opts;
  }

  /** Runs one view over one batch (see `TransformSandbox.run`). */
  async run(input: TransformInput, handedOver?: () => void): Promise<TransformOutcome> {
    const [outcome] = await this.runViews(
      input,
      [
        {
          viewId: input.viewId,
          scriptHash: input.scriptHash,
          script: input.script,
          ...(input.fields ? { fields: input.fields } : {}),
          ...(input.types ? { types: input.types } : {}),
        },
      ],
      handedOver,
    );
    return outcome!;
  }

  /**
   * Runs each view's script over one batch, in order; the records cross to the child once. A view
   * that crashes the child gets a `memory` (or `timeout`) failure and the views after it run in a
   * new child. Rejects only when the input breaks the contract (see `TransformSandbox.run`).
   * `handedOver` is called once the child has the batch (its bytes written to its stdin), or once
   * the call ends if that comes first.
   */
  runViews(batch: BatchInput, views: readonly ViewScript[], handedOver?: () => void): Promise<TransformOutcome[]> {
    let told = false;
    const tell = () => {
      if (told) return;
      told = true;
      handedOver?.();
    };
    const result = this.queue.then(() => this.runNow(batch, views, tell)).finally(tell);
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Child processes started so far (1 + restarts after a crash or a kill). */
  get processStarts(): number {
    return this.forks;
  }

  /** Ends the child. */
  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    const child = this.child;
    this.child = null;
    if (child !== null && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.ref();
      child.disconnect();
      await exited;
    }
  }

  private async runNow(
    batch: BatchInput,
    views: readonly ViewScript[],
    handedOver: () => void,
  ): Promise<TransformOutcome[]> {
    if (this.closed) throw new Error('transform process: closed');
    const outcomes: TransformOutcome[] = [];
    let error: Error | null = null;
    while (outcomes.length < views.length) {
      const r = await this.exchange(batch, views.slice(outcomes.length), handedOver);
      outcomes.push(...r.outcomes);
      error ??= r.error;
    }
    if (error !== null) throw error;
    return outcomes;
  }

  /** One child, as many views as it answers before it ends (at least one: the one it died on). */
  private exchange(
    batch: BatchInput,
    views: readonly ViewScript[],
    handedOver: () => void,
  ): Promise<{ outcomes: TransformOutcome[]; error: Error | null }> {
    const child = this.ensureChild();
    // Shapes this child has not been sent (a new child has none).
    const sentTemplates = batch.templates ? this.templatesFor(batch.templates) : undefined;
    const limitMs = (this.opts.cpuTimeMsPerCall ?? 2000) + (this.opts.graceMs ?? 5000);
    const records = batch.receivedAt.length;
    return new Promise((resolve) => {
      const outcomes: TransformOutcome[] = [];
      let error: Error | null = null;
      let running: number | null = null;
      let killedForTime = false;
      let timer: NodeJS.Timeout | undefined;
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          killedForTime = true;
          child.kill('SIGKILL');
        }, limitMs);
      };
      const finish = () => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('close', onClose);
        // Idle: the child must not keep this thread or process alive.
        child.unref();
        child.channel?.unref();
        resolve({ outcomes, error });
      };
      const onMessage = (m: ChildMessage) => {
        if (m.type === 'start') {
          running = m.view;
          arm();
          return;
        }
        running = null;
        const reply = m.reply;
        if (reply.status === 'error') {
          error ??= new Error(reply.message);
          outcomes.push({ status: 'failed', reason: 'bad_output', recordIndex: null, message: reply.message });
        } else if (reply.status === 'answer') {
          try {
            outcomes.push(decodeRunResult(reply.answer, records, reply.fields));
          } catch (err) {
            error ??= err as Error;
            outcomes.push({
              status: 'failed',
              reason: 'bad_output',
              recordIndex: null,
              message: (err as Error).message,
            });
          }
        } else {
          outcomes.push(reply);
        }
        if (outcomes.length === views.length) finish();
        else arm();
      };
      // 'close', not 'exit': stderr (V8's fatal report) has been read by then.
      const onClose = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.child === child) this.child = null;
        // The view that was running (or the first one, if the child died before starting it).
        if (running !== null || outcomes.length === 0) {
          outcomes.push(
            killedForTime
              ? {
                  status: 'failed',
                  reason: 'timeout',
                  recordIndex: null,
                  message: `transform did not finish within ${limitMs} ms; its process was stopped`,
                }
              : crashOutcome(code, signal, this.stderrTail),
          );
        }
        finish();
      };
      child.on('message', onMessage);
      child.once('close', onClose);
      child.ref();
      child.channel?.ref();
      arm();
      const { recordsText } = batch;
      // Distinct versions and an index: not one string per record through the serialiser.
      const v = versionColumn(batch.schemaVersion);
      const schemaVersion =
        v.index === null ? batch.schemaVersion : { values: v.values as ReadonlyArray<string | null>, index: v.index };
      const bytes = typeof recordsText === 'string' ? null : recordsText;
      const request: ChildRequest = {
        batch: {
          recordsText: typeof recordsText === 'string' ? recordsText : { stdinBytes: recordsText.byteLength },
          schemaVersion,
          receivedAt: compact(batch.receivedAt),
          timestamp: compact(batch.timestamp),
          ...(sentTemplates ? { templates: sentTemplates } : {}),
        },
        views: views.map(({ viewId, scriptHash, script, fields, types }) => ({
          viewId,
          scriptHash,
          script,
          ...(fields ? { fields } : {}),
          ...(types ? { types } : {}),
        })),
      };
      child.send(request);
      // The records' bytes, then the templated records' values, go down the child's stdin as they
      // are: no serialiser copy of them here or there (their buffers are kept as they are until the
      // child has read them, i.e. until it answers).
      const t = batch.templates;
      const parts = [bytes, t?.ids, t?.ints, t?.nums]
        .filter((a) => a !== null && a !== undefined && a.byteLength > 0)
        .map((a) => new Uint8Array(a!.buffer, a!.byteOffset, a!.byteLength));
      if (parts.length === 0) handedOver();
      parts.forEach((part, k) => child.stdin!.write(part, k === parts.length - 1 ? () => handedOver() : undefined));
    });
  }

  /** A batch's templated records for the current child: only the shapes it was not sent before. */
  private templatesFor(t: TemplateRecords): SentTemplates {
    const shapes: Array<[number, string]> = [];
    for (const id of t.used) {
      if (this.shapesSent.has(id)) continue;
      const desc = t.shapes.get(id);
      if (desc === undefined) throw new Error(`transform process: record shape ${id} is used but not described`);
      shapes.push([id, desc]);
      this.shapesSent.add(id);
    }
    return { ints: t.ints.length, nums: t.nums.length, used: t.used, shapes };
  }

  private ensureChild(): ChildProcess {
    if (this.child !== null) return this.child;
    this.shapesSent = new Set();
    const { graceMs: _grace, ...sandboxOptions } = this.opts;
    const child = fork(SANDBOX_CHILD_PATH, [], {
      serialization: 'advanced',
      execArgv: [],
      env: { ...process.env, SLUICE_TRANSFORM_OPTIONS: JSON.stringify(sandboxOptions) },
      stdio: ['pipe', 'ignore', 'pipe', 'ipc'],
    });
    // The records' bytes (see `exchange`). A child that dies mid-batch fails the write: its
    // outcome comes from 'close'.
    child.stdin!.on('error', () => undefined);
    (child.stdin as Socket).unref();
    this.stderrTail = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      this.stderrTail = (this.stderrTail + d).slice(-STDERR_TAIL);
    });
    (child.stderr as Socket).unref();
    child.on('error', () => {
      // 'close' follows; the outcome is reported there.
    });
    this.child = child;
    this.forks++;
    return child;
  }
}

/** A typed array that owns exactly its buffer (a view would send its whole buffer). */
function compact(a: Float64Array): Float64Array {
  return a.byteOffset === 0 && a.byteLength === a.buffer.byteLength ? a : a.slice();
}

function crashOutcome(code: number | null, signal: NodeJS.Signals | null, stderr: string): TransformFailure {
  const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
  const oom = /heap out of memory|CALL_AND_RETRY_LAST|is_heap_oom|invalid size error|Allocation failed/i.test(stderr);
  const why = oom ? 'V8 could not allocate memory for it (e.g. one huge array or string)' : 'V8 failed';
  return {
    status: 'failed',
    reason: 'memory',
    recordIndex: null,
    message: `transform crashed its sandbox process, which ${how}: ${why}`,
  };
}
