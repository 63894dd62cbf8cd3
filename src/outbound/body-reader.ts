import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { OutboundError } from './types.js';

/**
 * Read a response body, decoding its `content-encoding` (gzip, br, deflate, identity) while it
 * streams, and stop as soon as the decoded bytes pass `maxBytes` (a decompression bomb is cut
 * there too) or `deadline` (performance.now() value) passes. Throws OutboundError with stage
 * `response`: `too_large`, `decode_failed`, `timeout`; the stream is destroyed on any failure.
 */
export async function readBody(
  body: Readable,
  encoding: string | undefined,
  maxBytes: number,
  deadline: number,
): Promise<Buffer> {
  // Destroying the stream on a failure below may emit once more; nobody else listens by then.
  body.on('error', () => {});
  let decoder: ReturnType<typeof decoderFor>;
  try {
    decoder = decoderFor(encoding);
  } catch (err) {
    body.destroy();
    throw err;
  }
  const chunks: Buffer[] = [];
  let total = 0;
  const take = (chunk: Buffer) => {
    total += chunk.length;
    if (total > maxBytes)
      throw new OutboundError(
        'too_large',
        'response',
        `The response body is larger than ${maxBytes} bytes (decoded); reading stopped there`,
      );
    chunks.push(chunk);
  };

  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new OutboundError('timeout', 'response', 'The response body did not arrive in full before the body timeout'),
        ),
      Math.max(0, deadline - performance.now()),
    );
  });
  timedOut.catch(() => {});
  try {
    const run = decoder ? pipeThrough(body, decoder, take) : readPlain(body, take);
    await Promise.race([run, timedOut]);
    return Buffer.concat(chunks, total);
  } catch (err) {
    body.destroy();
    decoder?.destroy();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

async function readPlain(body: Readable, take: (b: Buffer) => void): Promise<void> {
  for await (const chunk of body) take(chunk as Buffer);
}

function pipeThrough(
  body: Readable,
  decoder: zlib.Gunzip | zlib.BrotliDecompress | zlib.Inflate,
  take: (b: Buffer) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      body.destroy();
      decoder.destroy();
      reject(err);
    };
    decoder.on('data', (chunk: Buffer) => {
      try {
        take(chunk);
      } catch (err) {
        fail(err);
      }
    });
    decoder.once('end', () => {
      if (!failed) resolve();
    });
    decoder.once('error', (err) =>
      fail(new OutboundError('decode_failed', 'response', `The response body could not be decoded: ${err.message}`)),
    );
    body.once('error', (err) => fail(err));
    body.pipe(decoder);
  });
}

function decoderFor(encoding: string | undefined): zlib.Gunzip | zlib.BrotliDecompress | zlib.Inflate | null {
  const e = (encoding ?? '').trim().toLowerCase();
  if (e === '' || e === 'identity') return null;
  if (e === 'gzip' || e === 'x-gzip') return zlib.createGunzip();
  if (e === 'br') return zlib.createBrotliDecompress();
  if (e === 'deflate') return zlib.createInflate();
  throw new OutboundError(
    'decode_failed',
    'response',
    `The response uses content-encoding "${encoding}", which is not supported (gzip, br, deflate)`,
  );
}
