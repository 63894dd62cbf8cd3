import type { TemplatedApp, WebSocket } from 'uws-pack';
import { ApiError, toApiError } from '../errors.js';
import type { IngestDeps } from './ingest-deps.js';
import type { FrontContext } from './http-front.js';
import { checkIdempotencyKey } from './ingest-core.js';
import { decode, isGzip, parseQuery, sendError, type ResponseState } from './transport.js';

const WS_QUERY = ['key', 'collection', 'stream', 'seq'] as const;

interface Connection {
  secret: string;
  slug: string | undefined;
  projectId: string;
  /** Client-chosen stream name: with it, (stream, seq) is each frame's idempotency key. */
  stream: string | undefined;
  nextSeq: number;
  /** Frames received and not yet answered. */
  pending: number;
  /** Frames whose spool put is not issued yet. */
  unqueued: number;
  /** Settles when every frame so far has its entry queued (meaningful while `unqueued` > 0). */
  tail: Promise<void>;
  closed: boolean;
}

/** Close codes after which unanswered frames are not a loss the client caused on purpose. */
const NORMAL_CLOSE = new Set([1000, 1001, 1005]);

/**
 * WebSocket ingest on the same url: GET /ingest?key=…[&collection=…][&stream=<name>&seq=<n>] with
 * `Upgrade: websocket`. The key is checked before the upgrade (refusals are ordinary HTTP error
 * envelopes). Each message is a frame (object, array or NDJSON; gzip when it starts with the gzip
 * magic bytes) numbered `seq` from `seq` (default 1); the answer is `{"seq":n,"accepted":k}` once
 * durable, or `{"seq":n,"error":{code,message,details?}}` — the connection stays open except when
 * the key stops being valid (then closed with 1008).
 */
export function mountWsIngest(app: TemplatedApp, s: IngestDeps, ctx: FrontContext): { closeAll(): void } {
  const sockets = new Set<WebSocket<Connection>>();

  app.ws<Connection>('/ingest', {
    maxPayloadLength: ctx.maxBytes,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    maxBackpressure: 4 * 1024 * 1024,
    // A client that never reads its answers is closed once 4 MiB of them are buffered, rather than
    // having later answers dropped silently (uWS's default past the limit).
    closeOnBackpressureLimit: true,
    upgrade: (res, req, context) => {
      const rawQuery = req.getQuery() ?? '';
      const wsKey = req.getHeader('sec-websocket-key');
      const wsProtocol = req.getHeader('sec-websocket-protocol');
      const wsExtensions = req.getHeader('sec-websocket-extensions');
      const state: ResponseState = { aborted: false, done: false };
      let projectId: string | null = null;
      try {
        if (ctx.stopping())
          throw new ApiError('service_unavailable', 'The server is shutting down; reconnect in a moment', {
            headers: { 'retry-after': '5' },
          });
        const query = parseQuery(rawQuery, WS_QUERY);
        const target = ctx.core.resolve(query.values.key, query.values.collection);
        projectId = target.projectId;
        if (query.error) throw query.error;
        const stream =
          query.values.stream === undefined ? undefined : checkIdempotencyKey(query.values.stream, 'query.stream');
        const seq = parseSeq(query.values.seq);
        const conn: Connection = {
          secret: query.values.key!,
          slug: query.values.collection,
          projectId,
          stream,
          nextSeq: seq,
          pending: 0,
          unqueued: 0,
          tail: Promise.resolve(),
          closed: false,
        };
        res.upgrade<Connection>(conn, wsKey, wsProtocol, wsExtensions, context);
      } catch (err) {
        sendError(res, state, ctx.core.countError(projectId, toApiError(err)), true);
      }
    },
    open: (ws) => {
      sockets.add(ws);
    },
    message: (ws, message) => {
      const conn = ws.getUserData();
      const seq = conn.nextSeq++;
      // uWS neuters `message` when this callback returns: copy it.
      const frame = Buffer.from(new Uint8Array(message));
      conn.pending++;
      const done = ctx.begin();
      // Frames are spooled in the order sent: wait only when an earlier frame's put is not issued yet
      // (gzip, a new collection); usually each frame's put is issued before its callback returns.
      const after = conn.unqueued > 0 ? conn.tail : undefined;
      conn.unqueued++;
      let isQueued = false;
      let release: (() => void) | null = null;
      const queued = () => {
        if (isQueued) return;
        isQueued = true;
        conn.unqueued--;
        release?.();
      };
      const finish = () => {
        queued();
        conn.pending--;
        done();
      };
      handleFrame(ws, conn, seq, frame, after, queued).then(finish, finish);
      if (!isQueued) {
        // Later frames wait for this one and, through `after`, for every earlier one.
        const own = new Promise<void>((r) => (release = r));
        conn.tail = after ? after.then(() => own) : own;
      }
    },
    close: (ws, code) => {
      const conn = ws.getUserData();
      conn.closed = true;
      sockets.delete(ws);
      if (conn.pending > 0 || !NORMAL_CLOSE.has(code)) s.telemetry.recordError(conn.projectId, 'connection_closed');
    },
  });

  async function handleFrame(
    ws: WebSocket<Connection>,
    conn: Connection,
    seq: number,
    frame: Buffer,
    after: Promise<void> | undefined,
    queued: () => void,
  ): Promise<void> {
    let target;
    try {
      if (ctx.stopping())
        throw ctx.core.countError(
          conn.projectId,
          new ApiError('service_unavailable', 'The server is shutting down; resend this frame after reconnecting', {
            headers: { 'retry-after': '5' },
          }),
        );
      // Re-checked per frame: deleting or disabling the key takes effect at once.
      target = ctx.core.resolve(conn.secret, conn.slug);
    } catch (err) {
      const e = toApiError(err);
      reply(ws, conn, errorFrame(seq, e));
      if (e.status === 401 || e.code === 'team_not_active' || e.code === 'source_deleted') {
        if (!conn.closed) ws.end(1008, e.code);
      }
      return;
    }
    try {
      const idempotencyKey = conn.stream === undefined ? undefined : `ws:${conn.stream}:${seq}`;
      ctx.core.admit(target, frame.length, idempotencyKey);
      const body = isGzip(frame)
        ? await decode('gzip', frame, ctx.maxBytes).catch((e: unknown) =>
            Promise.reject(ctx.core.countError(target.projectId, toApiError(e))),
          )
        : frame;
      const outcome = await ctx.core.accept(target, body, { ndjson: false, idempotencyKey, after, queued });
      reply(
        ws,
        conn,
        outcome.replayed
          ? `{"seq":${seq},"accepted":${outcome.accepted},"replayed":true}`
          : `{"seq":${seq},"accepted":${outcome.accepted}}`,
      );
    } catch (err) {
      reply(ws, conn, errorFrame(seq, toApiError(err)));
    }
  }

  return {
    closeAll() {
      for (const ws of sockets) ws.end(1001, 'server shutting down');
    },
  };
}

function reply(ws: WebSocket<Connection>, conn: Connection, json: string): void {
  if (conn.closed) return;
  ws.cork(() => ws.send(json, false));
}

function errorFrame(seq: number, err: ApiError): string {
  const error: Record<string, unknown> = { code: err.code, message: err.message };
  if (err.details !== undefined) error.details = err.details;
  const retry = err.headers['retry-after'];
  return JSON.stringify(retry ? { seq, error, retry_after: Number(retry) } : { seq, error });
}

function parseSeq(raw: string | undefined): number {
  if (raw === undefined) return 1;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1 || !/^\d+$/.test(raw)) {
    throw new ApiError(
      'request_validation_failed',
      'query.seq must be a positive integer (the number of the first frame)',
      { details: [{ field: 'query.seq', message: 'must be a positive integer' }] },
    );
  }
  return n;
}
