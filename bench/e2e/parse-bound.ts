import { Worker } from 'node:worker_threads';

export interface ParseBound {
  threads: number;
  records: number;
  bytes: number;
  /** Best of the timed passes. */
  seconds: number;
}

/**
 * The ceiling for any NDJSON ingest on this machine: `JSON.parse` of every line of `bodies`, one
 * worker thread per core, each on its share (UTF-8 decoding included, nothing else). A warm-up pass,
 * then `passes` timed ones; the best counts. The bodies are copied once into shared memory, so no
 * pass pays for moving them.
 */
export async function measureParseBound(bodies: readonly Buffer[], threads: number, passes = 3): Promise<ParseBound> {
  let total = 0;
  for (const b of bodies) total += b.length;
  const bytes = new SharedArrayBuffer(total);
  const view = new Uint8Array(bytes);
  const shares: [number, number][][] = Array.from({ length: threads }, () => []);
  const sizes = new Array<number>(threads).fill(0);
  let at = 0;
  for (const b of bodies) {
    view.set(b, at);
    // Largest-first is not needed: bodies are similar; give each to the lightest share.
    const w = sizes.indexOf(Math.min(...sizes));
    shares[w]!.push([at, at + b.length]);
    sizes[w]! += b.length;
    at += b.length;
  }
  const script = new URL('./parse-worker.js', import.meta.url);
  const workers = shares.map((ranges) => new Worker(script, { workerData: { bytes, ranges } }));
  const pass = () =>
    Promise.all(
      workers.map(
        (w) =>
          new Promise<number>((resolve, reject) => {
            w.once('message', (m: { records: number }) => resolve(m.records));
            w.once('error', reject);
            w.postMessage('go');
          }),
      ),
    );
  try {
    await pass();
    let best = Infinity;
    let records = 0;
    for (let i = 0; i < passes; i++) {
      const t0 = performance.now();
      const counts = await pass();
      best = Math.min(best, (performance.now() - t0) / 1000);
      records = counts.reduce((a, b) => a + b, 0);
    }
    return { threads, records, bytes: total, seconds: best };
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
