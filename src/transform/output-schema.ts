// Placeholder: replaced by the sandbox helper's module on merge.
import { OUTPUT_FIELD_TYPES, type OutputField } from './view-records.js';

/** One problem with one output field: its index in the list, the property, and what to fix. */
export interface OutputSchemaIssue {
  index: number;
  field: 'name' | 'type' | 'description';
  message: string;
}

/** Query parameter names an output field may not take (they would be ambiguous in query strings). */
export const RESERVED_OUTPUT_NAMES: readonly string[] = [
  'limit', 'cursor', 'after', 'before', 'sort', 'order_by', 'start_at', 'end_at', 'interval', 'timezone', 'series',
  'max_series', 'time_range', 'page_id', 'normalize', 'coverage_mode', 'forecast_at',
];

/** Names unique (no conflicting types), known types, no reserved query key and no `__` prefix (internal columns). */
export function validateOutputSchema(fields: readonly OutputField[]): OutputSchemaIssue[] {
  const issues: OutputSchemaIssue[] = [];
  const seen = new Map<string, number>();
  fields.forEach((f, index) => {
    if (!(OUTPUT_FIELD_TYPES as readonly string[]).includes(f.type)) issues.push({ index, field: 'type', message: `must be one of: ${OUTPUT_FIELD_TYPES.join(', ')}` });
    if (RESERVED_OUTPUT_NAMES.includes(f.name)) issues.push({ index, field: 'name', message: `"${f.name}" is a reserved query key; choose another name` });
    else if (f.name.startsWith('__')) issues.push({ index, field: 'name', message: 'may not start with "__" (reserved for internal columns)' });
    const first = seen.get(f.name);
    if (first !== undefined) {
      const other = fields[first]!;
      const why = other.type !== f.type ? ` with another type (${other.type})` : '';
      issues.push({ index, field: 'name', message: `"${f.name}" is already declared${why} at output_schema[${first}]; names must be unique` });
    } else seen.set(f.name, index);
  });
  return issues;
}
