/**
 * A worker of the JSON.parse bound (parse-bound.ts): on each message, parse every NDJSON line of
 * its share of the bodies (UTF-8 decoding included, as a server must) and answer with the count.
 */
import { parentPort, workerData } from 'node:worker_threads';

interface Share {
  /** All bodies, back to back. */
  bytes: SharedArrayBuffer;
  /** [start, end) byte ranges of this worker's bodies. */
  ranges: [number, number][];
}

const { bytes, ranges } = workerData as Share;
const view = new Uint8Array(bytes);
const decoder = new TextDecoder();

parentPort!.on('message', () => {
  let records = 0;
  let keys = 0;
  for (const [start, end] of ranges) {
    const text = decoder.decode(view.subarray(start, end));
    let at = 0;
    while (at < text.length) {
      let nl = text.indexOf('\n', at);
      if (nl === -1) nl = text.length;
      if (nl > at) {
        const record = JSON.parse(text.slice(at, nl)) as Record<string, unknown>;
        // Touch the result so the parse cannot be skipped.
        keys += record === null ? 0 : 1;
        records++;
      }
      at = nl + 1;
    }
  }
  parentPort!.postMessage({ records, keys });
});
