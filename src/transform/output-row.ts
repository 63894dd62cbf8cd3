import { iso } from '../clock.js';
import type { OutputColumn, OutputField } from './output-schema.js';

/**
 * A view's output row as people and scripts see it (docs/views.md, "Records"): the output fields
 * in schema order, dates as ISO 8601 strings, arrays as JSON values. The records endpoint answers
 * it, a view of a view gets it as its record (live and in backfill alike), and a join view gets
 * it for its base and lookup records — one form everywhere.
 */

/** One stored value (a view file's column value, or a coerced column's) as the row shows it. */
export function shapeValue(field: OutputField, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (field.type) {
    case 'date':
      return typeof value === 'number' && Number.isFinite(value) ? iso(value) : null;
    case 'array':
      if (typeof value !== 'string') return value;
      try {
        return JSON.parse(value);
      } catch {
        // Text that does not parse is shown as the string it is.
        return value;
      }
    case 'number':
      return typeof value === 'number' && !Number.isFinite(value) ? null : value;
    case 'null':
      return null;
    default:
      return value;
  }
}

/** A stored row (column name → stored value) as an output row; keys not in `fields` are left out. */
export function outputRow(
  fields: readonly OutputField[],
  stored: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) out[f.name] = shapeValue(f, stored[f.name]);
  return out;
}

/** Row `i` of coerced columns (as written to the view file) as an output row. */
export function columnsRow(columns: readonly OutputColumn[], i: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of columns) out[c.name] = shapeValue(c, c.values[i]);
  return out;
}
