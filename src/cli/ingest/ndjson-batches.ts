import { isUtf8 } from 'node:buffer';
import { checkNdjson } from '../../ingest/ndjson-check.js';
import type { Batch, BatchLimits, BatchRecord } from './batches.js';
import { MAX_RECORD_BYTES } from './input-record.js';
import { recordRefusal } from './record-check.js';
import type { Refusal } from './sender.js';

/**
 * A record of an NDJSON batch: its place in the batch's body; its text is decoded only when asked
 * for (a batch the server refuses a line of is rebuilt from its records' texts).
 */
class LineRecord implements BatchRecord {
  constructor(
    private readonly body: Buffer,
    private readonly start: number,
    private readonly end: number,
    readonly line: number,
  ) {}

  get text(): string {
    return this.body.toString('utf8', this.start, this.end);
  }
}

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
 * copied into each batch's body as bytes — no string per record, no re-encoding — and a batch is
 * checked whole by the ingest front's own grammar check (ingest/ndjson-check.ts: what it accepts,
 * the server accepts). Only a batch it is not sure of is checked line by line with JSON.parse
 * (record-check.ts), and the lines that would be refused are reported and left out.
 *
 * The same input as `ndjsonRecords` → `checked` → `batchesOf` gives: line numbers counting blank
 * lines, a CR before the LF and a BOM on line 1 dropped, blank lines skipped, a line longer than
 * the server's limit refused. Batches hold at most `limits.records` records and `limits.bytes`
 * bytes of body (one larger record goes alone); their boundaries depend only on the input and the
 * limits, so `--resume` rebuilds the same batches (and idempotency keys). A batch left with no
 * record after the check is not yielded and takes no index.
 */
export async function* ndjsonBatches(
  chunks: AsyncIterable<Buffer>,
  limits: BatchLimits,
  opts: { check: boolean; refused: (r: Refusal) => void },
): AsyncGenerator<Batch> {
  let index = 0;
  let line = 0;
  /** Input bytes up to the end of the last complete line. */
  let offset = 0;
  /** Scratch: the batch being filled (copied out by `seal`). */
  let body = Buffer.allocUnsafe(Math.min(limits.bytes, 64 * 1024 * 1024) + 1);
  let used = 0;
  let spans: number[] = [];
  let lines: number[] = [];
  let endOffset = 0;
  const ready: Batch[] = [];

  const seal = () => {
    if (lines.length === 0) return;
    // Copied out at its size: the scratch buffer is reused, and a batch in flight or read ahead
    // holds only its own bytes (peak memory stays near concurrency × batch bytes).
    let buf = Buffer.allocUnsafeSlow(used);
    body.copy(buf, 0, 0, used);
    let records: LineRecord[] = [];
    for (let k = 0; k < lines.length; k++)
      records.push(new LineRecord(buf, spans[2 * k]!, spans[2 * k + 1]!, lines[k]!));
    // Bytes that are not UTF-8 are sent as their decoded text (U+FFFD for each bad sequence), as
    // the record-by-record reader does: the server refuses a body that is not UTF-8 as a whole.
    const utf8 = isUtf8(buf);
    if (!utf8 || (opts.check && checkNdjson(buf) !== records.length)) {
      // Not sure: each line as the server would read it; the ones it would refuse are left out.
      const good = opts.check
        ? records.filter((r) => {
            const why = recordRefusal(r.text);
            if (why) opts.refused({ line: r.line, reason: why });
            return !why;
          })
        : records;
      if (!utf8 || good.length !== records.length) {
        const texts = good.map((r) => r.text);
        buf = Buffer.from(texts.length ? `${texts.join('\n')}\n` : '');
        records = [];
        let at = 0;
        for (let k = 0; k < good.length; k++) {
          const len = Buffer.byteLength(texts[k]!);
          records.push(new LineRecord(buf, at, at + len, good[k]!.line));
          at += len + 1;
        }
      }
    }
    if (records.length > 0) ready.push({ index: index++, records, offset: endOffset, body: buf });
    used = 0;
    spans = [];
    lines = [];
  };

  const add = (b: Buffer, s: number, e: number, n: number, end: number) => {
    const len = e - s;
    if (lines.length > 0 && used + len + 1 > limits.bytes) seal();
    if (used + len + 1 > body.length) {
      const bigger = Buffer.allocUnsafe(Math.max(body.length * 2, used + len + 1));
      body.copy(bigger, 0, 0, used);
      body = bigger;
    }
    b.copy(body, used, s, e);
    spans.push(used, used + len);
    body[used + len] = LF;
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
    if (e > s && b[e - 1] === CR) e--;
    if (line === 1 && e - s >= 3 && b[s] === 0xef && b[s + 1] === 0xbb && b[s + 2] === 0xbf) s += 3;
    if (blank(b, s, e)) return;
    add(b, s, e, line, end);
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
