import { createHash } from 'node:crypto';

/**
 * Where in the first `spreadMs` after its slot a job starts: fixed per job (a hash of its id), so many
 * pulls and checks due on one minute do not all fire at its first millisecond, and each keeps a steady
 * period from minute to minute.
 */
export function spreadOffset(id: string, spreadMs: number): number {
  if (spreadMs <= 0) return 0;
  return createHash('sha1').update(id).digest().readUInt32BE(0) % spreadMs;
}

/** Resolves after `ms` (at once when ≤ 0), or early when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
