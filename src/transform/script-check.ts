import { TransformIsolate } from './isolate.js';

/**
 * Checks a view transform script at view create/update, so a bad script is answered with a 400
 * naming the compiler's message, line and column instead of failing later in the pipeline. The
 * script is compiled and its top-level code run in a fresh context of a small isolate shared by
 * this module (the same engine and harness as the pipeline's sandbox, so what passes here loads
 * there), then it must define a function named `transform`.
 */

/** Longest script accepted, in UTF-16 code units (JS string length). */
export const MAX_SCRIPT_CHARS = 65_536;
/** Time the script's top-level code may take here: it runs on the API thread. */
export const CHECK_TIMEOUT_MS = 100;
/** Heap of the checking isolate. */
export const CHECK_MEMORY_LIMIT_MB = 32;

export type ScriptCheck = { ok: true } | { ok: false; message: string; line: number | null; column: number | null };

let shared: TransformIsolate | null = null;

/** `line`/`column` are 1-based, set when the engine named a place in the script. */
export function checkScript(script: string): ScriptCheck {
  if (script.length > MAX_SCRIPT_CHARS) {
    return refuse(`the script is ${script.length.toLocaleString('en-US')} characters long; the limit is ${MAX_SCRIPT_CHARS.toLocaleString('en-US')}`);
  }
  if (script.trim() === '') return refuse('the script is empty; define function transform(record, ctx) { … }');
  if (shared === null || shared.disposed) shared = new TransformIsolate(CHECK_MEMORY_LIMIT_MB);
  const r = shared.load(script, CHECK_TIMEOUT_MS, 1);
  if (r.status === 'loaded') {
    shared.unload(r);
    return { ok: true };
  }
  return { ok: false, message: r.message, line: r.line, column: r.column };
}

function refuse(message: string): ScriptCheck {
  return { ok: false, message, line: null, column: null };
}
