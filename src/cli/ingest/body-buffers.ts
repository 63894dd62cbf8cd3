/** Free buffers kept at most: more than the batches a run holds at once (in flight + read ahead). */
const MAX_FREE = 256;

/**
 * Reusable buffers of one size for batch bodies. A run of `sluice ingest` fills a body, sends it and
 * gives it back once acknowledged; reusing them keeps the process's memory at the bodies it holds
 * instead of a trail of garbage bodies waiting for a collection (the CLI's peak RSS, bench/cli).
 * A buffer of another size given back is dropped.
 */
export class BodyBuffers {
  private readonly free: Buffer[] = [];

  constructor(readonly size: number) {}

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.size);
  }

  give(buf: Buffer): void {
    if (buf.length === this.size && this.free.length < MAX_FREE && !this.free.includes(buf)) this.free.push(buf);
  }
}
