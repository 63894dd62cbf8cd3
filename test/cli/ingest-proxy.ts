import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with the n-th ingest request (1-based), which carries Idempotency-Key `key`. */
export type ProxyAction = 'pass' | { status: number; retryAfter?: string } | 'lose-answer' | 'refuse';

/**
 * A loopback HTTP proxy in front of a real server that misbehaves on ingest requests as told: answer
 * 503 itself, forward but cut the connection before the answer (stored, never acknowledged), or cut
 * it without forwarding (the server has gone away). Everything else is forwarded as is.
 */
export class IngestProxy {
  ingestRequests = 0;
  readonly seen: { key: string | undefined; action: string }[] = [];
  private server!: Server;
  url = '';

  constructor(
    private readonly target: string,
    public plan: (n: number, key: string | undefined) => ProxyAction,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const isIngest = req.url?.startsWith('/ingest') === true;
    const key = req.headers['idempotency-key'] as string | undefined;
    const action: ProxyAction = isIngest ? this.plan(++this.ingestRequests, key) : 'pass';
    if (isIngest)
      this.seen.push({
        key: req.headers['idempotency-key'] as string | undefined,
        action: typeof action === 'string' ? action : String(action.status),
      });
    if (action === 'refuse') return void req.socket.destroy();
    if (typeof action === 'object') {
      res.writeHead(action.status, {
        'content-type': 'application/json',
        ...(action.retryAfter ? { 'retry-after': action.retryAfter } : {}),
      });
      return void res.end(
        JSON.stringify({
          message: 'Unavailable',
          data: null,
          status: action.status,
          error: { code: 'spool_full_ingest_queue', message: 'busy (proxy)' },
          pagination: null,
          endpoint: 'POST /ingest',
        }),
      );
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k)) headers[k] = v;
    const body = Buffer.concat(chunks);
    const upstream = await fetch(this.target + req.url, {
      method: req.method!,
      headers,
      ...(body.length > 0 ? { body } : {}),
    });
    const text = Buffer.from(await upstream.arrayBuffer());
    if (action === 'lose-answer') return void req.socket.destroy();
    const out: Record<string, string> = {};
    upstream.headers.forEach((v, k) => {
      if (!['content-length', 'connection', 'transfer-encoding', 'content-encoding'].includes(k)) out[k] = v;
    });
    res.writeHead(upstream.status, out);
    res.end(text);
  }
}
