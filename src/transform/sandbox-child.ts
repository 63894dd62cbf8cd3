/**
 * The child process that hosts a `TransformSandbox` (see sandbox-process.ts), or, with `--check`,
 * runs one script check (see script-check.ts). A V8 fatal error in an isolate (some allocations
 * abort the process instead of reaching isolated-vm's memory limit) ends this process only.
 *
 * Host mode: options arrive in SLUICE_TRANSFORM_OPTIONS (JSON). Each IPC message is a batch with
 * the views to run over it (`ChildRequest`), the records' bytes following on stdin; for each view
 * the child says `start`, then `done` with the sandbox's `runRaw` result (`error` when the input
 * broke the contract), so the parent knows which view was running if the process dies. Check mode: the script on stdin, a
 * `ChildCheck` as JSON on stdout.
 */
import { readSync } from 'node:fs';
import { TransformIsolate } from './isolate.js';
import { recordsTextOf } from './records-text.js';
import {
  TransformSandbox,
  type BatchInput,
  type RawAnswer,
  type TransformFailure,
  type ViewScript,
} from './sandbox.js';
import type { TemplateRecords } from './record-slots.js';

/** What `--check` prints. */
export type ChildCheck = { ok: true } | { ok: false; message: string; line: number | null; column: number | null };

export interface ChildRequest {
  /** `recordsText` as a string, or `stdinBytes`: that many bytes of UTF-8 to read from stdin. */
  batch: Omit<BatchInput, 'recordsText' | 'templates'> & {
    recordsText: string | { stdinBytes: number };
    templates?: SentTemplates;
  };
  views: ViewScript[];
}

/**
 * `BatchInput.templates` as sent: the shapes this process was not sent before (it keeps them all)
 * and how many `ints` and `nums` follow the records' bytes on stdin, after `ids` (one per record).
 */
export interface SentTemplates {
  used: readonly number[];
  shapes: Array<[number, string]>;
  ints: number;
  nums: number;
}

/** Every record shape this process was sent (the sending worker bounds them: record-slots.ts). */
const shapes = new Map<number, string>();

/** Buffer the records' bytes are read into, kept for the next batch. */
let scratch = Buffer.alloc(0);

/** `n` bytes from stdin (blocking: this process has nothing else to do meanwhile). */
function readStdin(n: number): Uint8Array {
  if (scratch.length < n) scratch = Buffer.allocUnsafeSlow(Math.max(n, Math.min(2 * scratch.length, 256 << 20)));
  return readInto(scratch.subarray(0, n));
}

/** A typed array of `n` entries read from stdin. */
function readArray<T extends Int32Array | Float64Array>(make: new (n: number) => T, n: number): T {
  const a = new make(n);
  readInto(new Uint8Array(a.buffer, 0, a.byteLength));
  return a;
}

/** Fills `into` from stdin. */
function readInto(into: Uint8Array): Uint8Array {
  const n = into.byteLength;
  for (let at = 0; at < n; ) {
    let got: number;
    try {
      got = readSync(0, into, at, n - at, null);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(PAUSE, 0, 0, 1);
      continue;
    }
    // The parent went away.
    if (got === 0) process.exit(0);
    at += got;
  }
  return into;
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));

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
  const sandbox = new TransformSandbox(
    JSON.parse(process.env.SLUICE_TRANSFORM_OPTIONS ?? '{}') as ConstructorParameters<typeof TransformSandbox>[0],
  );
  const send = (m: ChildMessage) => process.send!(m);
  process.on('message', ({ batch: sent, views }: ChildRequest) => {
    const { recordsText: r, templates: t, ...rest } = sent;
    // Everything the batch sent down stdin is read first (the next batch's bytes follow it).
    const bytes = typeof r === 'string' ? null : readStdin(r.stdinBytes);
    let templates: TemplateRecords | undefined;
    if (t) {
      for (const [id, desc] of t.shapes) shapes.set(id, desc);
      templates = {
        ids: readArray(Int32Array, rest.receivedAt.length),
        ints: readArray(Int32Array, t.ints),
        nums: readArray(Float64Array, t.nums),
        used: t.used,
        shapes,
      };
    }
    // Made into the sandbox's string once for all the views (the bytes' buffer is reused).
    const batch: BatchInput = {
      ...rest,
      recordsText: bytes === null ? (r as string) : recordsTextOf(bytes),
      ...(templates ? { templates } : {}),
    };
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
