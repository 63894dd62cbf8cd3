import { BoolColumn, Float64Column, StringColumn } from '../schema/columns.js';
import type { FieldColumn } from './file-plan.js';

/**
 * Typed field columns of one file, filled from parsed records by a field extractor compiled once
 * per column set: straight-line code reading each path by constant keys (records of one version
 * share their hidden class, so every read is a monomorphic inline-cached load), sharing the lookup
 * of a parent object between its leaves, and pushing into typed-array builders. No row objects, no
 * per-value dynamic path walk. Absent keys, `null` and values of another type become nulls.
 */

export type FieldBuilder = Float64Column | BoolColumn | StringColumn;

export interface FieldExtractor {
  /** One builder per column, in the order of the columns. */
  builders: FieldBuilder[];
  /** Append one row: the record's value (or null) to every column. */
  extract(record: unknown): void;
}

type Factory = (jsonText: (v: unknown) => string | null, ...builders: FieldBuilder[]) => (record: unknown) => void;

/**
 * A value's JSON text for a `json` column, or null when it cannot be written: JSON.stringify
 * recurses, so a value nested thousands of levels deep (which JSON.parse accepts) would throw a
 * RangeError and fail the whole batch. The document column still holds it as sent.
 */
export function jsonText(v: unknown): string | null {
  try {
    return JSON.stringify(v) ?? null;
  } catch {
    return null;
  }
}

interface PathTrie {
  children: Map<string, PathTrie>;
  /** Columns reading this exact path. */
  columns: number[];
}

/** Compiled factories by column set; a worker meets few distinct sets (one per live version). */
const factories = new Map<string, Factory>();
const MAX_FACTORIES = 1024;

/** The extractor for `columns`, with builders sized for `rows` rows. */
export function createFieldExtractor(columns: readonly FieldColumn[], rows: number): FieldExtractor {
  const builders = columns.map(
    (c): FieldBuilder =>
      c.type === 'number'
        ? new Float64Column(rows)
        : c.type === 'boolean'
          ? new BoolColumn(rows)
          : new StringColumn(rows),
  );
  if (columns.length === 0) return { builders, extract: () => undefined };
  const key = JSON.stringify(columns.map((c) => [c.type, c.segments]));
  let factory = factories.get(key);
  if (!factory) {
    if (factories.size >= MAX_FACTORIES) factories.clear();
    factory = compile(columns);
    factories.set(key, factory);
  }
  return { builders, extract: factory(jsonText, ...builders) };
}

function compile(columns: readonly FieldColumn[]): Factory {
  const root: PathTrie = { children: new Map(), columns: [] };
  columns.forEach((c, i) => {
    let node = root;
    for (const seg of c.segments) {
      let next = node.children.get(seg);
      if (!next) node.children.set(seg, (next = { children: new Map(), columns: [] }));
      node = next;
    }
    node.columns.push(i);
  });
  let vars = 0;
  const lines: string[] = [];
  const push = (i: number, v: string, indent: string) => {
    const c = `c${i}`;
    switch (columns[i]!.type) {
      case 'number':
        lines.push(`${indent}if (typeof ${v} === 'number') ${c}.push(${v}); else ${c}.pushNull();`);
        break;
      case 'string':
        lines.push(`${indent}if (typeof ${v} === 'string') ${c}.push(${v}); else ${c}.pushNull();`);
        break;
      case 'boolean':
        lines.push(`${indent}if (typeof ${v} === 'boolean') ${c}.push(${v}); else ${c}.pushNull();`);
        break;
      default:
        lines.push(
          `${indent}if (${v} === undefined || ${v} === null) ${c}.pushNull(); else { const t = jsonText(${v}); if (t === null) ${c}.pushNull(); else ${c}.push(t); }`,
        );
    }
  };
  const nullsUnder = (node: PathTrie, indent: string) => {
    for (const i of node.columns) lines.push(`${indent}c${i}.pushNull();`);
    for (const child of node.children.values()) nullsUnder(child, indent);
  };
  const isObject = (v: string) => `${v} !== null && typeof ${v} === 'object' && !Array.isArray(${v})`;
  // `obj` is known to be a plain object here.
  const emit = (node: PathTrie, obj: string, indent: string) => {
    for (const [seg, child] of node.children) {
      const v = `v${vars++}`;
      // JSON.stringify of a key is a valid JS string literal: user keys never become code. Keys
      // Object.prototype has (`constructor`, `__proto__`) are read as own properties only.
      const k = JSON.stringify(seg);
      lines.push(
        seg in Object.prototype
          ? `${indent}const ${v} = Object.hasOwn(${obj}, ${k}) ? ${obj}[${k}] : undefined;`
          : `${indent}const ${v} = ${obj}[${k}];`,
      );
      for (const i of child.columns) push(i, v, indent);
      if (child.children.size === 0) continue;
      lines.push(`${indent}if (${isObject(v)}) {`);
      emit(child, v, indent + '  ');
      lines.push(`${indent}} else {`);
      nullsUnder({ children: child.children, columns: [] }, indent + '  ');
      lines.push(`${indent}}`);
    }
  };
  lines.push(`return function extract(r) {`);
  lines.push(`  if (!(${isObject('r')})) {`);
  nullsUnder(root, '    ');
  lines.push(`    return;`);
  lines.push(`  }`);
  emit(root, 'r', '  ');
  lines.push(`};`);
  const params = columns.map((_, i) => `c${i}`);
  return new Function('jsonText', ...params, lines.join('\n')) as Factory;
}
