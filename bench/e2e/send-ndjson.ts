import { onAnswers } from '../ingest/http-answers.js';
import { connect } from 'node:net';

export interface SendPlan {
  port: number;
  /** Path with query: `/ingest?key=…&collection=…`. */
  path: string;
  bodies: readonly Buffer[];
  /** Records in each body (what a 202 acknowledges). */
  records: readonly number[];
  /** Keep-alive connections, one request in flight on each. */
  connections: number;
  /** Wait before sending a body again after a 503 (the server's Retry-After is seconds; this is the bench's pace). */
  retryMs?: number;
}

export interface SendResult {
  /** Records acknowledged with 202. */
  records: number;
  bytes: number;
  /** 503 answers (backpressure), each followed by a retry of the same body. */
  refusals: number;
  /** performance.now() of the first request and of the last acknowledgement. */
  firstSentAt: number;
  lastAckAt: number;
}

/**
 * Send every body once as `application/x-ndjson` over raw keep-alive sockets (a lean client: on a
 * 2-core machine it shares the CPU with the server under test). Each connection takes the next
 * unsent body when its previous one is answered; a 503 sends the same body again after `retryMs`, on a
 * new connection (the server closes the one it refused on).
 * Any other non-2xx answer fails the run (the bench data must all be accepted).
 */
export async function sendNdjson(plan: SendPlan): Promise<SendResult> {
  const retryMs = plan.retryMs ?? 100;
  let next = 0;
  const result: SendResult = { records: 0, bytes: 0, refusals: 0, firstSentAt: 0, lastAckAt: 0 };
  const connection = () =>
    new Promise<void>((resolve, reject) => {
      let current = -1;
      const open = (first: number | null) => {
        const socket = connect(plan.port, '127.0.0.1');
        socket.setNoDelay(true);
        let awaiting = false;
        /** This socket was given up on purpose (after a 503): its close is not the end of the connection's work. */
        let replaced = false;
        const send = (i: number) => {
          current = i;
          awaiting = true;
          const body = plan.bodies[i]!;
          if (result.firstSentAt === 0) result.firstSentAt = performance.now();
          socket.cork();
          socket.write(
            `POST ${plan.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: ${body.length}\r\n\r\n`,
          );
          socket.write(body);
          socket.uncork();
        };
        const sendNext = () => {
          if (next >= plan.bodies.length) {
            socket.end();
            resolve();
            return;
          }
          send(next++);
        };
        socket.on('connect', () => (first === null ? sendNext() : send(first)));
        socket.on('error', (err) => (replaced ? undefined : reject(err)));
        socket.on('close', () => {
          if (replaced) return;
          if (awaiting) reject(new Error('the server closed a connection with a request unanswered'));
          else resolve();
        });
        onAnswers(socket, (status, body) => {
          const answer = body.toString('utf8');
          awaiting = false;
          if (status === 202) {
            result.records += plan.records[current]!;
            result.bytes += plan.bodies[current]!.length;
            result.lastAckAt = performance.now();
            sendNext();
          } else if (status === 503) {
            // The server closes the connection after a refusal (docs/ingest.md, "Refusals"): the same
            // body goes again on a new one.
            result.refusals++;
            replaced = true;
            socket.destroy();
            const again = current;
            setTimeout(() => open(again), retryMs);
          } else {
            socket.destroy();
            reject(new Error(`ingest answered ${status}: ${answer.slice(0, 300)}`));
          }
        });
      };
      open(null);
    });
  await Promise.all(Array.from({ length: Math.min(plan.connections, plan.bodies.length) }, connection));
  return result;
}
