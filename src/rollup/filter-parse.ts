import {
  FILTER_KEYWORDS as KEYWORDS,
  FILTER_LIMITS,
  FilterSyntaxError,
  type CompareOp,
  type FieldRef,
  type FilterLiteral,
  type FilterNode,
} from './filter-ast.js';

/**
 * Parser for the filter language of `docs/metrics-filters.md`: a hand-written lexer and recursive
 * descent over
 *
 *   filter    := orExpr EOF | (blank)
 *   orExpr    := andExpr ('or' andExpr)*
 *   andExpr   := notExpr ('and' notExpr)*
 *   notExpr   := 'not' notExpr | '(' orExpr ')' | predicate
 *   predicate := field ( op literal | ['not'] 'in' '(' literal (',' literal)* ')'
 *                      | 'contains' literal | 'is' ['not'] 'null' )
 *
 * Tokens are read on demand, so the error reported is always the leftmost one. Chains of `and` / `or`
 * become one n-ary node, so the tree is as deep as the nesting the user wrote (bounded), not as long
 * as the expression.
 */

type Token =
  | { kind: 'word'; pos: number; text: string; lower: string }
  | { kind: 'qident'; pos: number; text: string; name: string }
  | { kind: 'string'; pos: number; text: string; value: string }
  | { kind: 'number'; pos: number; text: string; value: number }
  | { kind: 'op'; pos: number; text: string; op: CompareOp }
  | { kind: '(' | ')' | ',' | 'eof'; pos: number; text: string };

const IDENT = /[\p{L}_][\p{L}\p{Nd}_.]*/uy;
const IDENT_CHAR = /[\p{L}\p{Nd}_.]/u;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const OPERATORS = '=, !=, <>, <, <=, >, >=, in, not in, contains, is null or is not null';

/**
 * Parses a filter expression. Blank text is no filter (null). Throws `FilterSyntaxError` with the
 * 0-based offset of the first problem; the text is bounded (length, nesting, `in` list length).
 */
export function parseFilter(text: string): FilterNode | null {
  if (text.length > FILTER_LIMITS.maxLength) {
    throw new FilterSyntaxError(
      `the filter is longer than ${FILTER_LIMITS.maxLength} characters`,
      FILTER_LIMITS.maxLength,
    );
  }
  const p = new Parser(text);
  if (p.peek().kind === 'eof') return null;
  const node = p.orExpr();
  const t = p.peek();
  if (t.kind === ')') throw new FilterSyntaxError(`unexpected ')' with no '(' to close`, t.pos);
  if (t.kind !== 'eof')
    throw new FilterSyntaxError(`expected 'and', 'or' or the end of the filter, found ${describe(t)}`, t.pos);
  return node;
}

class Parser {
  private cursor = 0;
  private look: Token | null = null;
  private prev: Token | null = null;
  private depth = 0;

  constructor(private readonly text: string) {}

  peek(): Token {
    return (this.look ??= this.lex());
  }

  private take(): Token {
    const t = this.peek();
    this.look = null;
    this.prev = t;
    return t;
  }

  private isWord(t: Token, word: string): boolean {
    return t.kind === 'word' && t.lower === word;
  }

  private after(): string {
    return this.prev ? ` after '${this.prev.text}'` : '';
  }

  orExpr(): FilterNode {
    const operands = [this.andExpr()];
    while (this.isWord(this.peek(), 'or')) {
      this.take();
      operands.push(this.andExpr());
    }
    return operands.length === 1 ? operands[0]! : { kind: 'or', operands, position: operands[0]!.position };
  }

  private andExpr(): FilterNode {
    const operands = [this.notExpr()];
    while (this.isWord(this.peek(), 'and')) {
      this.take();
      operands.push(this.notExpr());
    }
    return operands.length === 1 ? operands[0]! : { kind: 'and', operands, position: operands[0]!.position };
  }

  private notExpr(): FilterNode {
    const t = this.peek();
    if (this.isWord(t, 'not')) {
      this.take();
      this.enter(t.pos);
      const operand = this.notExpr();
      this.depth--;
      return { kind: 'not', operand, position: t.pos };
    }
    if (t.kind === '(') {
      this.take();
      this.enter(t.pos);
      const inner = this.orExpr();
      const close = this.peek();
      if (close.kind !== ')') {
        throw new FilterSyntaxError(
          `expected ')' to close the '(' opened at ${t.pos}, found ${describe(close)}`,
          close.pos,
        );
      }
      this.take();
      this.depth--;
      return inner;
    }
    return this.predicate();
  }

  private enter(pos: number): void {
    if (++this.depth > FILTER_LIMITS.maxDepth) {
      throw new FilterSyntaxError(
        `the filter nests parentheses and 'not' deeper than ${FILTER_LIMITS.maxDepth} levels`,
        pos,
      );
    }
  }

  private predicate(): FilterNode {
    const field = this.field();
    const position = field.position;
    const t = this.take();
    if (t.kind === 'op') return { kind: 'compare', field, op: t.op, value: this.literal(), position };
    if (this.isWord(t, 'in')) return { kind: 'in', field, negated: false, values: this.list(), position };
    if (this.isWord(t, 'contains')) return { kind: 'contains', field, value: this.literal(), position };
    if (this.isWord(t, 'not')) {
      const n = this.take();
      if (!this.isWord(n, 'in'))
        throw new FilterSyntaxError(`expected 'in' after '${t.text}', found ${describe(n)}`, n.pos);
      return { kind: 'in', field, negated: true, values: this.list(), position };
    }
    if (this.isWord(t, 'is')) {
      let n = this.take();
      const negated = this.isWord(n, 'not');
      const after = negated ? `'${t.text} ${n.text}'` : `'${t.text}'`;
      if (negated) n = this.take();
      if (!this.isWord(n, 'null')) {
        throw new FilterSyntaxError(
          `expected ${negated ? "'null'" : "'null' or 'not null'"} after ${after}, found ${describe(n)}`,
          n.pos,
        );
      }
      return { kind: 'is_null', field, negated, position };
    }
    throw new FilterSyntaxError(
      `expected an operator (${OPERATORS}) after field '${field.name}', found ${describe(t)}`,
      t.pos,
    );
  }

  private field(): FieldRef {
    const t = this.peek();
    if (t.kind === 'qident') {
      this.take();
      return { name: t.name, position: t.pos };
    }
    if (t.kind === 'word' && !KEYWORDS.has(t.lower)) {
      this.take();
      return { name: t.text, position: t.pos };
    }
    let hint = '';
    if (t.kind === 'word') hint = ` ('${t.text}' is a keyword: write a field of that name as "${t.text}")`;
    else if (t.kind === 'string' || t.kind === 'number')
      hint = ' (a comparison starts with the field name, e.g. status = 200)';
    throw new FilterSyntaxError(`expected a field name${this.after()}, found ${describe(t)}${hint}`, t.pos);
  }

  private literal(): FilterLiteral {
    const after = this.after();
    const t = this.take();
    if (t.kind === 'string' || t.kind === 'number') return { value: t.value, position: t.pos };
    if (t.kind === 'word' && (t.lower === 'true' || t.lower === 'false'))
      return { value: t.lower === 'true', position: t.pos };
    if (t.kind === 'word' && t.lower === 'null') return { value: null, position: t.pos };
    const hint = t.kind === 'qident' ? " (strings take single quotes: 'text'; double quotes name a field)" : '';
    throw new FilterSyntaxError(`expected a value${after}, found ${describe(t)}${hint}`, t.pos);
  }

  private list(): FilterLiteral[] {
    const after = this.after();
    const open = this.take();
    if (open.kind !== '(') throw new FilterSyntaxError(`expected '('${after}, found ${describe(open)}`, open.pos);
    const values: FilterLiteral[] = [];
    for (;;) {
      const value = this.literal();
      if (values.length === FILTER_LIMITS.maxInValues) {
        throw new FilterSyntaxError(`the 'in' list has more than ${FILTER_LIMITS.maxInValues} values`, value.position);
      }
      values.push(value);
      const t = this.take();
      if (t.kind === ')') return values;
      if (t.kind !== ',')
        throw new FilterSyntaxError(`expected ',' or ')' in the 'in' list, found ${describe(t)}`, t.pos);
    }
  }

  private lex(): Token {
    const s = this.text;
    let i = this.cursor;
    while (i < s.length && /\s/.test(s[i]!)) i++;
    const pos = i;
    const tok = <T extends Token>(t: T, end: number): T => {
      this.cursor = end;
      return t;
    };
    if (i >= s.length) return tok({ kind: 'eof', pos, text: 'end of input' }, i);
    const c = s[i]!;
    const n = s[i + 1];
    if (c === '(' || c === ')' || c === ',') return tok({ kind: c, pos, text: c }, i + 1);
    if (c === '=') {
      if (n === '=') throw new FilterSyntaxError(`unexpected '==' (equality is a single '=')`, pos);
      return tok({ kind: 'op', pos, text: '=', op: '=' }, i + 1);
    }
    if (c === '!') {
      if (n === '=') return tok({ kind: 'op', pos, text: '!=', op: '!=' }, i + 2);
      throw new FilterSyntaxError(`unexpected character '!' (write 'not' or '!=')`, pos);
    }
    if (c === '<') {
      if (n === '=') return tok({ kind: 'op', pos, text: '<=', op: '<=' }, i + 2);
      if (n === '>') return tok({ kind: 'op', pos, text: '<>', op: '!=' }, i + 2);
      return tok({ kind: 'op', pos, text: '<', op: '<' }, i + 1);
    }
    if (c === '>') {
      if (n === '=') return tok({ kind: 'op', pos, text: '>=', op: '>=' }, i + 2);
      return tok({ kind: 'op', pos, text: '>', op: '>' }, i + 1);
    }
    if (c === "'" || c === '"') {
      const { value, end } = this.quoted(pos, c);
      if (c === "'") return tok({ kind: 'string', pos, text: s.slice(pos, end), value }, end);
      if (value === '') throw new FilterSyntaxError('empty field name ""', pos);
      return tok({ kind: 'qident', pos, text: s.slice(pos, end), name: value }, end);
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(s);
      const end = m ? i + m[0].length : i;
      if (!m || (end < s.length && IDENT_CHAR.test(s[end]!))) {
        throw new FilterSyntaxError(
          `invalid number '${s.slice(i, end + 1)}' (numbers are written as in JSON: 12, -3.5, 1e6)`,
          pos,
        );
      }
      const value = Number(m[0]);
      if (!Number.isFinite(value)) throw new FilterSyntaxError(`number ${m[0]} is out of range`, pos);
      return tok({ kind: 'number', pos, text: m[0], value }, end);
    }
    IDENT.lastIndex = i;
    const m = IDENT.exec(s);
    if (m) return tok({ kind: 'word', pos, text: m[0], lower: m[0].toLowerCase() }, i + m[0].length);
    const ch = String.fromCodePoint(s.codePointAt(i)!);
    const shown = /[\p{L}\p{N}\p{P}\p{S}]/u.test(ch)
      ? `'${ch}'`
      : `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
    const hint = ch === '`' ? ' (write a field name with spaces or symbols in double quotes: "my field")' : '';
    throw new FilterSyntaxError(`unexpected character ${shown}${hint}`, pos);
  }

  /** A quoted string or field name from `start` (the quote); a doubled quote stands for one. */
  private quoted(start: number, q: string): { value: string; end: number } {
    const s = this.text;
    let value = '';
    let i = start + 1;
    for (;;) {
      const j = s.indexOf(q, i);
      if (j < 0) throw new FilterSyntaxError(`unterminated ${q === "'" ? 'string' : 'field name'} starting`, start);
      value += s.slice(i, j);
      if (s[j + 1] !== q) return { value, end: j + 1 };
      value += q;
      i = j + 2;
    }
  }
}

function describe(t: Token): string {
  switch (t.kind) {
    case 'eof':
      return 'the end of the filter';
    case 'string':
      return t.text.length > 24 ? `the string ${t.text.slice(0, 20)}…` : `the string ${t.text}`;
    case 'number':
      return `the number ${t.text}`;
    case 'qident':
      return `the field name ${t.text}`;
    case 'word':
      return KEYWORDS.has(t.lower) ? `'${t.text}'` : `the word '${t.text}'`;
    default:
      return `'${t.text}'`;
  }
}
