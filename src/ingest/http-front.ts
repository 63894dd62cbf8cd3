import type { HttpResponse, TemplatedApp } from 'uws-pack';
import { ApiError, toApiError } from '../errors.js';
import type { Logger } from '../log.js';
import { checkIdempotencyKey, type IngestCore, type IngestTarget } from './ingest-core.js';
import { acceptedJson, decode, parseQuery, PREFLIGHT_HEADERS, readBody, send, sendError, tooLarge, type ResponseState } from './transport.js';

const HTTP_QUERY = ['key', 'collection'] as const;

/** What the HTTP and WebSocket fronts share with the server. */
export interface FrontContext {
  core: IngestCore;
  log: Logger;
  /** Largest body (compressed and decompressed), bytes. */
  maxBytes: number;
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
  app.post('/ingest', (res, req) => {
    const rawQuery = req.getQuery() ?? '';
    const encoding = req.getHeader('content-encoding').trim().toLowerCase();
    const ndjson = req.getHeader('content-type').includes('ndjson');
    const declared = Number(req.getHeader('content-length') || '0');
    const idemHeader = req.getHeader('idempotency-key');
    const state: ResponseState = { aborted: false, done: false };
    res.onAborted(() => (state.aborted = true));
    const done = ctx.begin();

    let target: IngestTarget | null = null;
    let idempotencyKey: string | undefined;
    try {
      if (ctx.stopping()) throw new ApiError('service_unavailable', 'The server is shutting down; retry against it in a moment', { headers: { 'retry-after': '5' } });
      const query = parseQuery(rawQuery, HTTP_QUERY);
      target = ctx.core.resolve(query.values.key, query.values.collection);
      if (query.error) throw query.error;
      if (idemHeader) idempotencyKey = checkIdempotencyKey(idemHeader, 'headers.idempotency-key');
      if (!(declared >= 0)) throw new ApiError('request_validation_failed', 'Content-Length is not a number');
      if (declared > ctx.maxBytes) throw tooLarge(ctx.maxBytes);
      ctx.core.admit(target, declared);
    } catch (err) {
      const e = ctx.core.countError(target?.projectId ?? null, toApiError(err));
      // The body was not read: close so it is not taken for the next request.
      sendError(res, state, e, declared > 0);
      done();
      return;
    }

    const t = target;
    readBody(res, state, declared, ctx.maxBytes, (err, raw) => {
      if (err) {
        sendError(res, state, ctx.core.countError(t.projectId, err), true);
        done();
        return;
      }
      decode(encoding, raw, ctx.maxBytes)
        .catch((e: unknown) => {
          throw ctx.core.countError(t.projectId, toApiError(e));
        })
        .then((body) => ctx.core.accept(t, body, { ndjson, idempotencyKey }))
        .then(
          (outcome) => {
            send(res, state, 202, acceptedJson(outcome.accepted), outcome.replayed ? { 'idempotent-replayed': 'true' } : {});
            ctx.log.debug({ project_id: t.projectId, accepted: outcome.accepted, replayed: outcome.replayed }, 'ingest accepted');
          },
          (e: unknown) => sendError(res, state, toApiError(e)),
        )
        .finally(done);
    });
  });

  app.options('/ingest', (res) => {
    res.writeStatus('204 No Content');
    for (const k in PREFLIGHT_HEADERS) res.writeHeader(k, PREFLIGHT_HEADERS[k]!);
    res.endWithoutBody();
  });

  const notAllowed = (res: HttpResponse) => {
    const state: ResponseState = { aborted: false, done: false };
    res.onAborted(() => (state.aborted = true));
    sendError(res, state, new ApiError('method_not_allowed', 'Ingest takes POST (HTTP) or a WebSocket upgrade (GET with Upgrade: websocket)'), false);
  };
  app.any('/ingest', (res) => notAllowed(res));
}
