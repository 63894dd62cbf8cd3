import type { Segment } from '../schema/shape.js';
import type { VersionField } from '../schema/versions.js';
import type { OutputFieldType } from './mapping-types.js';
import { isTruncatedKey, parseSourcePath, parseVersionPath, type SourcePath } from './source-path.js';

/**
 * Matching output field names to source paths, and which path types can feed which output types.
 * Name strengths, strongest first: `exact` (the name is the path), `normalized` (key by key equal
 * ignoring case and separators), `leaf` (the last key, or all keys joined, equal ignoring case and
 * separators). See docs/views-auto-mapping.md.
 */

export type MatchStrength = 'exact' | 'normalized' | 'leaf';
export const STRENGTHS: readonly MatchStrength[] = ['exact', 'normalized', 'leaf'];

const SCALARS = new Set(['string', 'number', 'boolean']);

/** One field of the version as the generator sees it. */
export interface SourceField extends SourcePath {
  /** The type as the version states it (`number|null`). */
  type: string;
  /** Type names other than `null`. */
  types: string[];
  /** The path holds an element marker: the script reads one value per element, an array. */
  mapped: boolean;
  /** Present in the version: false for a nullable input the version lacks. */
  present: boolean;
  /** The keys normalized (`normalizeName`), for name matching. */
  normKeys: string[];
  /** The normalized keys joined. */
  normJoined: string;
}

/** A version field as a source, or null when a script cannot read it by name (a truncated key). */
export function sourceFieldOf(f: VersionField): SourceField | null {
  const p = parseVersionPath(f.path);
  if (p === null || p.segments.some(isTruncatedKey)) return null;
  const types = f.type.split('|').filter((t) => t !== 'null');
  return { ...p, type: f.type, types, mapped: p.segments.includes(null), present: true, ...normalized(p.segments) };
}

/** A nullable input this version lacks: read anyway (null now), of no known type. */
export function absentFieldOf(p: SourcePath): SourceField {
  return {
    ...p,
    type: 'absent',
    types: [],
    mapped: p.segments.includes(null),
    present: false,
    ...normalized(p.segments),
  };
}

function normalized(segments: readonly Segment[]): { normKeys: string[]; normJoined: string } {
  const normKeys = keysOf(segments).map(normalizeName);
  return { normKeys, normJoined: normKeys.join('') };
}

/**
 * Whether a field of this type can feed an output of type `out` (`null` outputs take no source).
 * A path read only as null, or absent, fits anything: it yields null. Numbers from strings are
 * never assumed (whether the strings are numeric is not known).
 */
export function typeFits(out: OutputFieldType, f: SourceField): boolean {
  if (f.mapped) return out === 'array';
  if (f.types.length === 0) return true;
  switch (out) {
    case 'string':
      return f.types.every((t) => SCALARS.has(t));
    case 'number':
    case 'boolean':
      return f.types.every((t) => t === out);
    case 'date':
      return f.types.every((t) => t === 'string' || t === 'number');
    case 'array':
      return f.types.every((t) => t === 'array');
    case 'null':
      return true;
  }
}

/** Lower case, letters and digits only: `user_name`, `userName`, `User-Name` all read `username`. */
export function normalizeName(s: string): string {
  const lower = s.toLowerCase();
  // Most keys are ASCII: the plain class is several times cheaper than the Unicode one.
  return /^[\x00-\x7f]*$/.test(lower) ? lower.replace(/[^a-z0-9]/g, '') : lower.replace(/[^\p{L}\p{N}]/gu, '');
}

function keysOf(segments: readonly Segment[]): string[] {
  return segments.filter((s): s is string => s !== null);
}

/** A name prepared for matching against many paths. */
export interface NameMatcher {
  name: string;
  /** The name read as a path (`user.id` → user, id); a name that does not parse is one key. */
  segments: Segment[];
  key: string;
  normKeys: string[];
  norm: string;
}

export function nameMatcher(name: string): NameMatcher {
  const p = parseSourcePath(name);
  const segments = p?.segments ?? [name];
  return {
    name,
    segments,
    key: JSON.stringify(segments),
    normKeys: keysOf(segments).map(normalizeName),
    norm: normalizeName(name),
  };
}

/** The strength at which `m` names `f`, or null. */
export function matchStrength(m: NameMatcher, f: SourceField): MatchStrength | null {
  if (f.key === m.key || (f.segments.length === 1 && f.segments[0] === m.name)) return 'exact';
  if (m.norm === '') return null;
  const normKeys = f.normKeys;
  if (normKeys.length === m.normKeys.length && normKeys.every((k, i) => k !== '' && k === m.normKeys[i]))
    return 'normalized';
  if (normKeys[normKeys.length - 1] === m.norm || f.normJoined === m.norm) return 'leaf';
  return null;
}

/** Words of a name or path (`userName`, `user_name`, `user.name` → user, name), for ranking suggestions. */
export function wordsOf(s: string): string[] {
  return s
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== '');
}

/** How many words of `name` the path shares (suggestions ranking only). */
export function sharedWords(name: string, f: SourceField): number {
  const words = new Set(wordsOf(name));
  let n = 0;
  for (const w of new Set(keysOf(f.segments).flatMap(wordsOf))) if (words.has(w)) n++;
  return n;
}
