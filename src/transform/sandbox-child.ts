/**
 * The child process that hosts a `TransformSandbox` (see sandbox-process.ts), or, with `--check`,
 * runs one script check (see script-check.ts). A V8 fatal error in an isolate (some allocations
 * abort the process instead of reaching isolated-vm's memory limit) ends this process only.
 *
 * Host mode: options arrive in SLUICE_TRANSFORM_OPTIONS (JSON). Each IPC message is a batch with
 * the views to run over it (`ChildRequest`); for each view the child says `start`, then `done`
 * with the sandbox's `runRaw` result (`error` when the input broke the contract), so the parent
 * knows which view was running if the process dies. Check mode: the script on stdin, a
 * `ChildCheck` as JSON on stdout.
 */
import { TransformIsolate } from './isolate.js';
import { TransformSandbox, type BatchInput, type RawAnswer, type TransformFailure, type ViewScript } from './sandbox.js';

/** What `--check` prints. */
export type ChildCheck = { ok: true } | { ok: false; message: string; line: number | null; column: number | null };

export interface ChildRequest {
  batch: BatchInput;
  views: ViewScript[];
}

export type ChildMessage =
  | { type: 'start'; view: number }
  | { type: 'done'; view: number; reply: RawAnswer | TransformFailure | { status: 'error'; message: string } };

function check(script: string, timeoutMs: number, memoryLimitMb: number): ChildCheck {
  const iso = new TransformIsolate(memoryLimitMb);
  try {
    const r = iso.load(script, timeoutMs, 1);
    if (r.status === 'loaded') return { ok: true };
    return { ok: false, message: r.message, line: r.line, column: r.column };
  } finally {
    iso.dispose();
  }
}

if (process.argv[2] === '--check') {
  const timeoutMs = Number(process.argv[3]);
  const memoryLimitMb = Number(process.argv[4]);
  const chunks: Buffer[] = [];
  process.stdin.on('data', (c: Buffer) => chunks.push(c));
  process.stdin.on('end', () => {
    process.stdout.write(JSON.stringify(check(Buffer.concat(chunks).toString('utf8'), timeoutMs, memoryLimitMb)));
  });
} else {
  const sandbox = new TransformSandbox(JSON.parse(process.env.SLUICE_TRANSFORM_OPTIONS ?? '{}') as ConstructorParameters<typeof TransformSandbox>[0]);
  const send = (m: ChildMessage) => process.send!(m);
  process.on('message', ({ batch, views }: ChildRequest) => {
    views.forEach((view, k) => {
      send({ type: 'start', view: k });
      let reply: Extract<ChildMessage, { type: 'done' }>['reply'];
      try {
        reply = sandbox.runRaw({ ...batch, ...view });
      } catch (err) {
        reply = { status: 'error', message: (err as Error)?.message ?? String(err) };
      }
      send({ type: 'done', view: k, reply });
    });
  });
  // The parent went away (exited, or its thread ended): so do we.
  process.on('disconnect', () => process.exit(0));
}
