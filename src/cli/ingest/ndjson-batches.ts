import type { Batch, BatchLimits } from './batches.js';
import { BodyBuffers } from './body-buffers.js';
import { MAX_RECORD_BYTES } from './input-record.js';
import { LineRecord } from './line-record.js';
import type { Refusal } from './sender.js';

const CR = 0x0d;
const LF = 0x0a;

/** Only JSON whitespace (space, tab, CR) between `s` and `e`. */
function blank(b: Buffer, s: number, e: number): boolean {
  for (let i = s; i < e; i++) {
    const c = b[i]!;
    if (c !== 0x20 && c !== 0x09 && c !== CR) return false;
  }
  return true;
}

/**
 * NDJSON bytes straight into batches, the CLI's fast path (`sluice ingest` of NDJSON): lines are
 * copied into each batch's body as bytes — no string per record, no re-encoding, no parse. The
 * server checks every body anyway; when it refuses a line of one, the sender checks that batch line
 * by line (sender.ts), so a file without bad records costs the CLI a copy and nothing more.
 *
 * The same records with the same line numbers as `ndjsonRecords` → `batchesOf` gives: line numbers
 * counting blank lines, a CR before the LF and a BOM on line 1 dropped, blank lines skipped, a line
 * longer than the server's limit refused (`opts.refused`). Batches hold at most `limits.records`
 * records and `limits.bytes` bytes of body (one larger record goes alone); their boundaries depend
 * only on the input and the limits, so `--resume` rebuilds the same batches (and idempotency keys).
 *
 * Memory: bodies are filled in place in buffers of `limits.bytes` that come back through each
 * batch's `release` (call it once nothing reads the batch any more), so a long run makes no garbage
 * of its bodies; the chunks of `chunks` are copied from and may be reused by their producer.
 */
export async function* ndjsonBatches(
  chunks: AsyncIterable<Buffer>,
  limits: BatchLimits,
  opts: { refused: (r: Refusal) => void },
): AsyncGenerator<Batch> {
  let index = 0;
  let line = 0;
  /** Input bytes up to the end of the last complete line. */
  let offset = 0;
  const buffers = new BodyBuffers(Math.min(limits.bytes, 64 * 1024 * 1024) + 1);
  /** The batch being filled: handed over whole by `seal`. */
  let body = buffers.take();
  let used = 0;
  let spans: number[] = [];
  let lines: number[] = [];
  let endOffset = 0;
  const ready: Batch[] = [];
  // Lines that follow each other in a chunk are copied into the body in one go (one copy per run
  // instead of one per line): the run is `runSrc[runFrom, runTo)`, LFs included, going to `runAt`.
  let runSrc: Buffer | null = null;
  let runFrom = 0;
  let runTo = 0;
  let runAt = 0;
  /** Copy the pending run: before the body is handed over or grown, and before its chunk may be reused. */
  const flush = () => {
    if (runSrc === null) return;
    runSrc.copy(body, runAt, runFrom, runTo);
    runSrc = null;
  };

  const seal = () => {
    flush();
    if (lines.length === 0) return;
    const buf = body.subarray(0, used);
    const records: LineRecord[] = [];
    for (let k = 0; k < lines.length; k++)
      records.push(new LineRecord(buf, spans[2 * k]!, spans[2 * k + 1]!, lines[k]!));
    const whole = body;
    ready.push({ index: index++, records, offset: endOffset, body: buf, release: () => buffers.give(whole) });
    body = buffers.take();
    used = 0;
    spans = [];
    lines = [];
  };

  /** Add the line `b[s, e)`; `lf`: `b[e]` is its LF, so line and LF can go as they are, in a run. */
  const add = (b: Buffer, s: number, e: number, n: number, end: number, lf: boolean) => {
    const len = e - s;
    if (lines.length > 0 && used + len + 1 > limits.bytes) seal();
    if (used + len + 1 > body.length) {
      // One record larger than a batch (it goes alone): a buffer of its own, not kept afterwards.
      flush();
      const bigger = Buffer.allocUnsafe(used + len + 1);
      body.copy(bigger, 0, 0, used);
      buffers.give(body);
      body = bigger;
    }
    if (lf && runSrc === b && runTo === s) runTo = e + 1;
    else if (lf) {
      flush();
      runSrc = b;
      runFrom = s;
      runTo = e + 1;
      runAt = used;
    } else {
      flush();
      b.copy(body, used, s, e);
      body[used + len] = LF;
    }
    spans.push(used, used + len);
    used += len + 1;
    lines.push(n);
    endOffset = end;
    if (lines.length >= limits.records) seal();
  };

  /** One complete line `b[s, e)` (without its LF), ending at input offset `end`. */
  const lineDone = (b: Buffer, s: number, e: number, tooLong: boolean, end: number) => {
    line++;
    if (tooLong) {
      opts.refused({
        line,
        reason: `the line is longer than ${MAX_RECORD_BYTES} bytes (the server's limit on one record)`,
      });
      return;
    }
    let lf = e < b.length && b[e] === LF;
    if (e > s && b[e - 1] === CR) {
      e--;
      lf = false;
    }
    if (line === 1 && e - s >= 3 && b[s] === 0xef && b[s + 1] === 0xbb && b[s + 2] === 0xbf) s += 3;
    if (blank(b, s, e)) return;
    add(b, s, e, line, end, lf);
  };

  // A line that spans chunks: its pieces (copied: a stream may reuse its chunk) until its LF.
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let tooLong = false;
  for await (const chunk of chunks) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(LF, start);
      if (nl === -1) break;
      offset += nl + 1 - start;
      if (pending.length === 0 && !tooLong) {
        lineDone(chunk, start, nl, nl - start > MAX_RECORD_BYTES, offset);
      } else {
        const whole = tooLong || pendingBytes + (nl - start) > MAX_RECORD_BYTES;
        const joined = whole ? Buffer.alloc(0) : Buffer.concat([...pending, chunk.subarray(start, nl)]);
        lineDone(joined, 0, joined.length, whole, offset);
        pending = [];
        pendingBytes = 0;
        tooLong = false;
      }
      start = nl + 1;
    }
    // The chunk may be overwritten once the next one is asked for.
    flush();
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      offset += rest.length;
      if (!tooLong) {
        if (pendingBytes + rest.length > MAX_RECORD_BYTES) {
          tooLong = true;
          pending = [];
          pendingBytes = 0;
        } else {
          pending.push(Buffer.from(rest));
          pendingBytes += rest.length;
        }
      }
    }
    if (ready.length > 0) yield* ready.splice(0);
  }
  if (pendingBytes > 0 || tooLong) {
    const joined = tooLong ? Buffer.alloc(0) : Buffer.concat(pending);
    lineDone(joined, 0, joined.length, tooLong, offset);
  }
  seal();
  yield* ready.splice(0);
}
