/**
 * Buffers for large ingest bodies, used again once a body is spooled. A nested-record request of
 * ~2 MB read into a new buffer each time was fresh memory to fault in, and V8 counts every such
 * buffer as external memory: at ~100 MB/s of bodies that set off a full GC on the main thread
 * every second or so (docs/benchmarks.md, "bench:e2e"). A buffer comes back only from the one place
 * that knows nothing reads it any more: the HTTP front, once the request is answered — its spool
 * write committed (LMDB holds a put's value until then) or refused.
 *
 * Buffers are kept by size class (powers of two from MIN_CLASS), at most MAX_POOLED_BYTES in all,
 * so a burst of large bodies leaves a bounded amount of memory behind.
 */
export class BodyPool {
  private readonly free = new Map<number, ArrayBuffer[]>();
  /** Buffers this pool handed out and not had back (only those are taken back). */
  private readonly out = new WeakSet<ArrayBuffer>();
  private pooledBytes = 0;

  constructor(private readonly maxPooledBytes = MAX_POOLED_BYTES) {}

  /** An uninitialised buffer of `size` bytes (a view of a pooled or new buffer of its size class). */
  take(size: number): Buffer {
    const cls = classOf(size);
    if (cls === 0) return Buffer.allocUnsafeSlow(size);
    const ab = this.free.get(cls)?.pop();
    if (ab) this.pooledBytes -= cls;
    const buffer = ab ?? Buffer.allocUnsafeSlow(cls).buffer;
    this.out.add(buffer);
    return Buffer.from(buffer, 0, size);
  }

  /**
   * `body` (a view of a buffer from `take`) is no longer read or written by anyone: keep its
   * buffer for a later `take`. Anything else, or a buffer given back twice, is left alone.
   */
  give(body: Uint8Array): void {
    const ab = body.buffer as ArrayBuffer;
    if (!this.out.has(ab)) return;
    this.out.delete(ab);
    const cls = ab.byteLength;
    if (this.pooledBytes + cls > this.maxPooledBytes) return;
    let list = this.free.get(cls);
    if (!list) this.free.set(cls, (list = []));
    list.push(ab);
    this.pooledBytes += cls;
  }

  /** Bytes kept for reuse now (tests). */
  pooled(): number {
    return this.pooledBytes;
  }
}

/** Smallest size class: smaller bodies are read into buffers of their own (transport.ts). */
const MIN_CLASS = 64 * 1024;
/** Largest size class; a larger body gets a buffer of its own. */
const MAX_CLASS = 32 * 1024 * 1024;
/** Bytes kept for reuse at most. */
export const MAX_POOLED_BYTES = 32 * 1024 * 1024;

/** The size class of a body of `size` bytes, 0 when it is not pooled. */
function classOf(size: number): number {
  if (size > MAX_CLASS) return 0;
  let cls = MIN_CLASS;
  while (cls < size) cls *= 2;
  return cls;
}
