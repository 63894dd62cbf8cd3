import {
  checkedType,
  type CheckedFilterNode,
  type FieldRef,
  type FilterLiteral,
  type FilterNode,
} from './filter-ast.js';
import { isoToEpochMs } from './filter-values.js';

/** A DuckDB WHERE fragment and the values of its `?` placeholders, in order. */
export interface FilterSql {
  sql: string;
  params: Array<string | number | boolean>;
}

export interface FilterSqlOptions {
  /**
   * SQL giving epoch milliseconds (BIGINT) of a date field's column expression. The default,
   * `epoch_ms(<column>)`, fits TIMESTAMP and TIMESTAMPTZ columns; for a column already holding epoch
   * ms pass `(c) => c`.
   */
  dateMs?: (column: string) => string;
}

/** Quotes a DuckDB identifier: double quotes around it, inner double quotes doubled. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Compiles a checked filter into a DuckDB WHERE fragment with the same meaning as
 * `compileFilterPredicate` (DuckDB is three-valued natively). No user text enters the SQL: field names
 * go through `column` (default `quoteIdent`) and every literal is a `?` parameter (positional, as
 * `connection.run(sql, params)` binds an array), cast to the type it was checked as, so what a
 * comparison means never depends on how a driver types a bound value.
 */
export function compileFilterSql(
  node: CheckedFilterNode,
  column: (field: string) => string = quoteIdent,
  options: FilterSqlOptions = {},
): FilterSql {
  const params: FilterSql['params'] = [];
  const dateMs = options.dateMs ?? ((c: string) => `epoch_ms(${c})`);
  const col = (f: FieldRef) => wrap(column(f.name));
  const lhs = (f: FieldRef) => (f.type === 'date' ? dateMs(col(f)) : col(f));
  const param = (f: FieldRef, lit: FilterLiteral) => {
    if (f.type === 'date') {
      params.push(isoToEpochMs(lit.value as string)!);
      return 'CAST(? AS BIGINT)';
    }
    const v = lit.value as string | number | boolean;
    params.push(v);
    return `CAST(? AS ${typeof v === 'string' ? 'VARCHAR' : typeof v === 'number' ? 'DOUBLE' : 'BOOLEAN'})`;
  };
  const predicate = (n: Exclude<FilterNode, { kind: 'and' | 'or' | 'not' }>): string => {
    if (n.kind === 'is_null') return `(${col(n.field)} IS ${n.negated ? 'NOT ' : ''}NULL)`;
    const type = checkedType(n.field);
    // A field typed null holds no values: every test on it is unknown, whatever its column's type.
    if (type === 'null') return 'CAST(NULL AS BOOLEAN)';
    switch (n.kind) {
      case 'compare':
        return `(${lhs(n.field)} ${n.op === '!=' ? '<>' : n.op} ${param(n.field, n.value)})`;
      case 'in':
        return `(${lhs(n.field)} ${n.negated ? 'NOT IN' : 'IN'} (${n.values.map((v) => param(n.field, v)).join(', ')}))`;
      case 'contains':
        return `${type === 'array' ? 'list_contains' : 'contains'}(${col(n.field)}, ${param(n.field, n.value)})`;
    }
  };
  const emit = (n: FilterNode): string => {
    switch (n.kind) {
      case 'and':
      case 'or':
        return `(${n.operands.map(emit).join(n.kind === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${emit(n.operand)})`;
      default:
        return predicate(n);
    }
  };
  return { sql: emit(node), params };
}

const PLAIN_COLUMN = /^(?:"(?:[^"]|"")*"|[A-Za-z_][A-Za-z0-9_]*)(?:\.(?:"(?:[^"]|"")*"|[A-Za-z_][A-Za-z0-9_]*))*$/;

/** Parenthesises a caller's column expression unless it is a plain (qualified) identifier. */
function wrap(expr: string): string {
  return PLAIN_COLUMN.test(expr) ? expr : `(${expr})`;
}
