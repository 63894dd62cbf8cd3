import { ApiError, type FieldIssue } from '../errors.js';
import { FilterError, type CheckedFilterNode, type FilterField } from './filter-ast.js';
import { checkFilter } from './filter-check.js';
import { parseFilter } from './filter-parse.js';

/**
 * A metric's `filters`: the expression language of `docs/metrics-filters.md`, parsed into a tree,
 * checked against the view's output fields, then compiled either into a record predicate (the live
 * pipeline) or into a parameterised DuckDB WHERE fragment (backfills and queries). The two compilers
 * agree on every input — `test/rollup/filter-expression.test.ts` proves it against DuckDB.
 *
 *   const node = prepareFilter(metric.filters, viewFields);      // throws FilterError → filterError()
 *   const keep = node ? compileFilterPredicate(node) : () => true;
 *   const where = node ? compileFilterSql(node, quoteIdent) : null;  // { sql, params }
 */

export {
  FILTER_LIMITS,
  FilterCheckError,
  FilterError,
  FilterSyntaxError,
  type CheckedFilterNode,
  type CompareOp,
  type FieldRef,
  type FilterField,
  type FilterFieldType,
  type FilterItemType,
  type FilterLiteral,
  type FilterNode,
  type LiteralValue,
} from './filter-ast.js';
export { parseFilter } from './filter-parse.js';
export { checkFilter } from './filter-check.js';
export { compileFilterPredicate } from './filter-predicate.js';
export { compileFilterSql, quoteIdent, type FilterSql, type FilterSqlOptions } from './filter-sql.js';
export { formatFilter, formatField } from './filter-format.js';
export { isoToEpochMs } from './filter-values.js';

/** Parses and checks in one step: null for a blank filter; throws `FilterError` (syntax or check). */
export function prepareFilter(text: string, fields: ReadonlyArray<FilterField>): CheckedFilterNode | null {
  const node = parseFilter(text);
  if (node === null) return null;
  checkFilter(node, fields);
  return node;
}

/**
 * The API error for a filter the user must fix: 400 `request_validation_failed` with one detail,
 * `{ field, message: '… at position N' }`. Anything that is not a `FilterError` is a bug: server_error.
 */
export function filterError(err: unknown, field = 'body.filters'): ApiError {
  if (!(err instanceof FilterError)) return new ApiError('server_error', undefined, { cause: err });
  return new ApiError('request_validation_failed', `${field} ${err.message}`, {
    details: [{ field, message: err.message }] satisfies FieldIssue[],
    cause: err,
  });
}
