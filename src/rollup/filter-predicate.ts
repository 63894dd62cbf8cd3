import {
  checkedType,
  type CheckedFilterNode,
  type CompareOp,
  type FieldRef,
  type FilterLiteral,
  type FilterNode,
} from './filter-ast.js';
import { compareStrings, isoToEpochMs, readValue } from './filter-values.js';

/**
 * Compiles a checked filter into a predicate over records: a tree of closures, no eval. Logic is
 * three-valued as in SQL (and as DuckDB runs `compileFilterSql`): a comparison with a null, missing
 * or wrongly-typed value is unknown, `not unknown` is unknown, `false and unknown` is false,
 * `true or unknown` is true, and a record matches only when the whole filter is true.
 */
export function compileFilterPredicate(node: CheckedFilterNode): (record: Record<string, unknown>) => boolean {
  const evaluate = build(node);
  return function filterPredicate(record) {
    return evaluate(record) === true;
  };
}

/** true, false, or null for unknown. */
type Tri = boolean | null;
type Evaluate = (record: Record<string, unknown>) => Tri;

const UNKNOWN: Evaluate = () => null;

function build(n: FilterNode): Evaluate {
  switch (n.kind) {
    case 'and':
    case 'or': {
      const operands = n.operands.map(build);
      // The value that decides the result on its own: false for and, true for or.
      const decisive = n.kind === 'or';
      return (r) => {
        let unknown = false;
        for (const op of operands) {
          const v = op(r);
          if (v === decisive) return decisive;
          if (v === null) unknown = true;
        }
        return unknown ? null : !decisive;
      };
    }
    case 'not': {
      const operand = build(n.operand);
      return (r) => {
        const v = operand(r);
        return v === null ? null : !v;
      };
    }
    case 'is_null': {
      const read = reader(n.field);
      const negated = n.negated;
      return (r) => (read(r) === null) !== negated;
    }
    case 'compare': {
      if (checkedType(n.field) === 'null') return UNKNOWN;
      const read = reader(n.field);
      const lit = literal(n.field, n.value);
      const test = OP_TESTS[n.op];
      if (typeof lit === 'string') {
        return (r) => {
          const v = read(r);
          return v === null ? null : test(compareStrings(v as string, lit));
        };
      }
      return (r) => {
        const v = read(r) as number | boolean | null;
        if (v === null) return null;
        return test(v < lit ? -1 : v > lit ? 1 : v === lit ? 0 : NaN);
      };
    }
    case 'in': {
      if (checkedType(n.field) === 'null') return UNKNOWN;
      const read = reader(n.field);
      // A Set compares by SameValueZero: 0 and -0 are one value, as in DuckDB.
      const values = new Set(n.values.map((v) => literal(n.field, v)));
      const negated = n.negated;
      return (r) => {
        const v = read(r);
        return v === null ? null : values.has(v as string | number | boolean) !== negated;
      };
    }
    case 'contains': {
      const type = checkedType(n.field);
      if (type === 'null') return UNKNOWN;
      const read = reader(n.field);
      const lit = n.value.value;
      if (type === 'string') {
        const text = lit as string;
        return (r) => {
          const v = read(r) as string | null;
          return v === null ? null : v.includes(text);
        };
      }
      // Array membership; null elements never match (DuckDB's list_contains ignores them too).
      return (r) => {
        const v = read(r) as readonly unknown[] | null;
        if (v === null) return null;
        for (const e of v) if (e === lit || (typeof e === 'bigint' && Number(e) === lit)) return true;
        return false;
      };
    }
  }
}

const OP_TESTS: Record<CompareOp, (c: number) => boolean> = {
  '=': (c) => c === 0,
  '!=': (c) => c !== 0,
  '<': (c) => c < 0,
  '<=': (c) => c <= 0,
  '>': (c) => c > 0,
  '>=': (c) => c >= 0,
};

function reader(field: FieldRef): (record: Record<string, unknown>) => ReturnType<typeof readValue> {
  const { name } = field;
  const type = checkedType(field);
  // Own properties only: a field named "constructor" must not read Object.prototype.
  return (r) => readValue(Object.hasOwn(r, name) ? r[name] : undefined, type);
}

/** A literal as the field's values are read: dates as epoch ms. */
function literal(field: FieldRef, lit: FilterLiteral): string | number | boolean {
  if (field.type === 'date') return isoToEpochMs(lit.value as string)!;
  return lit.value as string | number | boolean;
}
