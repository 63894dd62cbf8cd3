/**
 * The benchmark's bound: bare uWS that JSON.parses every NDJSON line and commits each body as one
 * LMDB value (same durability as Sluice: the 202 waits for commit + flush). HTTP POST and WebSocket
 * frames on /ingest. Run as a child: `node reference-server.js <dir>`; prints `listening <port>`.
 */
import { open } from 'lmdb';
import { App, us_socket_local_port } from 'uws-pack';

const dir = process.argv[2];
if (!dir) throw new Error('usage: reference-server.js <lmdb dir>');
const root = open({ path: dir, noSync: false, maxDbs: 4, mapSize: 64 * 1024 ** 3, pageSize: 8192 });
const db = root.openDB<Uint8Array, number>({ name: 'ref', encoding: 'binary' });
let seq = 1;

function store(body: Buffer): Promise<number> {
  const text = body.toString('utf8');
  let n = 0;
  for (const line of text.split('\n')) {
    if (line.length === 0) continue;
    JSON.parse(line);
    n++;
  }
  const written = db.put(seq++, body);
  const flushed = new Promise((resolve, reject) => root.flushed.then(resolve, reject));
  return Promise.all([written, flushed]).then(() => n);
}

const app = App();
app.post('/ingest', (res) => {
  let aborted = false;
  res.onAborted(() => (aborted = true));
  const chunks: Buffer[] = [];
  res.onData((chunk, isLast) => {
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (!isLast) return;
    store(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).then(
      (n) => {
        if (!aborted) res.cork(() => res.writeStatus('202 Accepted').end(`{"accepted":${n}}`));
      },
      () => {
        if (!aborted) res.cork(() => res.writeStatus('400 Bad Request').end('{"error":"invalid"}'));
      },
    );
  });
});
app.ws<{ seq: number; closed: boolean }>('/ingest', {
  maxPayloadLength: 16 * 1024 * 1024,
  idleTimeout: 120,
  upgrade: (res, req, context) => {
    res.upgrade(
      { seq: 1, closed: false },
      req.getHeader('sec-websocket-key'),
      req.getHeader('sec-websocket-protocol'),
      req.getHeader('sec-websocket-extensions'),
      context,
    );
  },
  message: (ws, message) => {
    const data = ws.getUserData();
    const s = data.seq++;
    const reply = (text: string) => {
      if (!data.closed) ws.cork(() => ws.send(text));
    };
    store(Buffer.from(new Uint8Array(message))).then(
      (n) => reply(`{"seq":${s},"accepted":${n}}`),
      () => reply(`{"seq":${s},"error":{"code":"frame_invalid"}}`),
    );
  },
  close: (ws) => void (ws.getUserData().closed = true),
});
app.listen('127.0.0.1', 0, (socket) => {
  if (!socket) throw new Error('listen failed');
  process.stdout.write(`listening ${us_socket_local_port(socket as never)}\n`);
});
