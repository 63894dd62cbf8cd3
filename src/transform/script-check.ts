// Placeholder: replaced by the sandbox helper's module on merge.
import vm from 'node:vm';

/** Whether a transform script compiles; on a syntax error, the compiler's message and 1-based position. */
export type ScriptCheck = { ok: true } | { ok: false; message: string; line: number | null; column: number | null };

const FILENAME = 'transform.js';

/** Compile `script` without running it and report the first syntax error with its line and column. */
export function checkScript(script: string): ScriptCheck {
  try {
    new vm.Script(script, { filename: FILENAME });
    return { ok: true };
  } catch (err) {
    if (!(err instanceof SyntaxError)) return { ok: false, message: String((err as Error)?.message ?? err), line: null, column: null };
    // V8 puts the position in the stack: "transform.js:LINE\n<source line>\n<spaces>^…".
    const [head, , caret] = (err.stack ?? '').split('\n');
    const m = head ? new RegExp(`^${FILENAME.replace('.', '\\.')}:(\\d+)$`).exec(head) : null;
    const at = caret !== undefined ? caret.indexOf('^') : -1;
    return { ok: false, message: err.message, line: m ? Number(m[1]) : null, column: m && at >= 0 ? at + 1 : null };
  }
}
