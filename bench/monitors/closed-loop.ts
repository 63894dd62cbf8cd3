import { connect, type Socket } from 'node:net';
import { onAnswers } from '../ingest/http-answers.js';

/** What a closed-loop ingest run did. */
export interface ClosedLoopResult {
  /** Requests answered 2xx. */
  ok: number;
  /** 503 refusals (backpressure), each waited out and sent again. */
  refused: number;
  /** Other non-2xx answers. */
  failed: number;
  /** Connections the server closed with a request unanswered (sent again on a new one). */
  dropped: number;
  seconds: number;
}

export interface ClosedLoad {
  port: number;
  /** Path with query, e.g. `/ingest?key=…`. */
  path: string;
  body: Buffer;
  contentType: string;
  /** Connections, one request in flight on each. */
  connections: number;
  durationMs: number;
}

/**
 * Closed-loop HTTP/1.1 ingest, as a producer that behaves: each connection sends the next request as
 * soon as the previous one is answered; a 503 (the server closes the connection after it,
 * docs/ingest.md "Refusals") waits the `retry_after_seconds` of its envelope (its Retry-After), then
 * reconnects and sends again. Unlike bench/ingest's `httpLoad`, a refusal does not end a connection's
 * share of the run, so the run measures a server that pushes back, not one that never does.
 */
export async function closedLoop(opts: ClosedLoad): Promise<ClosedLoopResult> {
  const request = Buffer.concat([
    Buffer.from(
      `POST ${opts.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${opts.contentType}\r\nContent-Length: ${opts.body.length}\r\n\r\n`,
    ),
    opts.body,
  ]);
  const result: ClosedLoopResult = { ok: 0, refused: 0, failed: 0, dropped: 0, seconds: 0 };
  const start = performance.now();
  const end = start + opts.durationMs;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      let socket: Socket;
      const open = () => {
        if (performance.now() >= end) return resolve();
        socket = connect(opts.port, '127.0.0.1');
        socket.setNoDelay(true);
        /** This socket's part is over (answered and closed on purpose). */
        let answered = false;
        socket.on('connect', () => socket.write(request));
        socket.on('error', () => {});
        // Closed by the server with a request unanswered: counted, and sent again on a new connection.
        socket.on('close', () => {
          if (answered) return;
          answered = true;
          result.dropped++;
          setTimeout(open, 100);
        });
        onAnswers(socket, (status, body) => {
          if (status >= 200 && status < 300) {
            result.ok++;
            if (performance.now() < end) socket.write(request);
            else {
              answered = true;
              socket.end();
              resolve();
            }
            return;
          }
          answered = true;
          socket.destroy();
          if (status !== 503) {
            result.failed++;
            return reject(new Error(`ingest answered ${status}: ${body.toString('utf8').slice(0, 300)}`));
          }
          result.refused++;
          let wait = 2;
          try {
            wait = JSON.parse(body.toString('utf8')).error?.details?.retry_after_seconds ?? wait;
          } catch {
            // not an envelope: the documented default
          }
          setTimeout(open, wait * 1000);
        });
      };
      open();
    });
  await Promise.all(Array.from({ length: opts.connections }, one));
  result.seconds = (performance.now() - start) / 1000;
  return result;
}
