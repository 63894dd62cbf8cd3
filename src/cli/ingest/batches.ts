/** A record that goes into a batch: its text (one NDJSON line) and where it came from. */
export interface BatchRecord {
  text: string;
  line: number;
}

/** Records sent in one request under one idempotency key. */
export interface Batch {
  /** 0-based, in file order; with the run id it makes the batch's idempotency key. */
  index: number;
  records: BatchRecord[];
  /** Input bytes read up to the end of the batch's last record (progress, resume). */
  offset: number;
  /** The records' NDJSON body, when the reader built it as bytes (ndjson-batches.ts); else made by `ndjsonBody`. */
  body?: Buffer;
  /** Give the body's memory back to the reader for a later batch: call once nothing reads the batch any more. */
  release?(): void;
}

export interface BatchLimits {
  records: number;
  bytes: number;
}

/**
 * Group records into batches of at most `limits.records` records and about `limits.bytes` bytes.
 * Deterministic for the same input and limits: `--resume` rebuilds the same batches (so the same
 * idempotency keys) and skips the ones already acknowledged.
 */
export async function* batchesOf(
  records: AsyncIterable<BatchRecord & { offset: number }>,
  limits: BatchLimits,
): AsyncGenerator<Batch> {
  let index = 0;
  let current: BatchRecord[] = [];
  let bytes = 0;
  let offset = 0;
  for await (const r of records) {
    if (current.length > 0 && bytes + r.text.length + 1 > limits.bytes) {
      yield { index: index++, records: current, offset };
      current = [];
      bytes = 0;
    }
    current.push({ text: r.text, line: r.line });
    bytes += r.text.length + 1;
    offset = r.offset;
    if (current.length >= limits.records) {
      yield { index: index++, records: current, offset };
      current = [];
      bytes = 0;
    }
  }
  if (current.length > 0) yield { index, records: current, offset };
}

/** The NDJSON body of records. */
export function ndjsonBody(records: BatchRecord[]): string {
  let body = '';
  for (const r of records) body += r.text + '\n';
  return body;
}
