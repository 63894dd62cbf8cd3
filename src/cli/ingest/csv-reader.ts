import type { Readable } from 'node:stream';
import { parse, type CsvError } from 'csv-parse';
import type { InputRecord } from './input-record.js';

/**
 * CSV rows as records (csv-parse, streaming): the first row names the fields. With `cast`, numbers
 * and booleans (`true`/`false`) become JSON numbers and booleans; everything else stays a string.
 * A row that does not parse (a wrong number of fields, a broken quote) is refused with its line and
 * the rest still goes on.
 */
export async function* csvRecords(
  input: Readable,
  opts: { cast: boolean; delimiter: string },
): AsyncGenerator<InputRecord> {
  const skipped: InputRecord[] = [];
  const parser = input.pipe(
    parse({
      columns: true,
      info: true,
      bom: true,
      delimiter: opts.delimiter,
      skip_empty_lines: true,
      skip_records_with_error: true,
      on_skip: (err: CsvError | undefined) => {
        const line = typeof err?.lines === 'number' ? err.lines : 0;
        skipped.push({ text: '', line, offset: 0, refusal: `CSV: ${err?.message ?? 'the row does not parse'}` });
        return undefined;
      },
      cast: opts.cast
        ? (value: string, ctx: { quoting: boolean; header: boolean }) => {
            if (ctx.header || ctx.quoting) return value;
            if (value === 'true') return true;
            if (value === 'false') return false;
            if (value !== '' && /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(value)) {
              const n = Number(value);
              // Integers past 2^53 would change: keep them as text.
              if (Number.isSafeInteger(n) || !/^-?\d+$/.test(value)) return n;
            }
            return value;
          }
        : false,
    }),
  );
  for await (const row of parser as AsyncIterable<{
    record: Record<string, unknown>;
    info: { lines: number; bytes: number };
  }>) {
    while (skipped.length > 0) yield skipped.shift()!;
    yield { text: JSON.stringify(row.record), line: row.info.lines, offset: row.info.bytes };
  }
  while (skipped.length > 0) yield skipped.shift()!;
}
