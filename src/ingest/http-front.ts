import type { HttpResponse, TemplatedApp } from 'uws-pack';
import { ApiError, toApiError } from '../errors.js';
import type { Logger } from '../log.js';
import { BodyDrain, DRAIN_MAX_BYTES, shouldDrain } from '../http/body-drain.js';
import { bodiesFull } from './backpressure.js';
import { BodyPool } from './body-pool.js';
import { checkIdempotencyKey, type IngestCore, type IngestOutcome, type IngestTarget } from './ingest-core.js';
import {
  decode,
  parseQuery,
  PREFLIGHT_HEADERS,
  readBody,
  sendAccepted,
  sendError,
  tooLarge,
  type ResponseState,
} from './transport.js';

const HTTP_QUERY = ['key', 'collection'] as const;
const MAX_REMEMBERED_QUERIES = 10_000;
/** Header names read on every request, as bytes: uWS reads a Buffer in place, a string it converts first. */
const H = {
  contentEncoding: Buffer.from('content-encoding'),
  contentType: Buffer.from('content-type'),
  contentLength: Buffer.from('content-length'),
  idempotencyKey: Buffer.from('idempotency-key'),
};

/** What the HTTP and WebSocket fronts share with the server. */
export interface FrontContext {
  core: IngestCore;
  log: Logger;
  /** Largest body (compressed and decompressed), bytes. */
  maxBytes: number;
  /** A body must be read within this many ms (slow or stalled uploads are closed). */
  bodyTimeoutMs: number;
  stopping(): boolean;
  /** Count a request or frame as in flight until `done` is called (drain waits for them). */
  begin(): () => void;
}

/**
 * POST /ingest?key=<secret>[&collection=<slug>] — one JSON object, an array of objects or NDJSON,
 * optionally gzip/deflate; all or nothing; 202 `{ accepted }` only after the spool commit is durable.
 * OPTIONS answers the CORS preflight; other methods 405.
 */
export function mountHttpIngest(app: TemplatedApp, ctx: FrontContext): void {
  /**
   * Query strings parsed without error → their values (a browser beacon repeats the same
   * `key=…&collection=…` on every request). Bounded: cleared when full; only a shortcut.
   */
  const queries = new Map<string, { values: Record<string, string>; error: null }>();
  const queryOf = (raw: string): { values: Record<string, string>; error: ApiError | null } => {
    const known = queries.get(raw);
    if (known) return known;
    const parsed = parseQuery(raw, HTTP_QUERY);
    if (parsed.error === null) {
      if (queries.size >= MAX_REMEMBERED_QUERIES) queries.clear();
      queries.set(raw, { values: parsed.values, error: null });
    }
    return parsed;
  };

  const bodies = new BodyPool();

  app.post('/ingest', (res, req) => {
    const rawQuery = req.getQuery() ?? '';
    const rawEncoding = req.getHeader(H.contentEncoding);
    const encoding = rawEncoding === '' ? '' : rawEncoding.trim().toLowerCase();
    const ndjson = req.getHeader(H.contentType).includes('ndjson');
    const declared = Number(req.getHeader(H.contentLength) || '0');
    const idemHeader = req.getHeader(H.idempotencyKey);
    const state: ResponseState = { aborted: false, done: false };
    res.onAborted(() => {
      state.aborted = true;
      state.onAbort?.();
    });
    const done = ctx.begin();

    let target: IngestTarget | null = null;
    let idempotencyKey: string | undefined;
    try {
      if (ctx.stopping())
        throw new ApiError('service_unavailable', 'The server is shutting down; retry against it in a moment', {
          headers: { 'retry-after': '5' },
        });
      const query = queryOf(rawQuery);
      target = ctx.core.resolve(query.values.key, query.values.collection);
      if (query.error) throw query.error;
      if (idemHeader) idempotencyKey = checkIdempotencyKey(idemHeader, 'headers.idempotency-key');
      if (!(declared >= 0)) throw new ApiError('request_validation_failed', 'Content-Length is not a number');
      if (declared > ctx.maxBytes) throw tooLarge(ctx.maxBytes);
      ctx.core.admit(target, declared, idempotencyKey);
    } catch (err) {
      const e = ctx.core.countError(target?.projectId ?? null, toApiError(err));
      refuseUnread(
        res,
        state,
        e,
        declared,
        declared === 0 && req.getHeader('transfer-encoding') !== '',
        ctx.bodyTimeoutMs,
        done,
      );
      return;
    }

    const t = target;
    const idem = idempotencyKey;
    readBody(
      res,
      state,
      declared,
      ctx.maxBytes,
      (err, raw, release) => {
        if (err) {
          // Gone mid-body (the client, or uWS closing a stalled connection): nobody gets an answer.
          sendError(
            res,
            state,
            ctx.core.countError(t.projectId, err, state.aborted ? 'connection_closed' : undefined),
            true,
          );
          done();
          return;
        }
        const refuse = (e: unknown) => {
          sendError(res, state, toApiError(e));
          done();
        };
        // Uncompressed (the usual case): straight to the core, no promise per request.
        if (encoding === '' || encoding === 'identity') {
          // `acceptThen` counts the body from here on.
          release();
          ctx.core.acceptThen(t, raw, { ndjson, idempotencyKey: idem }, (e, accepted, replayed) => {
            // Spooled (its commit is durable) or refused: nothing reads the body any more.
            bodies.give(raw);
            if (e !== null) return refuse(e);
            sendAccepted(res, state, accepted, replayed);
            if (ctx.log.isLevelEnabled('debug'))
              ctx.log.debug({ project_id: t.projectId, accepted, replayed }, 'ingest accepted');
            done();
          });
          return;
        }
        const answer = (outcome: IngestOutcome) => {
          sendAccepted(res, state, outcome.accepted, outcome.replayed);
          if (ctx.log.isLevelEnabled('debug'))
            ctx.log.debug(
              { project_id: t.projectId, accepted: outcome.accepted, replayed: outcome.replayed },
              'ingest accepted',
            );
          done();
        };
        decode(encoding, raw, ctx.maxBytes)
          .finally(() => {
            release();
            bodies.give(raw);
          })
          .catch((e: unknown) => {
            throw ctx.core.countError(t.projectId, toApiError(e));
          })
          .then((body) => ctx.core.accept(t, body, { ndjson, idempotencyKey: idem }))
          .then(answer, refuse);
      },
      { budget: ctx.core.gate, full: bodiesFull, timeoutMs: ctx.bodyTimeoutMs, pool: bodies },
    );
  });

  app.options('/ingest', (res) => {
    res.writeStatus('204 No Content');
    for (const k in PREFLIGHT_HEADERS) res.writeHeader(k, PREFLIGHT_HEADERS[k]!);
    res.endWithoutBody();
  });

  const notAllowed = (res: HttpResponse) => {
    const state: ResponseState = { aborted: false, done: false };
    res.onAborted(() => (state.aborted = true));
    sendError(
      res,
      state,
      new ApiError(
        'method_not_allowed',
        'Ingest takes POST (HTTP) or a WebSocket upgrade (GET with Upgrade: websocket)',
      ),
      false,
    );
  };
  app.any('/ingest', (res) => notAllowed(res));
}

/**
 * Answer a request refused before its body was read. A body still arriving is read and thrown away
 * first (within the body time limit, at most DRAIN_MAX_BYTES), so the client can read the answer;
 * then the connection is closed, as it is at once when the declared body is larger than that.
 */
function refuseUnread(
  res: HttpResponse,
  state: ResponseState,
  err: ApiError,
  declared: number,
  chunked: boolean,
  timeoutMs: number,
  done: () => void,
): void {
  if (!shouldDrain(declared, chunked)) {
    sendError(res, state, err, declared > 0);
    done();
    return;
  }
  const drain = new BodyDrain(0, { maxBytes: DRAIN_MAX_BYTES, timeoutMs }, () => {
    sendError(res, state, err, true);
    done();
  });
  state.onAbort = () => {
    drain.cancel();
    done();
  };
  res.onData((chunk, isLast) => drain.chunk(chunk.byteLength, isLast));
}
