import { parse } from 'acorn';
import { GET_HELPER_DECLARATION } from './script-writer.js';

/**
 * What of its record a view script reads, found from its source, so that the worker can pass the
 * sandbox only those parts (record-projection.ts): a 4.6 KB status of which a script reads five
 * fields costs the isolate ~30 µs to parse whole and ~2 µs projected (docs/views.md, "What the
 * script is given").
 *
 * The answer must be invisible to the script: it gets fewer keys only where it could not have
 * told. So the analysis is conservative and gives up (null: the whole record) on anything it does
 * not follow. It follows the record parameter of the top-level `function transform(record, ctx)`
 * through static member reads (`r.user.name`, `r['user']`, `r.items[0]`, `r?.user`) and object
 * destructuring with static keys. Where such a chain's value is used as a value — passed,
 * returned, compared, iterated, enumerated, called as `this`, read with a computed key — the
 * subtree there is given whole. Where it is only tested (`typeof`, `!`, `== null`, `=== undefined`,
 * the test of an `if`, `?:` or loop, the left of `&&`), an object or array there may be given as
 * `{}` or `[]`: those tests cannot tell. Assigning to `r.a.b` needs `r.a` to be there.
 *
 * It gives up when the record itself is used as a value, or when the script could reach the record
 * or the objects' prototypes by a way it does not follow: `arguments`, `eval`, `Function`,
 * `constructor`, `prototype`, `__proto__`, `Reflect`, `Proxy`, `globalThis`, property
 * descriptors, `with`, another binding of the parameter's name or of `transform` or `undefined`.
 * A prototype getter is how a read could observe the object it reads from; these are how a script
 * would install one.
 */
export interface ReadTree {
  /** The value here is read whole. */
  whole: boolean;
  /** Keys read below here (none and not whole: only tested). */
  keys: Map<string, ReadTree>;
}

/** Words whose presence in the source outside comments (code or string) means "give the whole record". */
const OPAQUE_WORDS =
  /\b(?:arguments|eval|Function|constructor|prototype|__proto__|Reflect|Proxy|globalThis|defineProperty|defineProperties|getOwnPropertyDescriptors?|getPrototypeOf|setPrototypeOf|__defineGetter__|__defineSetter__|__lookupGetter__|__lookupSetter__)\b/;

interface Node {
  type: string;
  [key: string]: unknown;
}

/** Thrown inside the walk when the whole record is needed. */
const WHOLE = new Error('script-reads: whole record');

const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && typeof (v as Node).type === 'string';

/** The read tree of `script`'s record parameter, or null when the script may read the whole record. */
export function recordReads(script: string): ReadTree | null {
  let program: Node;
  const comments: Array<[number, number]> = [];
  try {
    program = parse(script, {
      ecmaVersion: 'latest',
      sourceType: 'script',
      onComment: (_block, _text, start, end) => comments.push([start, end]),
    }) as unknown as Node;
  } catch {
    return null;
  }
  // The generated scripts' `get` helper (script-writer.ts), declared at the top level exactly as
  // written: `get(record, ["a", "b"])` reads record.a.b (own keys; its use of
  // `Object.prototype.hasOwnProperty` is its own, not a way around the analysis).
  const readers = new Set<string>();
  // Comments never run: the words are looked for in the rest (strings included, for `Function("…")`).
  const skipped = [...comments];
  for (const s of program.body as Node[]) {
    if (s.type !== 'FunctionDeclaration' || script.slice(s.start as number, s.end as number) !== GET_HELPER_DECLARATION)
      continue;
    readers.add((s.id as Node).name as string);
    skipped.push([s.start as number, s.end as number]);
  }
  let rest = script;
  for (const [start, end] of skipped) rest = rest.slice(0, start) + ' '.repeat(end - start) + rest.slice(end);
  if (OPAQUE_WORDS.test(rest)) return null;
  const decls = (program.body as Node[]).filter(
    (s) => s.type === 'FunctionDeclaration' && (s.id as Node).name === 'transform',
  );
  if (decls.length !== 1) return null;
  const fn = decls[0]!;
  const params = fn.params as Node[];
  const root: ReadTree = { whole: false, keys: new Map() };
  let param = params[0];
  if (param?.type === 'AssignmentPattern') param = param.left as Node;
  let name: string | null = null;
  if (param === undefined) name = null;
  else if (param.type === 'Identifier') name = param.name as string;
  else if (param.type !== 'ObjectPattern') return null;
  try {
    if (param?.type === 'ObjectPattern') readPattern(root, [], param);
    const bindings = new Map<string, number>();
    walk(program, [], (node, parents) => {
      if (node.type === 'WithStatement') throw WHOLE;
      if (node.type === 'Identifier') {
        const parent = parents[parents.length - 1]!;
        if (!isReference(node, parent)) return;
        if (isBinding(node, parents)) {
          bindings.set(node.name as string, (bindings.get(node.name as string) ?? 0) + 1);
          return;
        }
        if ((node.name === 'transform' || readers.has(node.name as string)) && isWritten(node, parent)) throw WHOLE;
        if (node.name === name) readAt(root, node, parents, readers);
      }
    });
    // The function's own name and its record parameter are each bound once; `undefined` never.
    if (bindings.get('transform') !== 1 || (name !== null && bindings.get(name) !== 1) || bindings.has('undefined'))
      return null;
    for (const reader of readers) if (bindings.get(reader) !== 1) return null;
  } catch (err) {
    if (err === WHOLE) return null;
    throw err;
  }
  return root.whole ? null : root;
}

/** Depth-first over every node, with its ancestors (nearest last). */
function walk(node: Node, parents: Node[], visit: (node: Node, parents: Node[]) => void): void {
  visit(node, parents);
  parents.push(node);
  for (const key in node) {
    if (key === 'type' || key === 'start' || key === 'end') continue;
    const v = node[key];
    if (Array.isArray(v)) {
      for (const c of v) if (isNode(c)) walk(c, parents, visit);
    } else if (isNode(v)) walk(v, parents, visit);
  }
  parents.pop();
}

/** False for identifiers that name no variable: property keys, member names, labels. */
function isReference(id: Node, parent: Node): boolean {
  switch (parent.type) {
    case 'MemberExpression':
      return parent.property !== id || parent.computed === true;
    case 'Property':
    case 'MethodDefinition':
    case 'PropertyDefinition':
      return parent.key !== id || parent.computed === true;
    case 'LabeledStatement':
    case 'BreakStatement':
    case 'ContinueStatement':
    case 'MetaProperty':
      return false;
    default:
      return true;
  }
}

/** True when `id` declares a name: a function's name or parameter, a variable, a class, a catch parameter. */
function isBinding(id: Node, parents: Node[]): boolean {
  // Climb out of patterns: { a: x }, [x], x = default, ...x.
  let child: Node = id;
  for (let k = parents.length - 1; k >= 0; k--) {
    const p = parents[k]!;
    switch (p.type) {
      case 'ObjectPattern':
      case 'ArrayPattern':
      case 'RestElement':
        child = p;
        continue;
      case 'Property':
        if (parents[k - 1]?.type !== 'ObjectPattern' || p.value !== child) return false;
        child = p;
        continue;
      case 'AssignmentPattern':
        if (p.left !== child) return false;
        child = p;
        continue;
      case 'VariableDeclarator':
        return p.id === child;
      case 'FunctionDeclaration':
      case 'FunctionExpression':
      case 'ArrowFunctionExpression':
        return p.id === child || (p.params as Node[]).includes(child);
      case 'ClassDeclaration':
      case 'ClassExpression':
        return p.id === child;
      case 'CatchClause':
        return p.param === child;
      default:
        return false;
    }
  }
  return false;
}

/** True when `id` is assigned to (`x = …`, `x++`, a pattern target). */
function isWritten(id: Node, parent: Node): boolean {
  return (
    (parent.type === 'AssignmentExpression' && parent.left === id) ||
    parent.type === 'UpdateExpression' ||
    parent.type.endsWith('Pattern') ||
    parent.type === 'Property'
  );
}

/** The key of a member read when it is static (`a.b`, `a['b']`, `a[0]`), else null. */
function staticKey(member: Node): string | null {
  const p = member.property as Node;
  if (member.computed !== true) return p.type === 'Identifier' ? (p.name as string) : null;
  if (p.type === 'Literal' && (typeof p.value === 'string' || typeof p.value === 'number')) return String(p.value);
  return null;
}

type Need = 'whole' | 'tested';

/** Marks `path` of the tree as needed (`whole`), or only there (`tested`). */
function need(root: ReadTree, path: readonly string[], kind: Need): void {
  let node = root;
  for (const key of path) {
    if (node.whole) return;
    let next = node.keys.get(key);
    if (next === undefined) node.keys.set(key, (next = { whole: false, keys: new Map() }));
    node = next;
  }
  if (kind === 'whole') {
    node.whole = true;
    node.keys.clear();
  }
  if (root.whole) throw WHOLE;
}

const isNullish = (n: Node): boolean =>
  (n.type === 'Literal' && n.value === null && n.regex === undefined) ||
  (n.type === 'Identifier' && n.name === 'undefined') ||
  (n.type === 'UnaryExpression' && n.operator === 'void' && (n.argument as Node).type === 'Literal');

/** What the use of the record parameter at `id` reads. */
function readAt(root: ReadTree, id: Node, parents: Node[], readers: ReadonlySet<string>): void {
  const path: string[] = [];
  let node: Node = id;
  let k = parents.length - 1;
  // The static member chain rooted at the parameter (optional chains included).
  for (; k >= 0; k--) {
    const p = parents[k]!;
    if (p.type === 'ChainExpression') {
      node = p;
      continue;
    }
    if (p.type !== 'MemberExpression' || p.object !== node) break;
    const key = staticKey(p);
    if (key === null) return need(root, path, 'whole');
    path.push(key);
    node = p;
  }
  const parent = parents[k];
  if (parent === undefined) return need(root, path, 'whole');
  switch (parent.type) {
    case 'CallExpression':
    case 'TaggedTemplateExpression':
      // Called as a method: the object it is read from is `this`.
      if (parent.callee === node || parent.tag === node) return need(root, path.slice(0, -1), 'whole');
      if (isPathRead(parent, node, readers))
        return need(
          root,
          [...path, ...((parent.arguments as Node[])[1]!.elements as Node[]).map((e) => e.value as string)],
          'whole',
        );
      return need(root, path, 'whole');
    case 'UnaryExpression':
      if (parent.operator === 'typeof' || parent.operator === '!' || parent.operator === 'void')
        return need(root, path, 'tested');
      if (parent.operator === 'delete') return need(root, path.slice(0, -1), 'tested');
      return need(root, path, 'whole');
    case 'BinaryExpression':
      if (
        ['==', '!=', '===', '!=='].includes(parent.operator as string) &&
        isNullish((parent.left === node ? parent.right : parent.left) as Node)
      )
        return need(root, path, 'tested');
      return need(root, path, 'whole');
    case 'LogicalExpression':
      // `a && b` is `b` when `a` is truthy and `a` only when it is falsy (a primitive, given as sent).
      if (parent.operator === '&&' && parent.left === node) return need(root, path, 'tested');
      return need(root, path, 'whole');
    case 'IfStatement':
    case 'ConditionalExpression':
    case 'WhileStatement':
    case 'DoWhileStatement':
    case 'ForStatement':
      if (parent.test === node) return need(root, path, 'tested');
      return need(root, path, 'whole');
    case 'AssignmentExpression':
      if (parent.left === node) {
        if (parent.operator !== '=') return need(root, path, 'whole');
        // `r = x` rebinds the parameter (later reads are followed all the same); `r.a.b = x` needs `r.a`.
        return path.length === 0 ? undefined : need(root, path.slice(0, -1), 'tested');
      }
      if ((parent.left as Node).type === 'ObjectPattern') return readPattern(root, path, parent.left as Node);
      return need(root, path, 'whole');
    case 'VariableDeclarator':
      if (parent.init === node && (parent.id as Node).type === 'ObjectPattern')
        return readPattern(root, path, parent.id as Node);
      return need(root, path, 'whole');
    case 'ExpressionStatement':
      // Evaluated and dropped: a getter could run, but only one the script installed (see OPAQUE_WORDS).
      return need(root, path, 'tested');
    default:
      return need(root, path, 'whole');
  }
}

/** `get(node, ["a", "b"])`: the generated scripts' helper called with its keys written out. */
function isPathRead(call: Node, node: Node, readers: ReadonlySet<string>): boolean {
  const callee = call.callee as Node;
  const args = call.arguments as Node[];
  if (callee.type !== 'Identifier' || !readers.has(callee.name as string) || args.length !== 2 || args[0] !== node)
    return false;
  const keys = args[1]!;
  return (
    keys.type === 'ArrayExpression' &&
    (keys.elements as Array<Node | null>).every(
      (e) => e !== null && e.type === 'Literal' && typeof e.value === 'string',
    )
  );
}

/** An object pattern destructuring the value at `path`. */
function readPattern(root: ReadTree, path: readonly string[], pattern: Node): void {
  for (const prop of pattern.properties as Node[]) {
    if (prop.type !== 'Property') return need(root, path, 'whole'); // ...rest enumerates the object
    const key =
      prop.computed === true
        ? (prop.key as Node).type === 'Literal'
          ? String((prop.key as Node).value)
          : null
        : (prop.key as Node).type === 'Identifier'
          ? ((prop.key as Node).name as string)
          : String((prop.key as Node).value);
    if (key === null) return need(root, path, 'whole');
    let target = prop.value as Node;
    if (target.type === 'AssignmentPattern') target = target.left as Node;
    if (target.type === 'ObjectPattern') readPattern(root, [...path, key], target);
    else need(root, [...path, key], 'whole');
  }
  // `{}` as a pattern still requires an object there.
  if ((pattern.properties as Node[]).length === 0) need(root, path, 'tested');
}
