import { RESERVED_OUTPUT_NAMES } from './output-schema.js';
import type { Segment } from '../schema/shape.js';
import type { VersionField } from '../schema/versions.js';
import type { OutputField, OutputFieldType } from './mapping-types.js';
import { sourceFieldOf, type SourceField } from './path-match.js';
import { segmentsKey } from './source-path.js';

/**
 * An output schema proposed from settled schema versions, for a view created without one.
 * See docs/views-auto-mapping.md ("No output schema").
 */

/** Most fields a proposed schema holds. */
export const MAX_PROPOSED_FIELDS = 64;
/** Longest output field name (spec: Limits, output field name). */
export const MAX_OUTPUT_NAME = 128;

/** Query keys an output field may not be named: the view API's list (output-schema.ts); a proposed name that would take one gets `_value` appended. */
export const RESERVED_QUERY_KEYS: readonly string[] = [...RESERVED_OUTPUT_NAMES];

/** A proposed field and the path it was made from. */
export interface ProposedField {
  field: OutputField;
  segments: Segment[];
}

const SCALARS = new Set(['string', 'number', 'boolean']);

/**
 * Proposed fields with their source paths: every scalar path (a `number` path gives `number`, a
 * `boolean` one `boolean`, a string or mixed scalar one `string`), every array of scalars (or of
 * nothing seen yet) and every scalar under array elements (`items[].sku`, one value per element)
 * as `array`. Objects, arrays of objects and null-only paths give none (their scalar children do),
 * nor do paths whose type differs in kind between versions. Paths held by more versions come
 * first, ties in order of first sight; at most MAX_PROPOSED_FIELDS.
 */
export function proposeFields(versions: ReadonlyArray<{ fields: readonly VersionField[] }>): ProposedField[] {
  const byKey = new Map<string, { segments: Segment[]; count: number; order: number; types: Set<OutputFieldType> }>();
  let order = 0;
  for (const v of versions) {
    const typesByKey = new Map<string, string[]>();
    const sources: SourceField[] = [];
    for (const f of v.fields) {
      const s = sourceFieldOf(f);
      if (s === null) continue;
      typesByKey.set(s.key, s.types);
      sources.push(s);
    }
    for (const s of sources) {
      const type = proposedType(s, typesByKey);
      if (type === null) continue;
      const seen = byKey.get(s.key);
      if (seen) {
        seen.count++;
        seen.types.add(type);
      } else byKey.set(s.key, { segments: s.segments, count: 1, order: order++, types: new Set([type]) });
    }
  }
  const ranked = [...byKey.values()]
    .map((p) => ({ ...p, type: mergedType(p.types) }))
    .filter((p): p is typeof p & { type: OutputFieldType } => p.type !== null)
    .sort((a, b) => b.count - a.count || a.order - b.order);
  const out: ProposedField[] = [];
  const taken = new Set<string>();
  for (const p of ranked) {
    if (out.length === MAX_PROPOSED_FIELDS) break;
    const base = nameFromPath(p.segments);
    if (base === null) continue;
    const name = uniqueName(base, taken);
    taken.add(name);
    out.push({ field: { name, type: p.type }, segments: p.segments });
  }
  return out;
}

/** The output schema `proposeFields` makes (names and types only). */
export function proposeOutputSchema(versions: ReadonlyArray<{ fields: readonly VersionField[] }>): OutputField[] {
  return proposeFields(versions).map((p) => p.field);
}

function proposedType(s: SourceField, typesByKey: Map<string, string[]>): OutputFieldType | null {
  // Elements are proposed through their array (or their children), never on their own.
  if (s.segments[s.segments.length - 1] === null) return null;
  if (s.types.length === 0) return null;
  if (s.mapped) return s.types.every((t) => SCALARS.has(t)) ? 'array' : null;
  if (s.types.length === 1 && s.types[0] === 'array') {
    const elements = typesByKey.get(segmentsKey([...s.segments, null])) ?? [];
    return elements.every((t) => SCALARS.has(t)) ? 'array' : null;
  }
  if (!s.types.every((t) => SCALARS.has(t))) return null;
  return s.types.length === 1 ? (s.types[0] as OutputFieldType) : 'string';
}

function mergedType(types: Set<OutputFieldType>): OutputFieldType | null {
  if (types.size === 1) return [...types][0]!;
  return [...types].every((t) => SCALARS.has(t)) ? 'string' : null;
}

/**
 * `user.name` → `user_name`: keys joined by `_`, runs of characters other than letters, digits
 * and `_` made one `_`, trailing `_` dropped. Null for internal names (`__v`, `_sluice_…`).
 */
export function nameFromPath(segments: readonly Segment[]): string | null {
  const name = segments
    .filter((s): s is string => s !== null)
    .map((k) => k.replace(/[^\p{L}\p{N}_]+/gu, '_'))
    .join('_')
    .replace(/_+$/, '');
  if (name.startsWith('__') || name.startsWith('_sluice_')) return null;
  return name === '' ? 'field' : name;
}

function uniqueName(base: string, taken: Set<string>): string {
  let name = RESERVED_QUERY_KEYS.includes(base.toLowerCase()) ? base + '_value' : base;
  name = fit(name, '');
  for (let n = 2; taken.has(name); n++) name = fit(base, '_' + n);
  return name;
}

/** `base + suffix` cut to MAX_OUTPUT_NAME (by code points, so no surrogate is split). */
function fit(base: string, suffix: string): string {
  const chars = [...base];
  const room = MAX_OUTPUT_NAME - suffix.length;
  return (chars.length > room ? chars.slice(0, room).join('') : base) + suffix;
}
