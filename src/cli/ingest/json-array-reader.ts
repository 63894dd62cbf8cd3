import { MAX_RECORD_BYTES, type InputRecord } from './input-record.js';

/**
 * The elements of a top-level JSON array, streamed: a byte scanner keeps only the element being read
 * (strings and escapes tracked so brackets and commas inside them are not taken for structure).
 * Each element's line breaks become spaces — a raw line break can only be whitespace between
 * tokens in JSON — so it can be sent as one NDJSON line with its values untouched (no re-encoding:
 * large integers and number spellings stay as written). The scanner checks only structure; the
 * record check parses each element.
 */
export async function* jsonArrayRecords(chunks: AsyncIterable<Buffer>): AsyncGenerator<InputRecord> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let started = false;
  let ended = false;
  let line = 1;
  let offset = 0;
  let elemStartLine = 0;
  let parts: Buffer[] = [];
  let partBytes = 0;
  let tooLong = false;
  let inElement = false;
  let first = true;

  const take = (chunk: Buffer, from: number, to: number) => {
    if (!inElement || to <= from || tooLong) return;
    if (partBytes + (to - from) > MAX_RECORD_BYTES) {
      tooLong = true;
      parts = [];
      return;
    }
    parts.push(Buffer.from(chunk.subarray(from, to)));
    partBytes += to - from;
  };
  const emit = (): InputRecord => {
    const rec: InputRecord = tooLong
      ? {
          text: '',
          line: elemStartLine,
          offset,
          refusal: `the element is longer than ${MAX_RECORD_BYTES} bytes (the server's limit on one record)`,
        }
      : {
          text: Buffer.concat(parts)
            .toString('utf8')
            .replace(/[\r\n]/g, ' ')
            .trim(),
          line: elemStartLine,
          offset,
        };
    parts = [];
    partBytes = 0;
    tooLong = false;
    inElement = false;
    return rec;
  };

  for await (const chunk of chunks) {
    let from = 0;
    const out: InputRecord[] = [];
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (first && i === 0 && c === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) {
        i = 2;
        from = 3;
        continue;
      }
      if (c === 0x0a) line++;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) inString = false;
        continue;
      }
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
      if (ended) throw new Error(`line ${line}: content after the end of the top-level array`);
      if (!started) {
        if (c !== 0x5b) throw new Error(`line ${line}: a JSON array input must start with "["`);
        started = true;
        depth = 1;
        from = i + 1;
        continue;
      }
      if (depth === 1 && !inElement && c !== 0x5d && c !== 0x2c) {
        inElement = true;
        elemStartLine = line;
        from = i;
      }
      if (c === 0x22) inString = true;
      else if (c === 0x5b || c === 0x7b) depth++;
      else if (c === 0x5d || c === 0x7d) {
        depth--;
        if (depth === 0) {
          take(chunk, from, i);
          if (inElement) {
            offset += i + 1;
            out.push(emit());
            offset -= i + 1;
          }
          ended = true;
        }
      } else if (c === 0x2c && depth === 1) {
        if (!inElement) throw new Error(`line ${line}: an empty element (",,") in the array`);
        take(chunk, from, i);
        offset += i + 1;
        out.push(emit());
        offset -= i + 1;
      }
    }
    take(chunk, from, chunk.length);
    offset += chunk.length;
    first = false;
    yield* out;
  }
  if (!started) return;
  if (!ended) throw new Error(`line ${line}: the input ends before the top-level array is closed with "]"`);
}
