import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HttpLoad, LoadResult } from './load.js';

/**
 * HTTP load with wrk (a C load generator: far less CPU per request than a Node client, which
 * matters on a 2-core machine shared with the server under test). Install it with
 * `apt-get install wrk`. The request body comes from a file read by a small Lua script, whose
 * `done()` hook prints the summary and latency percentiles as one JSON line.
 */

/** True when `wrk` is on PATH (checked once). */
export function hasWrk(): boolean {
  hasWrkCache ??= spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
  return hasWrkCache;
}
let hasWrkCache: boolean | undefined;

const SCRIPT = `
local f = assert(io.open(os.getenv("WRK_BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = os.getenv("WRK_CONTENT_TYPE")

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"status_errors":%d,"socket_errors":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
`;

/** wrk's summary of one run. */
export interface WrkResult extends LoadResult {
  /** Connect/read/write/timeout errors (not counted in `failed`, which is non-2xx answers). */
  socketErrors: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * Run wrk for `durationMs` with `connections` keep-alive connections (one request in flight on
 * each) against 127.0.0.1. `threads` defaults to 1 so the server keeps most of the CPU.
 */
export async function wrkLoad(opts: HttpLoad & { threads?: number }): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-wrk-'));
  try {
    const scriptPath = join(dir, 'post.lua');
    const bodyPath = join(dir, 'body');
    writeFileSync(scriptPath, SCRIPT);
    writeFileSync(bodyPath, opts.body);
    const threads = Math.min(opts.threads ?? 1, opts.connections);
    const seconds = Math.max(1, Math.round(opts.durationMs / 1000));
    const args = [
      '-t',
      String(threads),
      '-c',
      String(opts.connections),
      '-d',
      `${seconds}s`,
      '--timeout',
      '10s',
      '-s',
      scriptPath,
      `http://127.0.0.1:${opts.port}${opts.path}`,
    ];
    const out = await new Promise<string>((resolve, reject) => {
      execFile(
        'wrk',
        args,
        {
          env: { ...process.env, WRK_BODY_FILE: bodyPath, WRK_CONTENT_TYPE: opts.contentType },
          timeout: (seconds + 30) * 1000,
          maxBuffer: 1 << 20,
        },
        (err, stdout, stderr) => {
          if (err) reject(new Error(`wrk failed: ${err.message}\n${stderr}`));
          else resolve(stdout);
        },
      );
    });
    const line = out.split('\n').find((l) => l.startsWith('{"requests"'));
    if (!line) throw new Error(`wrk printed no summary:\n${out}`);
    const s = JSON.parse(line) as {
      requests: number;
      duration_us: number;
      status_errors: number;
      socket_errors: number;
      p50_us: number;
      p99_us: number;
    };
    return {
      ok: s.requests - s.status_errors,
      failed: s.status_errors,
      seconds: s.duration_us / 1e6,
      // wrk keeps its own histogram; only the percentiles come back.
      latencies: new Float64Array(0),
      socketErrors: s.socket_errors,
      p50Ms: s.p50_us / 1000,
      p99Ms: s.p99_us / 1000,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
