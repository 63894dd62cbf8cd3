import { onAnswers } from './http-answers.js';
import { connect, type Socket } from 'node:net';
import { WsClient, zeroMaskFrame } from '../../test/ingest/ws-client.js';

/** Outcome of one bounded load run. */
export interface LoadResult {
  /** Completed requests (or frames) with a 2xx answer (or an ack). */
  ok: number;
  /** Answers that were not 2xx (or error frames). */
  failed: number;
  /** Seconds measured. */
  seconds: number;
  /** Latency samples, ms (empty when the generator reports percentiles instead). */
  latencies: Float64Array;
  /** Percentiles computed by the generator itself (wrk), ms. */
  p50Ms?: number;
  p99Ms?: number;
}

export interface HttpLoad {
  port: number;
  /** Path with query, e.g. `/ingest?key=…`. */
  path: string;
  body: Buffer;
  contentType: string;
  /** Open connections, one request in flight on each (HTTP/1.1 keep-alive, no pipelining). */
  connections: number;
  durationMs: number;
}

/**
 * A bounded HTTP/1.1 load generator on raw sockets: `connections` keep-alive connections, each
 * sending the same prebuilt request again as soon as the previous answer arrived, for `durationMs`.
 */
export async function httpLoad(opts: HttpLoad): Promise<LoadResult> {
  const request = Buffer.concat([
    Buffer.from(
      `POST ${opts.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${opts.contentType}\r\nContent-Length: ${opts.body.length}\r\n\r\n`,
    ),
    opts.body,
  ]);
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  const start = performance.now();
  const end = start + opts.durationMs;
  await Promise.all(
    Array.from(
      { length: opts.connections },
      () =>
        new Promise<void>((resolve, reject) => {
          const socket: Socket = connect(opts.port, '127.0.0.1');
          socket.setNoDelay(true);
          let sentAt = 0;
          const send = () => {
            sentAt = performance.now();
            socket.write(request);
          };
          socket.on('connect', send);
          socket.on('error', reject);
          // A server that closes the connection ends this connection's share of the run.
          socket.on('close', () => resolve());
          onAnswers(socket, (status) => {
            const now = performance.now();
            if (status >= 200 && status < 300) ok++;
            else failed++;
            latencies.push(now - sentAt);
            if (now < end) send();
            else {
              socket.end();
              resolve();
            }
          });
        }),
    ),
  );
  return { ok, failed, seconds: (performance.now() - start) / 1000, latencies: Float64Array.from(latencies) };
}

export interface WsLoad {
  /** ws url as http://host:port/ingest?key=… */
  url: string;
  frame: Buffer;
  connections: number;
  /** Frames in flight per connection. */
  window: number;
  durationMs: number;
}

/** WebSocket load: each connection keeps `window` frames unanswered, sending one per answer. */
export async function wsLoad(opts: WsLoad): Promise<LoadResult> {
  const wire = zeroMaskFrame(opts.frame);
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  const clients = await Promise.all(Array.from({ length: opts.connections }, () => WsClient.connect(opts.url)));
  const start = performance.now();
  const end = start + opts.durationMs;
  await Promise.all(
    clients.map(
      (client) =>
        new Promise<void>((resolve) => {
          const sent: number[] = [];
          let outstanding = 0;
          const send = () => {
            sent.push(performance.now());
            outstanding++;
            client.sendRaw(wire);
          };
          client.listen((text) => {
            const now = performance.now();
            latencies.push(now - (sent.shift() ?? now));
            outstanding--;
            if (text.includes('"accepted"')) ok++;
            else failed++;
            if (now < end) send();
            else if (outstanding === 0) {
              client.close();
              resolve();
            }
          });
          for (let i = 0; i < opts.window; i++) send();
        }),
    ),
  );
  return { ok, failed, seconds: (performance.now() - start) / 1000, latencies: Float64Array.from(latencies) };
}

/** The q-quantile (0..1) of latency samples, ms. */
export function quantile(samples: Float64Array, q: number): number {
  if (samples.length === 0) return NaN;
  const sorted = Float64Array.from(samples).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}
