import {
  FilterCheckError,
  type CheckedFilterNode,
  type FieldRef,
  type FilterField,
  type FilterFieldType,
  type FilterLiteral,
  type FilterNode,
} from './filter-ast.js';
import { isoToEpochMs } from './filter-values.js';

/**
 * Checks a parsed filter against the view's output fields and resolves each field's type into the tree
 * (in place), which is what makes it compilable. Throws `FilterCheckError` naming the first problem:
 * an unknown field (with the nearest known names), or a literal or operator the field's type does not
 * take — the rules are the table in `docs/metrics-filters.md`.
 */
export function checkFilter(node: FilterNode, fields: ReadonlyArray<FilterField>): asserts node is CheckedFilterNode {
  const byName = new Map(fields.map((f) => [f.name, f]));
  const visit = (n: FilterNode): void => {
    switch (n.kind) {
      case 'and':
      case 'or':
        n.operands.forEach(visit);
        return;
      case 'not':
        visit(n.operand);
        return;
      default:
        resolve(n.field, byName);
        checkPredicate(n);
    }
  };
  visit(node);
}

function resolve(ref: FieldRef, byName: ReadonlyMap<string, FilterField>): void {
  const field = byName.get(ref.name);
  if (!field)
    throw new FilterCheckError(
      `unknown field '${ref.name}' (${knownFields(ref.name, [...byName.keys()])})`,
      ref.position,
    );
  ref.type = field.type;
  if (field.type === 'array' && field.items !== undefined) ref.items = field.items;
  else delete ref.items;
}

function checkPredicate(n: Exclude<FilterNode, { kind: 'and' | 'or' | 'not' }>): void {
  const { field } = n;
  const type = field.type!;
  switch (n.kind) {
    case 'is_null':
      return;
    case 'compare':
      if (type === 'array') throw arrayNeedsContains(field);
      if (type === 'boolean' && n.op !== '=' && n.op !== '!=') {
        throw new FilterCheckError(
          `'${n.op}' cannot order the boolean field '${field.name}': use = or !=`,
          field.position,
        );
      }
      checkLiteral(field, type, n.value, n.op);
      return;
    case 'in':
      if (type === 'array') throw arrayNeedsContains(field);
      for (const v of n.values) checkLiteral(field, type, v, n.negated ? 'not in' : 'in');
      return;
    case 'contains':
      if (n.value.value === null) throw nullComparison(field, 'contains', n.value);
      if (type === 'string') {
        if (typeof n.value.value !== 'string') {
          throw new FilterCheckError(
            `'contains' on the string field '${field.name}' takes a quoted string, not ${shown(n.value)}`,
            n.value.position,
          );
        }
        return;
      }
      if (type === 'array') {
        const want = field.items;
        if (want !== undefined && typeof n.value.value !== want) {
          throw new FilterCheckError(
            `the array field '${field.name}' holds ${want}s, so 'contains' takes ${article(want)}, not ${shown(n.value)}`,
            n.value.position,
          );
        }
        return;
      }
      if (type === 'null') return;
      throw new FilterCheckError(
        `'contains' needs a string or array field; '${field.name}' is ${article(type)}`,
        field.position,
      );
  }
}

function checkLiteral(field: FieldRef, type: FilterFieldType, lit: FilterLiteral, op: string): void {
  if (lit.value === null) throw nullComparison(field, op, lit);
  if (type === 'null') return;
  if (type === 'date') {
    const valid = typeof lit.value === 'string' && isoToEpochMs(lit.value) !== null;
    if (valid) return;
    const what = typeof lit.value === 'string' ? `${shown(lit)}, which is not one` : shown(lit);
    throw new FilterCheckError(
      `the date field '${field.name}' compares with an ISO-8601 date string such as '2024-05-01' or '2024-05-01T12:00:00Z', not ${what}`,
      lit.position,
    );
  }
  if (typeof lit.value !== type) {
    const hint = type === 'string' ? ` (quote it: '${String(lit.value)}')` : '';
    throw new FilterCheckError(
      `the ${type} field '${field.name}' compares with ${article(type)}, not ${shown(lit)}${hint}`,
      lit.position,
    );
  }
}

function nullComparison(field: FieldRef, op: string, lit: FilterLiteral): FilterCheckError {
  return new FilterCheckError(
    `'${op} null' never matches: test for null with '${field.name} is null' or 'is not null'`,
    lit.position,
  );
}

function arrayNeedsContains(field: FieldRef): FilterCheckError {
  return new FilterCheckError(
    `'${field.name}' is an array: test for an element with '${field.name} contains <value>'`,
    field.position,
  );
}

function article(type: FilterFieldType): string {
  if (type === 'null') return 'always null';
  return `${type === 'array' ? 'an' : 'a'} ${type}`;
}

function shown(lit: FilterLiteral): string {
  const v = lit.value;
  if (typeof v === 'string') return `the string '${v.length > 40 ? `${v.slice(0, 40)}…` : v}'`;
  if (v === null) return 'null';
  return `${typeof v === 'number' ? 'the number' : 'the boolean'} ${String(v)}`;
}

/** "known fields: a, b, c and 12 more", nearest names (by edit distance) first. */
function knownFields(name: string, known: string[]): string {
  if (known.length === 0) return 'the view has no fields';
  const shownCount = 5;
  const lower = name.toLowerCase();
  const ranked = known
    .map((k) => ({ k, d: editDistance(lower, k.toLowerCase()) }))
    .sort((a, b) => a.d - b.d || (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
    .slice(0, shownCount)
    .map((r) => r.k);
  const more = known.length > shownCount ? ` and ${known.length - shownCount} more` : '';
  return `known fields: ${ranked.join(', ')}${more}`;
}

function editDistance(a: string, b: string): number {
  // Names are short; cap the work for pathological ones.
  a = a.slice(0, 64);
  b = b.slice(0, 64);
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}
