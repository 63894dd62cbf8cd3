import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * POSTs with Node's fetch (undici) from a separate process. A client in the server's own process
 * shares its event loop, which orders reads and writes so that races a real client loses (a server
 * closing while the client is still sending) do not show.
 */
export interface FetchSpec {
  url: string;
  /** `buffer`: a Buffer (Content-Length); `stream`: a ReadableStream of 64 KB chunks (chunked, `duplex: 'half'`). */
  body: 'buffer' | 'stream';
  bytes: number;
  headers?: Record<string, string>;
  /** Sent this many times, one after another. */
  rounds: number;
}

/** One answer: its status, `Connection` header and envelope, or the error fetch failed with. */
export type FetchOutcome = { status: number; connection: string | null; envelope: any } | { error: string };

const SELF = fileURLToPath(import.meta.url);

export function fetchFromChild(spec: FetchSpec): Promise<FetchOutcome[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [SELF, JSON.stringify(spec)], { maxBuffer: 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`fetch client failed: ${err.message} ${stderr}`));
      else resolve(JSON.parse(stdout) as FetchOutcome[]);
    });
  });
}

function streamOf(bytes: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(c) {
      if (sent >= bytes) return c.close();
      const n = Math.min(64 * 1024, bytes - sent);
      sent += n;
      c.enqueue(new Uint8Array(n).fill(0x61));
    },
  });
}

async function main(spec: FetchSpec): Promise<void> {
  const out: FetchOutcome[] = [];
  const buffer = spec.body === 'buffer' ? Buffer.alloc(spec.bytes, 0x61) : null;
  for (let i = 0; i < spec.rounds; i++) {
    const init: RequestInit & { duplex?: 'half' } = { method: 'POST', headers: spec.headers ?? {} };
    if (buffer) init.body = buffer;
    else {
      init.body = streamOf(spec.bytes);
      init.duplex = 'half';
    }
    try {
      const res = await fetch(spec.url, init);
      out.push({ status: res.status, connection: res.headers.get('connection'), envelope: await res.json() });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      out.push({ error: `${(err as Error).message}: ${cause?.code ?? cause?.message ?? ''}` });
    }
  }
  process.stdout.write(JSON.stringify(out));
}

if (process.argv[1] === SELF) await main(JSON.parse(process.argv[2]!) as FetchSpec);
