import { STATUS_CODES } from 'node:http';
import type { HttpRequest, HttpResponse } from 'uws-pack';
import { ApiError } from '../../errors.js';
import { BodyDrain, DEFAULT_DRAIN_BOUNDS, shouldDrain, type DrainBounds } from '../../http/body-drain.js';
import { responseJson } from './raw-json.js';

/** Per-response state: uWS forbids touching a response after it was aborted or ended. */
export interface ResponseState {
  aborted: boolean;
  done: boolean;
}

/** Everything needed from the request, copied synchronously (uWS invalidates `req` after return). */
export interface RequestHead {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
}

export function readHead(req: HttpRequest): RequestHead {
  const headers: Record<string, string> = {};
  req.forEach((k, v) => {
    headers[k] = v;
  });
  return {
    method: req.getCaseSensitiveMethod().toUpperCase(),
    path: req.getUrl(),
    query: req.getQuery() ?? '',
    headers,
  };
}

/**
 * Collect the body up to `limit` bytes. A body over the limit — by its Content-Length or as it
 * arrives — is `payload_too_large`, reported once the rest was read and thrown away (`BodyDrain`,
 * so that the client can read the answer; at most `bounds`); the caller answers and closes.
 */
export function readBody(
  res: HttpResponse,
  state: ResponseState,
  head: RequestHead,
  limit: number,
  onBody: (err: ApiError | null, body: Buffer | null) => void,
  bounds: DrainBounds = DEFAULT_DRAIN_BOUNDS,
): void {
  const declared = Number(head.headers['content-length'] ?? '0');
  let drain: BodyDrain | null = null;
  // A client that goes away meanwhile is not noticed here: the drain's time limit ends the request.
  const refuse = (received: number) => {
    drain = new BodyDrain(received, bounds, () => onBody(tooLarge(limit), null));
  };
  if (declared > limit) {
    if (!shouldDrain(declared, false, bounds.maxBytes)) {
      onBody(tooLarge(limit), null);
      return;
    }
    refuse(0);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  res.onData((chunk, isLast) => {
    if (state.aborted) return;
    if (drain) {
      drain.chunk(chunk.byteLength, isLast);
      return;
    }
    size += chunk.byteLength;
    if (size > limit) {
      chunks.length = 0;
      if (isLast) onBody(tooLarge(limit), null);
      else refuse(size);
      return;
    }
    // uWS reuses the chunk's memory after this callback returns: copy it.
    if (chunk.byteLength > 0) chunks.push(Buffer.from(new Uint8Array(chunk).slice()));
    if (isLast)
      onBody(null, chunks.length === 0 ? null : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  });
}

function tooLarge(limit: number): ApiError {
  return new ApiError('payload_too_large', `The request body is larger than the limit of ${limit} bytes`, {
    details: { limit_bytes: limit },
  });
}

/**
 * Write a JSON response (corked: uWS needs that outside its own callbacks). `close` ends the
 * connection after it (uWS writes `Connection: close`).
 */
export function sendJson(
  res: HttpResponse,
  state: ResponseState,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  close = false,
): void {
  if (state.aborted || state.done) return;
  state.done = true;
  const payload = responseJson(body);
  res.cork(() => {
    res.writeStatus(`${status} ${STATUS_CODES[status] ?? ''}`);
    res.writeHeader('content-type', 'application/json; charset=utf-8');
    for (const [k, v] of Object.entries(headers)) res.writeHeader(k, v);
    res.end(payload, close);
  });
}
