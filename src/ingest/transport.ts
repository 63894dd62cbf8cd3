import { gunzip, inflate } from 'node:zlib';
import { STATUS_CODES } from 'node:http';
import type { HttpResponse } from 'uws-pack';
import { ApiError, invalidField } from '../errors.js';
import { errorEnvelope } from '../http/envelope.js';
import { BodyDrain, DRAIN_MAX_BYTES } from '../http/body-drain.js';
import type { BodyPool } from './body-pool.js';

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
  /** Called when the client goes away (`readBody` frees the bytes it counted). */
  onAbort?: (() => void) | undefined;
}

/** Counts the bytes of bodies being read against the in-memory cap (the ingest gate). */
export interface BodyBudget {
  /** Count `bytes` more; false (nothing counted) when that would pass the cap. */
  tryHold(bytes: number): boolean;
  release(bytes: number): void;
}

export interface ReadBodyOptions {
  budget: BodyBudget;
  /** Refusal when the budget is exhausted (503 + Retry-After). */
  full: () => ApiError;
  /** The whole body must arrive within this many ms of the call. */
  timeoutMs: number;
  /**
   * Where a large declared body's buffer comes from (body-pool.ts); the caller gives it back once
   * the body is spooled or refused. Absent: a new buffer each time.
   */
  pool?: BodyPool | undefined;
}

/**
 * Parse the query string. Names outside `allowed`, or given twice, make `error` (reported after
 * authentication so the refusal is attributed to the key's project).
 */
export function parseQuery(
  raw: string,
  allowed: readonly string[],
): { values: Record<string, string>; error: ApiError | null } {
  const values: Record<string, string> = {};
  let error: ApiError | null = null;
  if (!raw) return { values, error };
  const add = (k: string, v: string) => {
    if (!allowed.includes(k))
      error ??= invalidField(`query.${k}`, `is not a known parameter; ingest takes ${allowed.join(', ')}`);
    else if (k in values) error ??= invalidField(`query.${k}`, 'is given more than once; send it once');
    else values[k] = v;
  };
  // Nothing to decode (the usual `key=…&collection=…`): split by hand, URLSearchParams costs more per request.
  if (raw.indexOf('%') === -1 && raw.indexOf('+') === -1) {
    let start = 0;
    while (start <= raw.length) {
      let end = raw.indexOf('&', start);
      if (end === -1) end = raw.length;
      if (end > start) {
        const eq = raw.indexOf('=', start);
        if (eq === -1 || eq > end) add(raw.slice(start, end), '');
        else add(raw.slice(start, eq), raw.slice(eq + 1, end));
      }
      start = end + 1;
    }
    return { values, error };
  }
  for (const [k, v] of new URLSearchParams(raw)) add(k, v);
  return { values, error };
}

/**
 * Read a body of at most `limit` bytes: into a buffer sized from Content-Length when it is small,
 * else collected in chunks. Over the limit: `payload_too_large`, reported once the rest of the body
 * was read and thrown away (`BodyDrain`: so that the client can read the answer), within the same
 * time limit and at most DRAIN_MAX_BYTES in all; the caller answers and closes the connection.
 *
 * Memory is counted from the start: a small declared length at once (it is allocated now), other
 * bytes as they arrive; past the budget the read fails with `opts.full()`. A body not complete
 * within `opts.timeoutMs` fails too (the caller answers and closes the connection). On success
 * `done` gets `release`, which the caller calls once it no longer needs the raw bytes counted; on
 * failure or abort they are released here.
 */
export function readBody(
  res: HttpResponse,
  state: ResponseState,
  declared: number,
  limit: number,
  done: (err: ApiError | null, body: Buffer, release: () => void) => void,
  opts: ReadBodyOptions,
): void {
  let size = 0;
  let failed = false;
  let finished = false;
  let held = 0;
  const chunks: Buffer[] = [];
  /** The whole body's buffer when its length is declared (see below), else null: `chunks`. */
  let fixed: Buffer | null = null;
  /** Small enough to be held (counted) for its declared length at once. */
  const fixedSize = declared > 0 && declared <= FIXED_BODY_MAX;
  const release = () => {
    if (held > 0) opts.budget.release(held);
    held = 0;
  };
  const watch: ReadWatch = {
    deadline: Date.now() + opts.timeoutMs,
    expire: () => fail(bodyTimeout(opts.timeoutMs)),
    prev: null,
    next: null,
    watched: false,
  };
  /** Set while the rest of a refused body is read; `refusal` is reported when it ends. */
  let drain: BodyDrain | null = null;
  let refusal: ApiError | null = null;
  /** `drainRest`: the client is still sending; read the rest before reporting `err` (see body-drain.ts). */
  const fail = (err: ApiError, drainRest = false) => {
    failed = true;
    unwatchRead(watch);
    release();
    chunks.length = 0;
    // Nobody else has seen the buffer: it can be used again at once.
    if (fixed && !fixedSize) opts.pool?.give(fixed);
    fixed = null;
    if (!drainRest) return done(err, EMPTY, release);
    refusal = err;
    drain = new BodyDrain(
      size,
      { maxBytes: DRAIN_MAX_BYTES, timeoutMs: Math.max(0, watch.deadline - Date.now()) },
      () => {
        drain = null;
        done(err, EMPTY, release);
      },
    );
  };
  state.onAbort = () => {
    // Gone mid-body: end the request (its in-flight count, its bytes); no answer can be sent.
    if (!failed && !finished)
      fail(new ApiError('request_validation_failed', 'The client closed the connection before sending the whole body'));
    else if (drain && refusal) {
      // Gone while a refused body was being read: report the refusal now (nobody gets the answer).
      drain.cancel();
      drain = null;
      done(refusal, EMPTY, release);
    } else release();
  };
  // A small body is held for its declared length at once (one buffer, one copy); a large one is
  // counted as its bytes arrive, so clients that declare big bodies and then stall cannot take
  // the memory budget from everybody else. A large declared body still goes into one buffer of its
  // length (uninitialised: its pages become memory as the bytes land), not chunks copied again by
  // a concat: each copy of a 2 MB body was ~1 µs per nested record on the main thread, and its
  // garbage more GC there.
  watchRead(watch);
  if (fixedSize) {
    if (opts.budget.tryHold(declared)) {
      held = declared;
      fixed = Buffer.allocUnsafe(declared);
    } else fail(opts.full(), true);
  } else if (declared > 0 && declared <= limit)
    fixed = opts.pool ? opts.pool.take(declared) : Buffer.allocUnsafeSlow(declared);
  res.onData((chunk, isLast) => {
    if (state.aborted) return;
    const n = chunk.byteLength;
    if (failed) {
      drain?.chunk(n, isLast);
      return;
    }
    if (size + n > limit || (declared > 0 && size + n > declared)) {
      size += n;
      if (size > limit) fail(tooLarge(limit), !isLast);
      else fail(new ApiError('request_validation_failed', 'The body is longer than its Content-Length'));
      return;
    }
    if (!fixedSize && n > 0) {
      if (!opts.budget.tryHold(n)) {
        size += n;
        return fail(opts.full(), !isLast);
      }
      held += n;
    }
    // uWS neuters the chunk after this callback returns: copy it now.
    if (n > 0) {
      if (fixed) fixed.set(new Uint8Array(chunk), size);
      else {
        const copy = Buffer.allocUnsafe(n);
        copy.set(new Uint8Array(chunk));
        chunks.push(copy);
      }
    }
    size += n;
    if (isLast) {
      finished = true;
      unwatchRead(watch);
      done(
        null,
        fixed
          ? size === fixed.length
            ? fixed
            : fixed.subarray(0, size)
          : chunks.length === 1
            ? chunks[0]!
            : Buffer.concat(chunks, size),
        release,
      );
    }
  });
}

const EMPTY = Buffer.alloc(0);

/** Bodies up to this declared size are read into one buffer allocated (and counted) up front. */
const FIXED_BODY_MAX = 64 * 1024;

function bodyTimeout(ms: number): ApiError {
  return new ApiError(
    'request_validation_failed',
    `The body did not arrive within ${ms / 1000} s; the connection is closed. Send smaller requests or retry`,
    {
      details: { reason: 'body_timeout', limit_ms: ms },
    },
  );
}

interface ReadWatch {
  deadline: number;
  expire: () => void;
  /** Links of the list of bodies being read (see `reads`). */
  prev: ReadWatch | null;
  next: ReadWatch | null;
  watched: boolean;
}

/**
 * Bodies being read, checked against their deadline by one shared timer (running only while some
 * are): cheaper per request than a timer each. An intrusive doubly linked list rather than a Set:
 * a single-record POST is added and removed at once, and a Set going 0 → 1 → 0 reallocates its
 * table on every request.
 */
let reads: ReadWatch | null = null;
let watchdog: NodeJS.Timeout | null = null;

function watchRead(w: ReadWatch): void {
  w.watched = true;
  w.prev = null;
  w.next = reads;
  if (reads) reads.prev = w;
  reads = w;
  if (watchdog) return;
  watchdog = setInterval(() => {
    const now = Date.now();
    for (let r = reads; r; ) {
      const next = r.next;
      if (now >= r.deadline) {
        unwatchRead(r);
        r.expire();
      }
      r = next;
    }
    if (!reads && watchdog) {
      clearInterval(watchdog);
      watchdog = null;
    }
  }, WATCHDOG_MS);
  watchdog.unref();
}

function unwatchRead(w: ReadWatch): void {
  if (!w.watched) return;
  w.watched = false;
  if (w.prev) w.prev.next = w.next;
  else reads = w.next;
  if (w.next) w.next.prev = w.prev;
  w.prev = null;
  w.next = null;
}

const WATCHDOG_MS = 250;

/** Undo `Content-Encoding` (gzip, deflate, identity) without producing more than `limit` bytes. */
export function decode(encoding: string, body: Buffer, limit: number): Promise<Buffer> {
  if (encoding === '' || encoding === 'identity') return Promise.resolve(body);
  const fn = encoding === 'gzip' || encoding === 'x-gzip' ? gunzip : encoding === 'deflate' ? inflate : null;
  if (!fn)
    return Promise.reject(
      new ApiError(
        'unsupported_media_type',
        `Content-Encoding "${encoding}" is not supported; send gzip, deflate or none`,
      ),
    );
  return new Promise((resolve, reject) => {
    fn(body, { maxOutputLength: limit }, (err, out) => {
      if (!err) resolve(out);
      else if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError)
        reject(tooLarge(limit, 'decompressed '));
      else
        reject(
          new ApiError('frame_invalid', `The body is not valid ${encoding} data: ${err.message}`, {
            details: { reason: 'bad_encoding' },
          }),
        );
    });
  });
}

/** A body that is gzip data (WebSocket frames have no Content-Encoding: the magic bytes tell). */
export function isGzip(body: Buffer): boolean {
  return body.length > 2 && body[0] === 0x1f && body[1] === 0x8b;
}

export function tooLarge(limit: number, what = ''): ApiError {
  return new ApiError('payload_too_large', `The ${what}body is larger than the ingest limit of ${limit} bytes`, {
    details: { limit_bytes: limit },
  });
}

/** Write a response with the CORS headers (corked; uWS needs that outside its own callbacks). */
export function send(
  res: HttpResponse,
  state: ResponseState,
  status: number,
  json: string,
  headers?: Record<string, string>,
  close = false,
): void {
  if (state.aborted || state.done) return;
  state.done = true;
  res.cork(() => {
    res.writeStatus(STATUS_LINES[status] ?? `${status} ${STATUS_CODES[status] ?? ''}`);
    res.writeHeader('content-type', 'application/json; charset=utf-8');
    res.writeHeader(ALLOW_ORIGIN, '*');
    if (headers) {
      let extra = false;
      for (const k in headers) {
        res.writeHeader(k, headers[k]!);
        extra = true;
      }
      if (extra) res.writeHeader(EXPOSE[0], EXPOSE[1]);
    }
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

/**
 * The bytes of a 202 answer, encoded once: uWS copies Buffers as they are instead of converting a
 * JS string per call. The single-record answer is the common one and kept whole.
 */
const B = {
  status: Buffer.from('202 Accepted'),
  contentType: Buffer.from('content-type'),
  json: Buffer.from('application/json; charset=utf-8'),
  allowOrigin: Buffer.from(ALLOW_ORIGIN),
  star: Buffer.from('*'),
  one: Buffer.from(acceptedJson(1)),
};

/** Write `202 { accepted }` (with `Idempotent-Replayed: true` for a replayed result). */
export function sendAccepted(res: HttpResponse, state: ResponseState, accepted: number, replayed: boolean): void {
  if (replayed) return send(res, state, 202, acceptedJson(accepted), REPLAYED);
  if (state.aborted || state.done) return;
  state.done = true;
  // One function for every answer instead of a closure per answer (cork runs it at once).
  corked = res;
  corkedAccepted = accepted;
  res.cork(writeAccepted);
}

let corked: HttpResponse | null = null;
let corkedAccepted = 0;

function writeAccepted(): void {
  const res = corked!;
  const accepted = corkedAccepted;
  corked = null;
  res.writeStatus(B.status);
  res.writeHeader(B.contentType, B.json);
  res.writeHeader(B.allowOrigin, B.star);
  res.end(accepted === 1 ? B.one : acceptedJson(accepted));
}

const REPLAYED: Readonly<Record<string, string>> = Object.freeze({ 'idempotent-replayed': 'true' });
