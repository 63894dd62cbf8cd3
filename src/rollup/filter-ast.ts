/**
 * The tree a metric's `filters` expression parses into, the bounds on it, and its two errors. The
 * grammar is documented for users in `docs/metrics-filters.md`; parse → check → compile (predicate or
 * SQL) live in the neighbouring `filter-*.ts` files and are reached through `filter-expression.ts`.
 */

/** The type of a view output field, as the view's output schema declares it. */
export type FilterFieldType = 'string' | 'number' | 'boolean' | 'date' | 'array' | 'null';

/** The element type of an array field, when known (lets `contains` be checked, not only compiled). */
export type FilterItemType = 'string' | 'number' | 'boolean';

/** A field a filter may name: a view output field. */
export interface FilterField {
  name: string;
  type: FilterFieldType;
  /** Array fields only: the element type; without it any scalar literal is accepted. */
  items?: FilterItemType;
}

export type LiteralValue = string | number | boolean | null;

/** A literal as written; `position` is the 0-based offset of its first character. */
export interface FilterLiteral {
  readonly value: LiteralValue;
  readonly position: number;
}

/** A field reference; `checkFilter` fills `type` (and `items`) from the view's fields. */
export interface FieldRef {
  readonly name: string;
  readonly position: number;
  type?: FilterFieldType;
  items?: FilterItemType;
}

export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

export type FilterNode =
  | { readonly kind: 'and' | 'or'; readonly operands: readonly FilterNode[]; readonly position: number }
  | { readonly kind: 'not'; readonly operand: FilterNode; readonly position: number }
  | {
      readonly kind: 'compare';
      readonly field: FieldRef;
      readonly op: CompareOp;
      readonly value: FilterLiteral;
      readonly position: number;
    }
  | {
      readonly kind: 'in';
      readonly field: FieldRef;
      readonly negated: boolean;
      readonly values: readonly FilterLiteral[];
      readonly position: number;
    }
  | { readonly kind: 'contains'; readonly field: FieldRef; readonly value: FilterLiteral; readonly position: number }
  | { readonly kind: 'is_null'; readonly field: FieldRef; readonly negated: boolean; readonly position: number };

declare const checked: unique symbol;
/** A tree `checkFilter` has accepted against a view's fields: only such a tree can be compiled. */
export type CheckedFilterNode = FilterNode & { readonly [checked]: true };

/** Words with a meaning in the language; a field of that name is written in double quotes. */
export const FILTER_KEYWORDS: ReadonlySet<string> = new Set([
  'and',
  'or',
  'not',
  'in',
  'contains',
  'is',
  'null',
  'true',
  'false',
]);

/** Bounds on one expression: its text, its nesting of parentheses and `not`, one `in` list. */
export const FILTER_LIMITS = { maxLength: 4096, maxDepth: 32, maxInValues: 1000 } as const;

/** A filter the user must fix: the message ends with `at position N`, `position` is that N (0-based). */
export class FilterError extends Error {
  readonly position: number;
  constructor(message: string, position: number) {
    super(`${message} at position ${position}`);
    this.name = 'FilterError';
    this.position = position;
  }
}

/** The text is not a well-formed expression. */
export class FilterSyntaxError extends FilterError {
  constructor(message: string, position: number) {
    super(message, position);
    this.name = 'FilterSyntaxError';
  }
}

/** The expression is well formed but names an unknown field or compares values of the wrong type. */
export class FilterCheckError extends FilterError {
  constructor(message: string, position: number) {
    super(message, position);
    this.name = 'FilterCheckError';
  }
}

/** The field's type once checked; compiling an unchecked tree is a programming error, not a 400. */
export function checkedType(field: FieldRef): FilterFieldType {
  if (field.type === undefined)
    throw new Error(`filter field '${field.name}' was not checked: call checkFilter before compiling`);
  return field.type;
}
