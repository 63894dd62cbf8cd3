/**
 * A response body that does not follow its format: the run fails with error stage `parse` and
 * nothing of the body is written. `line` and `column` are 1-based (CSV/TSV: `column` is the field's
 * position in its row); null when the problem has no position (a missing records path).
 */
export class FormatError extends Error {
  constructor(
    readonly format: string,
    readonly reason: string,
    readonly line: number | null = null,
    readonly column: number | null = null,
  ) {
    super(`${format}: ${line !== null ? `line ${line}${column !== null ? `, column ${column}` : ''}: ` : ''}${reason}`);
    this.name = 'FormatError';
  }
}

/** 1-based line and column of character `offset` in `text`. */
export function position(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}
