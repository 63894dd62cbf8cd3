import { gunzip, inflate } from 'node:zlib';
import { STATUS_CODES } from 'node:http';
import type { HttpResponse } from 'uws-pack';
import { ApiError, invalidField } from '../errors.js';
import { errorEnvelope } from '../api/http/envelope.js';

/** The endpoint name ingest responses carry in the envelope. */
export const INGEST_ENDPOINT = 'POST /ingest';

/** CORS: browsers post with the publishable key from any origin (spec rule 9: the key only writes). */
const ALLOW_ORIGIN = 'access-control-allow-origin';
/** Sent with responses that carry headers a browser script may need to read. */
const EXPOSE = ['access-control-expose-headers', 'retry-after, idempotent-replayed'] as const;

export const PREFLIGHT_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  [ALLOW_ORIGIN]: '*',
  [EXPOSE[0]]: EXPOSE[1],
  'access-control-allow-methods': 'POST, OPTIONS',
  'access-control-allow-headers': 'content-type, content-encoding, idempotency-key',
  'access-control-max-age': '86400',
});

export interface ResponseState {
  aborted: boolean;
  done: boolean;
}

/**
 * Parse the query string. Names outside `allowed`, or given twice, make `error` (reported after
 * authentication so the refusal is attributed to the key's project).
 */
export function parseQuery(raw: string, allowed: readonly string[]): { values: Record<string, string>; error: ApiError | null } {
  const values: Record<string, string> = {};
  let error: ApiError | null = null;
  if (!raw) return { values, error };
  for (const [k, v] of new URLSearchParams(raw)) {
    if (!allowed.includes(k)) error ??= invalidField(`query.${k}`, `is not a known parameter; ingest takes ${allowed.join(', ')}`);
    else if (k in values) error ??= invalidField(`query.${k}`, 'is given more than once; send it once');
    else values[k] = v;
  }
  return { values, error };
}

/**
 * Read a body of at most `limit` bytes with one copy: into a buffer sized from Content-Length when
 * known, else collected in chunks. Over the limit: `payload_too_large`, and the rest is ignored.
 */
export function readBody(res: HttpResponse, state: ResponseState, declared: number, limit: number, done: (err: ApiError | null, body: Buffer) => void): void {
  let size = 0;
  let failed = false;
  const fixed = declared > 0 ? Buffer.allocUnsafe(declared) : null;
  const chunks: Buffer[] = [];
  res.onData((chunk, isLast) => {
    if (failed || state.aborted) return;
    const n = chunk.byteLength;
    if (size + n > limit || (fixed && size + n > fixed.length)) {
      failed = true;
      done(size + n > limit ? tooLarge(limit) : new ApiError('request_validation_failed', 'The body is longer than its Content-Length'), Buffer.alloc(0));
      return;
    }
    // uWS neuters the chunk after this callback returns: copy it now.
    if (n > 0) {
      if (fixed) fixed.set(new Uint8Array(chunk), size);
      else chunks.push(Buffer.from(new Uint8Array(chunk)));
    }
    size += n;
    if (isLast) done(null, fixed ? fixed.subarray(0, size) : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  });
}

/** Undo `Content-Encoding` (gzip, deflate, identity) without producing more than `limit` bytes. */
export function decode(encoding: string, body: Buffer, limit: number): Promise<Buffer> {
  if (encoding === '' || encoding === 'identity') return Promise.resolve(body);
  const fn = encoding === 'gzip' || encoding === 'x-gzip' ? gunzip : encoding === 'deflate' ? inflate : null;
  if (!fn) return Promise.reject(new ApiError('unsupported_media_type', `Content-Encoding "${encoding}" is not supported; send gzip, deflate or none`));
  return new Promise((resolve, reject) => {
    fn(body, { maxOutputLength: limit }, (err, out) => {
      if (!err) resolve(out);
      else if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) reject(tooLarge(limit, 'decompressed '));
      else reject(new ApiError('frame_invalid', `The body is not valid ${encoding} data: ${err.message}`, { details: { reason: 'bad_encoding' } }));
    });
  });
}

/** A body that is gzip data (WebSocket frames have no Content-Encoding: the magic bytes tell). */
export function isGzip(body: Buffer): boolean {
  return body.length > 2 && body[0] === 0x1f && body[1] === 0x8b;
}

export function tooLarge(limit: number, what = ''): ApiError {
  return new ApiError('payload_too_large', `The ${what}body is larger than the ingest limit of ${limit} bytes`, { details: { limit_bytes: limit } });
}

/** Write a response with the CORS headers (corked; uWS needs that outside its own callbacks). */
export function send(res: HttpResponse, state: ResponseState, status: number, json: string, headers: Record<string, string> = {}, close = false): void {
  if (state.aborted || state.done) return;
  state.done = true;
  res.cork(() => {
    res.writeStatus(STATUS_LINES[status] ?? `${status} ${STATUS_CODES[status] ?? ''}`);
    res.writeHeader('content-type', 'application/json; charset=utf-8');
    res.writeHeader(ALLOW_ORIGIN, '*');
    let extra = false;
    for (const k in headers) {
      res.writeHeader(k, headers[k]!);
      extra = true;
    }
    if (extra) res.writeHeader(EXPOSE[0], EXPOSE[1]);
    res.end(json, close);
  });
}

const STATUS_LINES: Record<number, string> = { 202: '202 Accepted' };

export function sendError(res: HttpResponse, state: ResponseState, err: ApiError, close = false): void {
  send(res, state, err.status, JSON.stringify(errorEnvelope(INGEST_ENDPOINT, err)), err.headers, close);
}

/** The 202 envelope, built without a generic JSON.stringify on the hot path. */
export function acceptedJson(accepted: number): string {
  return `{"message":"Accepted","data":{"accepted":${accepted}},"status":202,"error":null,"pagination":null,"endpoint":"${INGEST_ENDPOINT}"}`;
}
