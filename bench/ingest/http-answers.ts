import type { Socket } from 'node:net';

/**
 * Call `onAnswer(status, body)` for each HTTP/1.1 response arriving on `socket` (Content-Length
 * framed, as uWS answers): the benches' load generators write raw requests and read answers here,
 * so they measure the server, not an HTTP client.
 */
export function onAnswers(socket: Socket, onAnswer: (status: number, body: Buffer) => void): void {
  let buf: Buffer = Buffer.alloc(0);
  socket.on('data', (d: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    for (;;) {
      const headEnd = buf.indexOf('\r\n\r\n');
      if (headEnd === -1) return;
      const head = buf.subarray(0, headEnd).toString('latin1');
      const m = /content-length: *(\d+)/i.exec(head);
      const len = m ? Number(m[1]) : 0;
      if (buf.length < headEnd + 4 + len) return;
      const body = buf.subarray(headEnd + 4, headEnd + 4 + len);
      buf = buf.subarray(headEnd + 4 + len);
      onAnswer(Number(head.slice(9, 12)), body);
    }
  });
}
