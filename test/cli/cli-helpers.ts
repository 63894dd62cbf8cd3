import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The real `sluice` binary of this checkout (bin/sluice.js → dist/src/cli/main.js). */
export const SLUICE_BIN = fileURLToPath(new URL('../../../bin/sluice.js', import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliEnv {
  /** XDG_CONFIG_HOME of the run: each test gets its own config. */
  configHome: string;
  env: Record<string, string>;
  cleanup(): void;
}

/** A fresh config home; the environment carries no SLUICE_* variable of the parent. */
export function cliEnv(extra: Record<string, string> = {}): CliEnv {
  const configHome = mkdtempSync(join(tmpdir(), 'sluice-cli-'));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('SLUICE_')) env[k] = v;
  return {
    configHome,
    env: { ...env, XDG_CONFIG_HOME: configHome, ...extra },
    cleanup: () => rmSync(configHome, { recursive: true, force: true }),
  };
}

/** Run `sluice <args>` as a child process; `input` is written to its stdin. Bounded by `timeoutMs`. */
export function runCli(
  args: string[],
  opts: { env: Record<string, string>; input?: string; timeoutMs?: number },
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE_BIN, ...args], { env: opts.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}
