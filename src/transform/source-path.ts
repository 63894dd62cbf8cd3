import { MAX_KEY_CHARS } from '../schema/fingerprint.js';
import type { Segment } from '../schema/shape.js';

/**
 * Source paths as users write them and as versions store them. Both become segment lists (an
 * object key, or null for "each element of this array"), the form `shape.ts` builds paths from.
 *
 * Canonical user-facing text ("bracket path"): `$`, then `.key` for identifier keys, `["key"]`
 * (a JSON string) for any other key, `[*]` for array elements: `$.user.id`,
 * `$.entities.hashtags[*].text`, `$["a.b"]`. Accepted on input as well: no leading `$`
 * (`user.id`), `[]` for `[*]`, single-quoted keys (`$['a.b']`), and dotted keys that are not
 * identifiers (`$.user-name`). A version field's rendered path (`user.id`, `items[].sku`,
 * `["a.b"]`) reads the same way, except that a leading `$` there is a key (it is an identifier).
 */

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A parsed path with its canonical text and a key for maps. */
export interface SourcePath {
  segments: Segment[];
  /** Canonical bracket text, e.g. `$.items[*].sku`. */
  text: string;
  /** Equal for equal segment lists. */
  key: string;
}

/** The canonical bracket text of `segments`. */
export function bracketPath(segments: readonly Segment[]): string {
  let out = '$';
  for (const seg of segments) {
    if (seg === null) out += '[*]';
    else if (IDENT.test(seg)) out += '.' + seg;
    else out += '[' + JSON.stringify(seg) + ']';
  }
  return out;
}

/** A map key for a segment list. */
export function segmentsKey(segments: readonly Segment[]): string {
  return JSON.stringify(segments);
}

function sourcePath(segments: Segment[]): SourcePath {
  return { segments, text: bracketPath(segments), key: segmentsKey(segments) };
}

/**
 * Parse a user-written path (`$` root optional). Null when the text is not a path: empty, the root
 * alone, an index like `[0]` (a version types all elements alike, so only `[*]` exists), an
 * unterminated bracket or quote.
 */
export function parseSourcePath(text: string): SourcePath | null {
  const t = text.trim();
  const rooted = t.startsWith('$') && (t.length === 1 || t[1] === '.' || t[1] === '[');
  const segments = parseSegments(t, rooted ? 1 : 0, rooted);
  return segments === null ? null : sourcePath(segments);
}

/** Parse a version field's rendered path (`renderPath` output: no `$` root). */
export function parseVersionPath(text: string): SourcePath | null {
  const segments = parseSegments(text, 0, false);
  return segments === null ? null : sourcePath(segments);
}

/** Whether a key was cut to MAX_KEY_CHARS + `…` by the fingerprint: the record's real key is unknown. */
export function isTruncatedKey(seg: Segment): boolean {
  return seg !== null && seg.length > MAX_KEY_CHARS;
}

function parseSegments(t: string, start: number, rooted: boolean): Segment[] | null {
  const segs: Segment[] = [];
  let i = start;
  // Without a root the path may open with a bare key; after `$` it opens with `.` or `[`.
  if (!rooted && t[i] !== '[') {
    const end = keyEnd(t, i);
    if (end === i) return null;
    segs.push(t.slice(i, end));
    i = end;
  }
  while (i < t.length) {
    const c = t[i];
    if (c === '.') {
      const end = keyEnd(t, i + 1);
      if (end === i + 1) return null;
      segs.push(t.slice(i + 1, end));
      i = end;
    } else if (c === '[') {
      const next = t[i + 1];
      if (next === ']') {
        segs.push(null);
        i += 2;
      } else if (next === '*' && t[i + 2] === ']') {
        segs.push(null);
        i += 3;
      } else if (next === '"' || next === "'") {
        const read = readQuoted(t, i + 1);
        if (read === null || t[read.end] !== ']') return null;
        segs.push(read.value);
        i = read.end + 1;
      } else return null;
    } else return null;
  }
  return segs.length === 0 ? null : segs;
}

/** The end of a dotted key starting at `i`: it runs to the next `.`, `[`, `]` or the end. */
function keyEnd(t: string, i: number): number {
  let j = i;
  while (j < t.length && t[j] !== '.' && t[j] !== '[' && t[j] !== ']') j++;
  return j;
}

/** A quoted key starting at `at` (the quote): its value and the index after the closing quote. */
function readQuoted(t: string, at: number): { value: string; end: number } | null {
  const q = t[at];
  let j = at + 1;
  while (j < t.length && t[j] !== q) j += t[j] === '\\' ? 2 : 1;
  if (j >= t.length) return null;
  const body = t.slice(at + 1, j);
  // A double-quoted key is a JSON string; a single-quoted one is rewritten into one (`\'` is a
  // quote, a bare `"` gets escaped, other escapes are JSON's).
  let json = '"';
  if (q === '"') json += body;
  else
    for (let k = 0; k < body.length; k++) {
      const ch = body[k];
      if (ch === '\\') {
        const n = body[k + 1] ?? '';
        json += n === "'" ? "'" : '\\' + n;
        k++;
      } else json += ch === '"' ? '\\"' : ch;
    }
  json += '"';
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'string' ? { value, end: j + 1 } : null;
  } catch {
    return null;
  }
}
