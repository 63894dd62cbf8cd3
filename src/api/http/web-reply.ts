import { STATUS_CODES } from 'node:http';
import { gzipSync } from 'node:zlib';
import type { HttpResponse } from 'uws-pack';
import type { SseStream, WebBody } from './route.js';
import type { ResponseState } from './uws-transport.js';

/** Smallest body worth compressing on the fly. */
const COMPRESS_MIN_BYTES = 1024;
const COMPRESSIBLE = /^(text\/|application\/(json|javascript)|image\/svg)/;
/** An SSE comment this often keeps proxies from closing an idle stream. */
const SSE_KEEPALIVE_MS = 25_000;

/** Whether the request accepts `encoding` (an Accept-Encoding entry with q > 0). */
export function accepts(headers: Record<string, string>, encoding: 'gzip' | 'br'): boolean {
  const header = headers['accept-encoding'];
  if (!header) return false;
  return header.split(',').some((part) => {
    const [name, ...params] = part.trim().split(';');
    if (name?.trim().toLowerCase() !== encoding) return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/**
 * Send a web route's body (docs/pages.md, "Web replies"): bytes with their content type — text and
 * JSON gzip-compressed on the fly when the client accepts it and it is worth it, precompressed
 * assets as they are — or an SSE stream, registered in `streams` so that a stopping server ends it.
 */
export function sendWeb(
  res: HttpResponse,
  state: ResponseState,
  status: number,
  headers: Record<string, string>,
  web: WebBody,
  request: Record<string, string>,
  streams: Set<SseStream>,
): void {
  if (state.aborted || state.done) return;
  state.done = true;
  if (web.kind === 'sse') {
    openSse(res, state, headers, web.open, streams);
    return;
  }
  let body: Buffer | string = web.body;
  const out: Record<string, string> = { ...headers };
  if (
    !web.encoded &&
    status !== 304 &&
    COMPRESSIBLE.test(web.contentType) &&
    Buffer.byteLength(body) >= COMPRESS_MIN_BYTES &&
    accepts(request, 'gzip')
  ) {
    body = gzipSync(body, { level: 6 });
    out['content-encoding'] = 'gzip';
    out.vary = 'Accept-Encoding';
  }
  res.cork(() => {
    res.writeStatus(`${status} ${STATUS_CODES[status] ?? ''}`);
    if (status !== 304) res.writeHeader('content-type', web.contentType);
    res.writeHeader('x-content-type-options', 'nosniff');
    for (const [k, v] of Object.entries(out)) res.writeHeader(k, v);
    if (status === 304) res.endWithoutBody();
    else res.end(body);
  });
}

function openSse(
  res: HttpResponse,
  state: ResponseState,
  headers: Record<string, string>,
  open: (s: SseStream) => void,
  streams: Set<SseStream>,
): void {
  const closers: Array<() => void> = [];
  let closed = false;
  const finish = (endResponse: boolean) => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    streams.delete(stream);
    if (endResponse && !state.aborted) res.cork(() => res.end());
    for (const fn of closers) fn();
  };
  const write = (text: string): boolean => {
    if (closed || state.aborted) return false;
    res.cork(() => res.write(text));
    return true;
  };
  const stream: SseStream = {
    // Data lines may not hold a line break: each line of the text is its own `data:` line (the spec of SSE joins them back).
    send: (event, data) =>
      write(
        `event: ${event}\n${data
          .split('\n')
          .map((l) => `data: ${l}`)
          .join('\n')}\n\n`,
      ),
    comment: (text) => write(`: ${text.replace(/\n/g, ' ')}\n\n`),
    close: () => finish(true),
    onClose: (fn) => {
      if (closed) fn();
      else closers.push(fn);
    },
  };
  // The transport's abort handler only sets the flag: this one ends the stream's timers too.
  res.onAborted(() => {
    state.aborted = true;
    finish(false);
  });
  const keepAlive = setInterval(() => stream.comment('keep-alive'), SSE_KEEPALIVE_MS);
  keepAlive.unref();
  streams.add(stream);
  res.cork(() => {
    res.writeStatus('200 OK');
    res.writeHeader('content-type', 'text/event-stream; charset=utf-8');
    res.writeHeader('cache-control', 'no-store');
    res.writeHeader('x-accel-buffering', 'no');
    for (const [k, v] of Object.entries(headers)) res.writeHeader(k, v);
    // Tells the browser how long to wait before reconnecting after the stream drops.
    res.write('retry: 5000\n\n');
  });
  open(stream);
}
