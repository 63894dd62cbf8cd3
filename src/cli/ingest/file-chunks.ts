import { open } from 'node:fs/promises';

/**
 * The bytes of a file in chunks of `size`, read into one buffer that is reused for every chunk: a
 * consumer must be done with a chunk (copy what it keeps) before asking for the next one. Reading a
 * large file this way makes no garbage (a read stream allocates every chunk anew). The file is
 * closed when the iteration ends, early or not.
 */
export async function* fileChunks(path: string, size: number): AsyncGenerator<Buffer> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.allocUnsafeSlow(size);
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, size, null);
      if (bytesRead === 0) return;
      yield buf.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}
