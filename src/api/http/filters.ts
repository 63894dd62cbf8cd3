import { ApiError } from '../../errors.js';
import type { JsonSchema } from './route.js';
import { instantMs } from '../../timestamp.js';

/** Operators of `operator:value` filters (spec: equals, contains, in, gt, between …). */
export const FILTER_OPERATORS = ['equals', 'contains', 'in', 'gt', 'gte', 'lt', 'lte', 'between'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];
export type FilterKind = 'text' | 'date' | 'enum';

/** A parsed filter: a predicate over the field's value. */
export type FieldFilter = (value: string | null | undefined) => boolean;

const OPS_BY_KIND: Record<FilterKind, readonly FilterOperator[]> = {
  text: FILTER_OPERATORS,
  date: ['equals', 'in', 'gt', 'gte', 'lt', 'lte', 'between'],
  enum: ['equals', 'in'],
};

/** Query-string schema for a filter parameter (its grammar is checked by `parseFilter`). */
export const filterParamSchema: JsonSchema = { type: 'string', minLength: 1, maxLength: 1024 };

function bad(field: string, message: string): ApiError {
  return new ApiError('request_validation_failed', `query.${field} ${message}`, {
    details: [{ field: `query.${field}`, message }],
  });
}

function parseDate(field: string, raw: string): number {
  // The one ISO 8601 reading (a real calendar date; no offset means UTC), as for bodies.
  const ms = instantMs(raw);
  if (Number.isNaN(ms))
    throw bad(
      field,
      `has "${raw}", which is not an ISO 8601 date or date-time (e.g. 2026-01-31 or 2026-01-31T12:00:00Z)`,
    );
  return ms;
}

/**
 * Parse `operator:value` (a bare value means `equals`). `in` takes a comma list, `between` two
 * comma-separated bounds (inclusive). Dates compare as instants, text case-insensitively.
 */
export function parseFilter(field: string, raw: string, kind: FilterKind, allowed?: readonly string[]): FieldFilter {
  const m = /^([a-z]+):(.*)$/s.exec(raw);
  const op = (m && (FILTER_OPERATORS as readonly string[]).includes(m[1]!) ? m[1] : 'equals') as FilterOperator;
  const operand = m && op === m[1] ? m[2]! : raw;
  if (!OPS_BY_KIND[kind].includes(op))
    throw bad(field, `does not support the ${op} operator; use one of: ${OPS_BY_KIND[kind].join(', ')}`);
  const list = op === 'in' || op === 'between' ? operand.split(',').map((s) => s.trim()) : [operand];
  if (op === 'between' && list.length !== 2)
    throw bad(field, 'between needs two comma-separated values, e.g. between:a,b');
  if (list.some((v) => v === '')) throw bad(field, 'has an empty value');
  if (allowed) {
    const unknown = list.find((v) => !allowed.includes(v));
    if (unknown !== undefined) throw bad(field, `has "${unknown}"; allowed: ${allowed.join(', ')}`);
  }

  if (kind === 'date') {
    const bounds = list.map((v) => parseDate(field, v));
    const at = (value: string | null | undefined) => (value ? Date.parse(value) : NaN);
    switch (op) {
      case 'equals':
        return (v) => at(v) === bounds[0];
      case 'in':
        return (v) => bounds.includes(at(v));
      case 'gt':
        return (v) => at(v) > bounds[0]!;
      case 'gte':
        return (v) => at(v) >= bounds[0]!;
      case 'lt':
        return (v) => at(v) < bounds[0]!;
      case 'lte':
        return (v) => at(v) <= bounds[0]!;
      case 'between':
        return (v) => at(v) >= bounds[0]! && at(v) <= bounds[1]!;
      default:
        throw bad(field, `does not support ${op}`);
    }
  }
  const fold = (s: string | null | undefined) => (s ?? '').toLowerCase();
  const wanted = list.map(fold);
  switch (op) {
    case 'equals':
      return (v) => fold(v) === wanted[0];
    case 'contains':
      return (v) => fold(v).includes(wanted[0]!);
    case 'in':
      return (v) => wanted.includes(fold(v));
    case 'gt':
      return (v) => fold(v) > wanted[0]!;
    case 'gte':
      return (v) => fold(v) >= wanted[0]!;
    case 'lt':
      return (v) => fold(v) < wanted[0]!;
    case 'lte':
      return (v) => fold(v) <= wanted[0]!;
    case 'between':
      return (v) => fold(v) >= wanted[0]! && fold(v) <= wanted[1]!;
  }
}

/**
 * NullableDateFilter: `null` matches unset, `not:null` matches set, anything else is a date filter.
 * Absent, lists hide scheduled deletions (spec: a deleted resource is hidden at once).
 */
export function parseNullableDateFilter(field: string, raw: string | undefined): FieldFilter {
  if (raw === undefined || raw === 'null') return (v) => v === null || v === undefined;
  if (raw === 'not:null') return (v) => v !== null && v !== undefined;
  const inner = parseFilter(field, raw, 'date');
  return (v) => v !== null && v !== undefined && inner(v);
}
