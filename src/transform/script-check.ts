import { execFile, spawnSync } from 'node:child_process';
import { TransformIsolate } from './isolate.js';
import { SANDBOX_CHILD_PATH } from './sandbox-process.js';
import type { ChildCheck } from './sandbox-child.js';

/**
 * Checks a view transform script at view create/update, so a bad script is answered with a 400
 * naming the compiler's message, line and column instead of failing later in the pipeline.
 *
 * Two steps: the script is compiled here (a syntax error comes back at once; compiling runs none
 * of its code), then a child process (sandbox-child.ts `--check`) runs its top-level code in a
 * fresh isolate with the harness the pipeline uses and looks for a function named `transform`.
 * The child, because some top-level code aborts V8 outright (see sandbox-process.ts) and here that
 * would be the API server. It costs a process start (~90 ms) per check: `checkScript` blocks the
 * thread for it, `checkScriptAsync` does not.
 */

/** Longest script accepted, in UTF-16 code units (JS string length). */
export const MAX_SCRIPT_CHARS = 65_536;
/** Time the script's top-level code may take. */
export const CHECK_TIMEOUT_MS = 100;
/** Heap of the checking isolate. */
export const CHECK_MEMORY_LIMIT_MB = 32;
/** Time the checking process may take in all (start-up included) before it is killed. */
const CHILD_LIMIT_MS = 10_000;

export type ScriptCheck = ChildCheck;

let compiler: TransformIsolate | null = null;

/** `line`/`column` are 1-based, set when the engine named a place in the script. */
export function checkScript(script: string): ScriptCheck {
  const early = precheck(script);
  if (early !== null) return early;
  const r = spawnSync(process.execPath, childArgs(), {
    input: script,
    encoding: 'utf8',
    timeout: CHILD_LIMIT_MS,
    maxBuffer: 1 << 20,
  });
  if (r.error !== undefined && (r.error as NodeJS.ErrnoException).code !== 'ETIMEDOUT')
    throw new Error(`checking the script: ${r.error.message}`, { cause: r.error });
  return readChild(r.signal, r.status, r.stdout);
}

/** `checkScript` without blocking the thread while the checking process runs. */
export function checkScriptAsync(script: string): Promise<ScriptCheck> {
  const early = precheck(script);
  if (early !== null) return Promise.resolve(early);
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      childArgs(),
      { encoding: 'utf8', timeout: CHILD_LIMIT_MS, maxBuffer: 1 << 20 },
      (err, stdout) => {
        if (err !== null && child.signalCode === null && child.exitCode === null) {
          reject(new Error(`checking the script: ${err.message}`, { cause: err }));
          return;
        }
        resolve(readChild(child.signalCode, child.exitCode, stdout));
      },
    );
    child.stdin!.end(script);
  });
}

function childArgs(): string[] {
  return [SANDBOX_CHILD_PATH, '--check', String(CHECK_TIMEOUT_MS), String(CHECK_MEMORY_LIMIT_MB)];
}

/** Length, blank, syntax: answered without a process. */
function precheck(script: string): ScriptCheck | null {
  if (script.length > MAX_SCRIPT_CHARS) {
    return refuse(
      `the script is ${script.length.toLocaleString('en-US')} characters long; the limit is ${MAX_SCRIPT_CHARS.toLocaleString('en-US')}`,
    );
  }
  if (script.trim() === '') return refuse('the script is empty; define function transform(record, ctx) { … }');
  if (compiler === null || compiler.disposed) compiler = new TransformIsolate(CHECK_MEMORY_LIMIT_MB);
  const syntax = compiler.checkSyntax(script);
  return syntax === null ? null : { ok: false, message: syntax.message, line: syntax.line, column: syntax.column };
}

function readChild(signal: NodeJS.Signals | null, status: number | null, stdout: string): ScriptCheck {
  if (signal !== null) {
    // Killed at the time limit, or aborted by V8: either way the script's top-level code did it.
    return refuse(
      signal === 'SIGTERM' || signal === 'SIGKILL'
        ? `checking the script did not finish within ${CHILD_LIMIT_MS} ms`
        : `the script's top-level code crashed the checking process (${signal}): V8 could not allocate memory for it (e.g. one huge array or string)`,
    );
  }
  if (status !== 0) throw new Error(`checking the script: the checking process exited with code ${status}`);
  try {
    return JSON.parse(stdout) as ScriptCheck;
  } catch (err) {
    throw new Error('checking the script: the checking process answered no result', { cause: err });
  }
}

function refuse(message: string): ScriptCheck {
  return { ok: false, message, line: null, column: null };
}
