import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** What `IngestPoster.post` returns: the status, the headers the sender reads, and the (small) answer. */
export interface PostAnswer {
  status: number;
  retryAfter: string | null;
  text: string;
}

/** Answers to ingest requests are small envelopes; anything longer is cut (nothing retains a large body). */
const MAX_ANSWER_BYTES = 64 * 1024;

/** A request with no progress for this long fails (and is retried): fetch's default wait for an answer. */
export const POST_TIMEOUT_MS = 300_000;

/**
 * POSTs of ingest bodies over `connections` keep-alive connections (node:http, so a `Buffer` body is
 * written as it is: fetch copied every body once more, bench/cli). One request per connection at a
 * time, as the e2e bench's client sends. A request that cannot be made, whose connection breaks or
 * that makes no progress for POST_TIMEOUT_MS rejects with an error naming the cause (`ECONNREFUSED`,
 * `socket hang up`, `ETIMEDOUT`…).
 */
export class IngestPoster {
  private readonly agent: HttpAgent;
  private readonly url: URL;

  constructor(url: string, connections: number) {
    this.url = new URL(url);
    const opts = { keepAlive: true, maxSockets: connections, maxFreeSockets: connections };
    this.agent = this.url.protocol === 'https:' ? new HttpsAgent(opts) : new HttpAgent(opts);
  }

  post(headers: Record<string, string>, body: Buffer | string): Promise<PostAnswer> {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    const send = this.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        this.url,
        { method: 'POST', agent: this.agent, headers: { ...headers, 'content-length': String(bytes.length) } },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            if (size < MAX_ANSWER_BYTES) chunks.push(c);
            size += c.length;
          });
          res.on('end', () => {
            const ra = res.headers['retry-after'];
            resolve({
              status: res.statusCode ?? 0,
              retryAfter: typeof ra === 'string' ? ra : null,
              text: Buffer.concat(chunks).toString('utf8', 0, Math.min(size, MAX_ANSWER_BYTES)),
            });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.setTimeout(POST_TIMEOUT_MS, () =>
        req.destroy(Object.assign(new Error(`no answer within ${POST_TIMEOUT_MS / 1000} s`), { code: 'ETIMEDOUT' })),
      );
      req.end(bytes);
    });
  }

  /** Close the idle connections (the process can then exit). */
  close(): void {
    this.agent.destroy();
  }
}

/** The cause of a failed request in a few words (`ECONNREFUSED`, `ECONNRESET`, the message). */
export function describePostError(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
}
