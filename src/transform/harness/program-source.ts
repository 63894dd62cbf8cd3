import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MAX_ERROR_MESSAGE_CHARS, PROGRESS_SERIALIZING, SCRIPT_FILENAME } from '../harness.js';

/**
 * The in-isolate harness program as text, read once when this module loads. The program is a
 * plain JavaScript file (isolate-program.js, beside this module's source) so it is linted and
 * read as code, never kept in a string; tsc does not copy it, so from the compiled module under
 * `dist/` it is read from the source tree.
 */

/** Where the program is: beside this module (run from `src/`), else in the source tree from `dist/src/transform/harness/`. */
const CANDIDATES = [
  new URL('./isolate-program.js', import.meta.url),
  new URL('../../../../src/transform/harness/isolate-program.js', import.meta.url),
];

/**
 * The constants the program writes out, each as the line that declares it: the program cannot
 * import them, so a program out of step with harness.ts stops the server at start, not a batch.
 */
const SHARED = [
  `const LOC = /${SCRIPT_FILENAME.replace('.', '\\.')}:(\\d+):(\\d+)/;`,
  `const MAX_MSG = ${MAX_ERROR_MESSAGE_CHARS};`,
  `const PROGRESS_SERIALIZING = ${PROGRESS_SERIALIZING};`,
];

function readProgram(): string {
  const path = CANDIDATES.map((url) => fileURLToPath(url)).find((p) => existsSync(p));
  if (path === undefined)
    throw new Error(
      `the transform harness program is missing (looked for ${CANDIDATES.map((url) => fileURLToPath(url)).join(', ')})`,
    );
  const text = readFileSync(path, 'utf8');
  for (const line of SHARED)
    if (!text.includes(line))
      throw new Error(`${path} must declare \`${line}\` (kept equal to src/transform/harness.ts)`);
  return text;
}

/** The harness program, compiled in every transform context before the user's script; it evaluates to `install`. */
export const HARNESS_SOURCE = readProgram();
