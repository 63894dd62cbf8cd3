import { parse } from 'csv-parse/sync';
import { FormatError } from './format-error.js';
import type { RecordObject } from './json.js';

/**
 * CSV (RFC 4180) or TSV with a header row, by csv-parse: quoting, quoted line breaks, a leading BOM.
 * Every value stays a string (the text says nothing about types); empty lines are skipped; a row with
 * more or fewer fields than the header is a `parse` failure naming its line.
 */
export function delimitedRecords(text: string, delimiter: ',' | '\t'): RecordObject[] {
  const format = delimiter === ',' ? 'csv' : 'tsv';
  try {
    return parse(text, {
      columns: (header: string[]) => {
        const seen = new Set<string>();
        for (const [i, name] of header.entries()) {
          if (name === '')
            throw new FormatError(format, `header field ${i + 1} is empty; every column needs a name`, 1, i + 1);
          if (seen.has(name)) throw new FormatError(format, `header names the column "${name}" twice`, 1, i + 1);
          seen.add(name);
        }
        return header;
      },
      bom: true,
      delimiter,
      skip_empty_lines: true,
      // TSV has no quoting convention of its own: a quote character is data.
      quote: delimiter === ',' ? '"' : false,
    }) as RecordObject[];
  } catch (err) {
    if (err instanceof FormatError) throw err;
    const e = err as { code?: string; message?: string; lines?: number; index?: number };
    const reason = (e.message ?? 'not valid').replace(/^[A-Za-z ]+: /, '').replace(/ (at|on) line \d+/, '');
    throw new FormatError(
      format,
      reason,
      typeof e.lines === 'number' ? e.lines : null,
      typeof e.index === 'number' ? e.index + 1 : null,
    );
  }
}
