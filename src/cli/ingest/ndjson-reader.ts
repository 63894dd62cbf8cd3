import { MAX_RECORD_BYTES, type InputRecord } from './input-record.js';

/**
 * NDJSON lines of a byte stream with their line numbers (blank lines counted, as the server counts
 * them). Memory stays bounded: a line longer than the server's limit is not kept, only refused.
 */
export async function* ndjsonRecords(chunks: AsyncIterable<Buffer>): AsyncGenerator<InputRecord> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let tooLong = false;
  let line = 0;
  let offset = 0;
  const finish = (tail: Buffer | null): InputRecord | null => {
    line++;
    if (tooLong) {
      tooLong = false;
      pending = [];
      pendingBytes = 0;
      return {
        text: '',
        line,
        offset,
        refusal: `the line is longer than ${MAX_RECORD_BYTES} bytes (the server's limit on one record)`,
      };
    }
    const buf = pending.length === 0 ? (tail ?? Buffer.alloc(0)) : Buffer.concat(tail ? [...pending, tail] : pending);
    pending = [];
    pendingBytes = 0;
    let text = buf.toString('utf8');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (line === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (text.trim() === '') return null;
    return { text, line, offset };
  };
  for await (const chunk of chunks) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl === -1) break;
      offset += nl + 1 - start;
      const piece = chunk.subarray(start, nl);
      if (!tooLong && pendingBytes + piece.length > MAX_RECORD_BYTES) tooLong = true;
      const rec = finish(tooLong ? null : piece);
      if (rec) yield rec;
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      offset += rest.length;
      if (!tooLong) {
        if (pendingBytes + rest.length > MAX_RECORD_BYTES) tooLong = true;
        // Copied: the stream may reuse its chunk.
        else {
          pending.push(Buffer.from(rest));
          pendingBytes += rest.length;
        }
      }
    }
  }
  if (pendingBytes > 0 || tooLong) {
    const rec = finish(null);
    if (rec) yield rec;
  }
}
