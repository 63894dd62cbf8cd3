import type { BenchServer } from './sluice-server.js';
import { sendNdjson, type SendResult } from './send-ndjson.js';

/** The queue is polled this often once every record is acknowledged (the drain time's resolution). */
export const DRAIN_POLL_MS = 50;
const DRAIN_TIMEOUT_MS = 15 * 60_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves when the project's queue is empty; `onSample` sees every poll. */
export async function drained(server: BenchServer, onSample: (pending: number) => void = () => {}): Promise<void> {
  const deadline = performance.now() + DRAIN_TIMEOUT_MS;
  for (;;) {
    const q = await server.queue();
    onSample(q.pending);
    if (q.pending === 0 && q.processing === 0) return;
    if (performance.now() > deadline)
      throw new Error(`the spool did not drain in ${DRAIN_TIMEOUT_MS / 60_000} min (${q.pending} records pending)`);
    await sleep(DRAIN_POLL_MS);
  }
}

export interface Drained {
  sent: SendResult;
  /** performance.now() when the queue was seen empty after the last 202. */
  drainedAt: number;
  /** Most records pending at a sample (while sending: every 250 ms; then every poll). */
  maxPending: number;
}

/**
 * Send `bodies` (closed loop, sendNdjson) and wait for the drain: the end-to-end clock of
 * bench/e2e. The queue is sampled while sending (for max pending).
 */
export async function sendAndDrain(
  server: BenchServer,
  bodies: readonly Buffer[],
  records: readonly number[],
  connections: number,
): Promise<Drained> {
  let maxPending = 0;
  let sending = true;
  const sampler = (async () => {
    while (sending) {
      maxPending = Math.max(maxPending, (await server.queue()).pending);
      await sleep(250);
    }
  })();
  let sent;
  try {
    sent = await sendNdjson({ port: server.port, path: server.ingestPath, bodies, records, connections });
  } finally {
    sending = false;
    await sampler;
  }
  await drained(server, (p) => (maxPending = Math.max(maxPending, p)));
  return { sent, drainedAt: performance.now(), maxPending };
}
