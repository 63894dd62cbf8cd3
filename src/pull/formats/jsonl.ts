import { FormatError } from './format-error.js';
import { parseJsonText, type RecordObject } from './json.js';

/** JSON Lines / NDJSON: one object per line; blank lines are skipped. An error names its line and column. */
export function jsonlRecords(text: string): RecordObject[] {
  const out: RecordObject[] = [];
  let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const raw = text.slice(start, end).replace(/\r$/, '');
    if (raw.trim() !== '') {
      let value: unknown;
      try {
        value = parseJsonText(raw, 'jsonl');
      } catch (err) {
        if (err instanceof FormatError) throw new FormatError('jsonl', err.reason, line, err.column);
        throw err;
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new FormatError(
          'jsonl',
          `the line is ${Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`}, not a JSON object`,
          line,
          1,
        );
      }
      out.push(value as RecordObject);
    }
    start = end + 1;
    line++;
  }
  return out;
}
