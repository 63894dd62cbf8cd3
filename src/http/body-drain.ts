/**
 * Reading the rest of a refused request body before answering, so that the client can read the
 * answer (ingest and the control plane share this).
 *
 * A server that closes a connection while the client is still sending leaves unread bytes behind;
 * the kernel answers them with a reset, and a client still writing — browser and Node `fetch` —
 * fails with EPIPE or ECONNRESET and never sees the refusal (curl, which reads while it writes,
 * usually does). Reading the rest of the body and throwing it away first makes the close a clean
 * FIN after the answer.
 *
 * The answer is sent when the reading ends, not before it: uWS invalidates a response once it has
 * ended, so after answering nothing could bound how long or how much the rest is read, nor close
 * the connection.
 */

/** Most bytes of a refused body read in all (before and after the refusal); past it the connection is closed. */
export const DRAIN_MAX_BYTES = 64 * 1024 * 1024;

/** Longest a refused body is read for on the control plane (ingest keeps its body time limit). */
export const DRAIN_TIMEOUT_MS = 10_000;

export interface DrainBounds {
  /** Stop past this many bytes of the body in all. */
  maxBytes: number;
  /** Stop this many ms after the drain starts. */
  timeoutMs: number;
}

export const DEFAULT_DRAIN_BOUNDS: Readonly<DrainBounds> = Object.freeze({
  maxBytes: DRAIN_MAX_BYTES,
  timeoutMs: DRAIN_TIMEOUT_MS,
});

/**
 * Whether a refusal of a request whose body was not read yet should read it first: there is a body
 * (a Content-Length, or chunked transfer encoding) and its declared length is within the bound.
 * A declared length past the bound is answered at once: that body is more than will be read.
 */
export function shouldDrain(declared: number, chunked: boolean, maxBytes = DRAIN_MAX_BYTES): boolean {
  return (declared > 0 || chunked) && declared <= maxBytes;
}

/**
 * Counts the chunks of a refused body as they arrive and calls `end` once: when the last chunk
 * arrived (the connection is clean), or when the body passed `maxBytes` or did not end within
 * `timeoutMs` (the caller answers and closes either way; in the second case the client may see a
 * reset instead). `cancel` stops without calling `end` (the client went away).
 */
export class BodyDrain {
  private received: number;
  private ended = false;
  private readonly timer: NodeJS.Timeout;

  /** `received`: bytes of the body already read before the refusal. */
  constructor(
    received: number,
    private readonly bounds: DrainBounds,
    private readonly end: () => void,
  ) {
    this.received = received;
    this.timer = setTimeout(() => this.finish(), bounds.timeoutMs);
    this.timer.unref();
  }

  /** One more chunk of the body (its bytes are not kept). */
  chunk(bytes: number, isLast: boolean): void {
    if (this.ended) return;
    this.received += bytes;
    if (isLast || this.received > this.bounds.maxBytes) this.finish();
  }

  cancel(): void {
    this.ended = true;
    clearTimeout(this.timer);
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    this.end();
  }
}
