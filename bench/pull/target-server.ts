/**
 * The local HTTPS endpoint of schedule-load.bench.ts, in a process of its own (forked with an IPC
 * channel): an arrival is stamped when this process reads the request, not when the bench's own
 * event loop — busy sending the ingest load beside the jobs — gets to it. Checks (`/c/…`) get
 * `ok`; pulls (`/p/…`) five JSON records. Messages: it sends `{ port }` once listening; it answers
 * `'arrivals'` with `{ arrivals: [path, epoch ms[]][] }`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

// The parent's test CA signed this certificate (the Sluice child trusts that CA).
const site = https.createServer(
  { cert: process.env.BENCH_TARGET_CERT!, key: process.env.BENCH_TARGET_KEY!, keepAlive: true },
  handle,
);
const arrivals = new Map<string, number[]>();
function handle(req: IncomingMessage, res: ServerResponse) {
  const at = Date.now();
  const path = (req.url ?? '/').split('?')[0]!;
  let list = arrivals.get(path);
  if (!list) arrivals.set(path, (list = []));
  list.push(at);
  if (path.startsWith('/p/')) {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(Array.from({ length: 5 }, (_, i) => ({ i, host: `h${i}`, v: Math.random() }))));
  } else res.end('ok');
}
await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
process.on('message', (m) => {
  if (m === 'arrivals') process.send!({ arrivals: [...arrivals] });
});
process.on('disconnect', () => process.exit(0));
process.send!({ port: (site.address() as AddressInfo).port });
