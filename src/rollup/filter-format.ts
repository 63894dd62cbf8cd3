import { FILTER_KEYWORDS, type FilterLiteral, type FilterNode } from './filter-ast.js';

const BARE = /^[\p{L}_][\p{L}\p{Nd}_.]*$/u;

/**
 * Canonical text of a filter tree: lower-case keywords, single spaces, parentheses only where the tree
 * has a nested and/or. `parseFilter(formatFilter(t))` gives `t` back (positions aside), so a stored
 * filter can be normalised, and a tree built in code can be shown to users in their own language.
 */
export function formatFilter(node: FilterNode): string {
  const inner = (n: FilterNode) => (n.kind === 'and' || n.kind === 'or' ? `(${formatFilter(n)})` : formatFilter(n));
  switch (node.kind) {
    case 'and':
    case 'or':
      return node.operands.map(inner).join(` ${node.kind} `);
    case 'not':
      return `not ${inner(node.operand)}`;
    case 'compare':
      return `${formatField(node.field.name)} ${node.op} ${formatLiteral(node.value)}`;
    case 'in':
      return `${formatField(node.field.name)} ${node.negated ? 'not in' : 'in'} (${node.values.map(formatLiteral).join(', ')})`;
    case 'contains':
      return `${formatField(node.field.name)} contains ${formatLiteral(node.value)}`;
    case 'is_null':
      return `${formatField(node.field.name)} is ${node.negated ? 'not ' : ''}null`;
  }
}

/** A field name as written in a filter: bare when it can be, else in double quotes. */
export function formatField(name: string): string {
  return BARE.test(name) && !FILTER_KEYWORDS.has(name.toLowerCase()) ? name : `"${name.replace(/"/g, '""')}"`;
}

function formatLiteral(lit: FilterLiteral): string {
  const v = lit.value;
  if (typeof v === 'string') return `'${v.replace(/'/g, "''")}'`;
  return String(v);
}
