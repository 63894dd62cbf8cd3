import { appendFileSync } from 'node:fs';

/** TEMPORARY instrumentation (SLUICE_LAG_TRACE=<file>): one JSON line per event, epoch ms. */
const file = process.env.SLUICE_LAG_TRACE;
let buf: string[] = [];
export function trace(ev: string, data: Record<string, unknown>): void {
  if (!file) return;
  buf.push(JSON.stringify({ ev, t: Date.now(), ...data }));
  if (buf.length >= 200) flushTrace();
}
export function flushTrace(): void {
  if (!file || buf.length === 0) return;
  appendFileSync(file, buf.join('\n') + '\n');
  buf = [];
}
if (file) setInterval(flushTrace, 1000).unref();
