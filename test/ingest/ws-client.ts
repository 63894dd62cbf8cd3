import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

/**
 * A minimal RFC 6455 client (Node 20 has no WebSocket without a flag): masked text/binary frames
 * out, text/close/ping frames in. Enough for tests and the ingest benchmark.
 */
export class WsClient {
  /** Text messages received, in order. */
  readonly messages: string[] = [];
  closeCode: number | null = null;
  private buf: Buffer = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  private onMessage: ((text: string) => void) | null = null;

  private constructor(private readonly socket: Socket) {}

  /**
   * Connect to `url` (http://host:port/path?query). Resolves with the client after a 101, or
   * rejects with `{ status, body }` when the server refuses the upgrade.
   */
  static connect(url: string): Promise<WsClient> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(u.port), u.hostname);
      socket.setNoDelay(true);
      let head = Buffer.alloc(0);
      const onData = (d: Buffer) => {
        head = Buffer.concat([head, d]);
        const end = head.indexOf('\r\n\r\n');
        if (end === -1) return;
        const text = head.subarray(0, end).toString('latin1');
        const status = Number(text.split(' ')[1]);
        if (status !== 101) {
          // Collect the refusal body until the server closes.
          let body = head.subarray(end + 4);
          socket.on('data', (more: Buffer) => (body = Buffer.concat([body, more])));
          socket.on('close', () =>
            reject(Object.assign(new Error(`upgrade refused: ${status}`), { status, body: body.toString('utf8') })),
          );
          socket.off('data', onData);
          return;
        }
        socket.off('data', onData);
        const client = new WsClient(socket);
        socket.on('data', (more: Buffer) => client.receive(more));
        // A write to a connection the server closed fails with EPIPE/ECONNRESET: it shows as the close.
        socket.on('error', () => undefined);
        socket.on('close', () => {
          client.closeCode ??= 1006;
          client.wake();
        });
        const rest = head.subarray(end + 4);
        if (rest.length) client.receive(rest);
        resolve(client);
      };
      socket.on('data', onData);
      socket.on('error', reject);
      socket.write(
        `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
  }

  /** Send one message (text unless `binary`). */
  send(data: string | Buffer, binary = typeof data !== 'string'): void {
    const payload = typeof data === 'string' ? Buffer.from(data) : data;
    this.socket.write(frame(binary ? 0x2 : 0x1, payload));
  }

  /** Send a frame built by `zeroMaskFrame` (load generation: no per-byte masking work). */
  sendRaw(wire: Buffer): void {
    this.socket.write(wire);
  }

  /**
   * Stop reading the server's messages (a client that never reads its answers); writes go on.
   */
  pauseReading(): void {
    this.socket.pause();
  }

  /** Write raw bytes; resolves once they are handed to the kernel, or false when the socket died. */
  writeDrained(wire: Buffer): Promise<boolean> {
    if (this.socket.destroyed) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.socket.write(wire, (err) => resolve(!err));
    });
  }

  /** Call `fn` for every text message from now on (instead of waiting with `next`). */
  listen(fn: (text: string) => void): void {
    this.onMessage = fn;
  }

  /** The `n`-th message (0-based), waiting for it up to `timeoutMs`. */
  async message(n: number, timeoutMs = 5000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (this.messages.length <= n) {
      if (this.closeCode !== null) throw new Error(`socket closed (${this.closeCode}) before message ${n}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no message ${n} within ${timeoutMs} ms (have ${this.messages.length})`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
    return this.messages[n]!;
  }

  /** Resolves when the server closed the connection. */
  async closed(timeoutMs = 5000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (this.closeCode === null) {
      if (Date.now() > deadline) throw new Error('not closed');
      await new Promise<void>((r) => {
        const t = setTimeout(r, 50);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
    return this.closeCode;
  }

  close(code = 1000): void {
    const p = Buffer.alloc(2);
    p.writeUInt16BE(code);
    this.socket.write(frame(0x8, p));
    this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const fn of w) fn();
  }

  private receive(data: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, data]) : data;
    for (;;) {
      if (this.buf.length < 2) return;
      const opcode = this.buf[0]! & 0x0f;
      let len = this.buf[1]! & 0x7f;
      let off = 2;
      if (len === 126) {
        if (this.buf.length < 4) return;
        len = this.buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (this.buf.length < 10) return;
        len = Number(this.buf.readBigUInt64BE(2));
        off = 10;
      }
      if (this.buf.length < off + len) return;
      const payload = this.buf.subarray(off, off + len);
      this.buf = this.buf.subarray(off + len);
      if (opcode === 0x1 || opcode === 0x2) {
        const text = payload.toString('utf8');
        if (this.onMessage) this.onMessage(text);
        else this.messages.push(text);
      } else if (opcode === 0x8) {
        this.closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
        this.socket.end();
      } else if (opcode === 0x9) {
        this.socket.write(frame(0xa, Buffer.from(payload)));
      }
      this.wake();
    }
  }
}

/**
 * A client text frame with the all-zero masking key (legal: the client must mask, any key will do),
 * so the payload is copied as is — for load generators sending the same frame many times.
 */
export function zeroMaskFrame(payload: Buffer): Buffer {
  return frame(0x1, payload, true);
}

function frame(opcode: number, payload: Buffer, zeroMask = false): Buffer {
  const len = payload.length;
  const headLen = len < 126 ? 2 : len < 65536 ? 4 : 10;
  const out = Buffer.allocUnsafe(headLen + 4 + len);
  out[0] = 0x80 | opcode;
  if (len < 126) out[1] = 0x80 | len;
  else if (len < 65536) {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(len, 2);
  } else {
    out[1] = 0x80 | 127;
    out.writeBigUInt64BE(BigInt(len), 2);
  }
  const body = headLen + 4;
  if (zeroMask) {
    out.fill(0, headLen, body);
    payload.copy(out, body);
    return out;
  }
  const mask = randomBytes(4);
  mask.copy(out, headLen);
  for (let i = 0; i < len; i++) out[body + i] = payload[i]! ^ mask[i & 3]!;
  return out;
}
