import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The compiled entry point, found relative to this compiled helper (works from dist/ or any outDir). */
export const MAIN_JS = fileURLToPath(new URL('../../src/main.js', import.meta.url));

export interface ChildServer {
  proc: ChildProcess;
  url: string;
  stdout: () => string;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
}

/**
 * Start `node main.js` as a separate process (for signal and crash tests) and wait until it listens.
 * `execArgv` are node options (e.g. `--cpu-prof`, which NODE_OPTIONS does not take); `mainJs` another
 * build's entry point (benchmarks compare builds); `ipc` opens an IPC channel to it.
 */
export async function startChild(
  env: Record<string, string>,
  timeoutMs = 20_000,
  execArgv: readonly string[] = [],
  mainJs = MAIN_JS,
  ipc = false,
): Promise<ChildServer> {
  const proc = spawn(process.execPath, [...execArgv, mainJs], {
    env: { ...process.env, SLUICE_HOST: '127.0.0.1', SLUICE_PORT: '0', SLUICE_LOG_LEVEL: 'warn', ...env },
    // An IPC channel (benchmarks): the server answers questions about its pipeline there (main.ts).
    stdio: ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | string>((resolve) =>
    proc.on('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(
      () => reject(new Error(`child did not start in ${timeoutMs} ms: ${out}${err}`)),
      timeoutMs,
    );
    const check = () => {
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearTimeout(deadline);
        resolve(m[1]!);
      }
    };
    proc.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(deadline);
      reject(new Error(`child exited (${code}) before listening: ${out}${err}`));
    });
  });
  return { proc, url, stdout: () => out, exited };
}

/** Call a child server's API with `key`; returns `data`, throws on a non-2xx answer. */
export async function childApi(base: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/**
 * Wait (bounded) until the child's pipeline has no pending records, then stop it with SIGTERM and
 * check it exits 0. `live` reads `GET /v1/projects/:id/pipeline/live`.
 */
export async function drainAndStop(
  child: ChildServer,
  live: () => Promise<{ pending_records: number }>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = await live();
    if (now.pending_records === 0) break;
    if (Date.now() > deadline) throw new Error(`pipeline did not drain: ${JSON.stringify(now)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  child.proc.kill('SIGTERM');
  if ((await child.exited) !== 0) throw new Error('the server did not exit cleanly on SIGTERM');
}
